/**
 * The one clock of the package: every place that reads the time or waits (the wrapper's run,
 * the launcher's waits, the tree directory's retries, git's lock retries, the UI's timers)
 * takes a Clock, so a test moves time by itself instead of sleeping or patching Node's timers.
 */

/** A pending timer, as the clock that made it knows it. */
export type TimerHandle = unknown;

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** A one-shot timer. It holds the event loop unless `unref` is set. */
  setTimeout(fn: () => void, ms: number, options?: { unref?: boolean }): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
  /** A repeating timer that does not keep the process alive on its own. */
  setInterval(fn: () => void, ms: number): TimerHandle;
  clearInterval(handle: TimerHandle): void;
}

/** Node's own timers, looked up at each call (so whatever timers the process has then are used). */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms, options) => {
    const timer = setTimeout(fn, ms);
    if (options?.unref) timer.unref();
    return timer;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  setInterval: (fn, ms) => setInterval(fn, ms).unref(),
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
};

/** The time on `clock` as an ISO 8601 string (what records and messages write as their time). */
export function isoNow(clock: Clock = systemClock): string {
  return new Date(clock.now()).toISOString();
}

/** Resolves after `ms` on `clock`; the timer holds the event loop, like any awaited wait should. */
export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}

/**
 * Waits for `settled`, at most `ms` (no wait when there is nothing to wait for). The timer is
 * a held one, so the process has something to wait for meanwhile; it is cleared as soon as
 * `settled` resolves.
 */
export async function settledWithin(
  settled: Promise<unknown> | undefined,
  ms: number,
  clock: Clock = systemClock,
): Promise<void> {
  let timer: TimerHandle | undefined;
  try {
    await Promise.race([settled, new Promise<void>((resolve) => (timer = clock.setTimeout(resolve, ms)))]);
  } finally {
    clock.clearTimeout(timer);
  }
}
