/**
 * Fake time for any Clock user (src/lib/clock.ts): the clock moves only when the test says.
 */
import type { Clock, TimerHandle } from "../../src/lib/clock.js";

/** The longest delay Node's setTimeout honours; a longer one fires at once (after 1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;

interface FakeTimer {
  id: number;
  due: number;
  fn: () => void;
  every?: number;
}

/**
 * Fake time. Like Node, a delay over 2^31-1 ms fires after 1 ms, so a run that forgets to step
 * a long timer fires it early here too. `advance` fires what falls due, in order, and lets the
 * run's promise jobs and I/O callbacks run after each timer.
 */
export class FakeClock implements Clock {
  private time: number;
  private nextId = 1;
  private readonly timers = new Map<number, FakeTimer>();
  /** Every one-shot delay asked for, in order. */
  readonly requested: number[] = [];
  /** The delays of the one-shot timers asked for with `unref` (they would not keep Node running). */
  readonly unrefRequested: number[] = [];

  constructor(start = Date.UTC(2030, 0, 1)) {
    this.time = start;
  }

  setTimeout(fn: () => void, ms: number, options?: { unref?: boolean }): TimerHandle {
    this.requested.push(ms);
    if (options?.unref) this.unrefRequested.push(ms);
    const delay = ms > MAX_TIMER_MS || !(ms >= 1) ? 1 : ms;
    return this.add({ due: this.time + delay, fn });
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers.delete(handle as number);
  }

  setInterval(fn: () => void, ms: number): TimerHandle {
    return this.add({ due: this.time + ms, fn, every: ms });
  }

  clearInterval(handle: TimerHandle): void {
    this.timers.delete(handle as number);
  }

  now(): number {
    return this.time;
  }

  /** Time until each pending timer, soonest first. */
  pending(): number[] {
    return [...this.timers.values()].map((timer) => timer.due - this.time).sort((a, b) => a - b);
  }

  /** Moves the clock forward by `ms`, firing each timer at its own due time. */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    for (;;) {
      const next = [...this.timers.values()]
        .filter((timer) => timer.due <= end)
        .sort((a, b) => a.due - b.due || a.id - b.id)[0];
      if (!next) break;
      this.time = next.due;
      if (next.every) next.due += next.every;
      else this.timers.delete(next.id);
      next.fn();
      await settle();
    }
    this.time = end;
    await settle();
  }

  private add(timer: Omit<FakeTimer, "id">): number {
    const id = this.nextId++;
    this.timers.set(id, { id, ...timer });
    return id;
  }
}

/** Lets promise jobs and pending I/O callbacks (real file writes) run. */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
