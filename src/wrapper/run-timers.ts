/**
 * The one-shot timers of a wrapper run (grace, kill-after, timeoutMs, the stdout drain, the
 * straggler waits), on the package's clock (lib/clock.ts), so tests drive a run on fake time.
 */
import type { Clock, TimerHandle } from "../lib/clock.js";

/** The longest delay Node's setTimeout honours; a longer one fires at once (after 1 ms). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The one-shot timers of one run, all cancelled together when the run is over. A delay
 * longer than MAX_TIMER_MS waits in steps, so a timeoutMs of months is honoured rather than
 * fired at once.
 */
export class RunTimers {
  private readonly pending = new Set<TimerHandle>();

  constructor(private readonly clock: Clock) {}

  /** Runs `fn` after `ms`; the returned function cancels it, whichever step is pending. */
  after(ms: number, fn: () => void): () => void {
    let current: TimerHandle;
    const wait = (left: number): void => {
      const step = Math.min(left, MAX_TIMER_MS);
      const handle = this.clock.setTimeout(() => {
        this.pending.delete(handle);
        if (left > step) wait(left - step);
        else fn();
      }, step);
      current = handle;
      this.pending.add(handle);
    };
    wait(ms);
    return () => {
      this.clock.clearTimeout(current);
      this.pending.delete(current);
    };
  }

  /** Resolves after `ms` (a wait the run's end cancels with the rest). */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.after(ms, resolve));
  }

  /** Cancels every timer still pending. */
  dispose(): void {
    for (const handle of this.pending) this.clock.clearTimeout(handle);
    this.pending.clear();
  }
}
