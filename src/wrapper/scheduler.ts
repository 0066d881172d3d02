/**
 * The wrapper run's clock: every timer of a run (grace, kill-after, timeoutMs, the stdout
 * drain, the parent watch) goes through a Scheduler, so tests drive a run on fake time.
 */

/** A pending timer, as the scheduler that made it knows it. */
export type TimerHandle = unknown;

export interface Scheduler {
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
  /** A repeating timer that does not keep the process alive on its own. */
  setInterval(fn: () => void, ms: number): TimerHandle;
  clearInterval(handle: TimerHandle): void;
  /** Milliseconds since the epoch. */
  now(): number;
}

/** Node's own timers. Looked up at each call, so whatever timers the process has at that moment are the ones used. */
export const nodeScheduler: Scheduler = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  setInterval: (fn, ms) => setInterval(fn, ms).unref(),
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
  now: () => Date.now(),
};

/** The longest delay Node's setTimeout honours; a longer one fires at once (after 1 ms). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The one-shot timers of one run, all cancelled together when the run is over. A delay
 * longer than MAX_TIMER_MS waits in steps, so a timeoutMs of months is honoured rather than
 * fired at once.
 */
export class RunTimers {
  private readonly pending = new Set<TimerHandle>();

  constructor(private readonly scheduler: Scheduler) {}

  /** Runs `fn` after `ms`; the returned function cancels it, whichever step is pending. */
  after(ms: number, fn: () => void): () => void {
    let current: TimerHandle;
    const wait = (left: number): void => {
      const step = Math.min(left, MAX_TIMER_MS);
      const handle = this.scheduler.setTimeout(() => {
        this.pending.delete(handle);
        if (left > step) wait(left - step);
        else fn();
      }, step);
      current = handle;
      this.pending.add(handle);
    };
    wait(ms);
    return () => {
      this.scheduler.clearTimeout(current);
      this.pending.delete(current);
    };
  }

  /** Cancels every timer still pending. */
  dispose(): void {
    for (const handle of this.pending) this.scheduler.clearTimeout(handle);
    this.pending.clear();
  }
}
