/**
 * Seams for driving the wrapper run without processes or wall-clock time: a scheduler whose
 * clock moves only when the test says, and a child that prints pi events and exits on demand.
 */
import { EventEmitter } from "node:events";
import { PassThrough } from "node:stream";
import type { ChildHandle, ChildOperations, SpawnOptions } from "../../src/wrapper/child.js";
import { MAX_TIMER_MS, type Scheduler, type TimerHandle } from "../../src/wrapper/scheduler.js";

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
export class FakeScheduler implements Scheduler {
  private time: number;
  private nextId = 1;
  private readonly timers = new Map<number, FakeTimer>();
  /** Every one-shot delay asked for, in order. */
  readonly requested: number[] = [];

  constructor(start = Date.UTC(2030, 0, 1)) {
    this.time = start;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    this.requested.push(ms);
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
      const next = [...this.timers.values()].filter((timer) => timer.due <= end).sort((a, b) => a.due - b.due || a.id - b.id)[0];
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

/**
 * Polls (on real I/O turns, not on fake time) until `check` holds. Real file I/O (the run's
 * artifacts) may need more than a few thousand turns on a loaded machine, so after those it
 * keeps polling in 5 ms steps for up to 10 s of wall time before it gives up.
 */
export async function until(check: () => boolean, what = "condition"): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (check()) return;
    await settle(1);
  }
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (check()) return;
    await new Promise<void>((resolve) => setTimeout(resolve, 5));
  }
  if (check()) return;
  throw new Error(`${what} never held`);
}

export interface ReceivedSignal {
  signal: NodeJS.Signals;
  at: number;
  /** Sent after the child had exited (the run clears stragglers from the group). */
  afterExit: boolean;
}

/**
 * A pi child. By default SIGTERM ends it with code 143 (as pi's handler does) and SIGKILL with
 * the signal; `ignoreSigterm` makes only SIGKILL work.
 */
export class FakeChild extends EventEmitter implements ChildHandle {
  readonly pid = 424242;
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  readonly signals: ReceivedSignal[] = [];
  exited = false;

  constructor(
    private readonly clock: Scheduler,
    private readonly behaviour: { ignoreSigterm?: boolean } = {},
  ) {
    super();
  }

  /** One line of pi's JSON stream on stdout. */
  print(event: object): void {
    this.stdout.write(`${JSON.stringify(event)}\n`);
  }

  exit(code: number | null, signal: NodeJS.Signals | null = null, options: { keepStdoutOpen?: boolean } = {}): void {
    if (this.exited) return;
    this.exited = true;
    this.emit("exit", code, signal);
    if (!options.keepStdoutOpen) this.stdout.end();
    this.stderr.end();
  }

  receive(signal: NodeJS.Signals): void {
    this.signals.push({ signal, at: this.clock.now(), afterExit: this.exited });
    if (this.exited) return;
    if (signal === "SIGKILL") this.exit(null, "SIGKILL");
    else if (signal === "SIGTERM" && !this.behaviour.ignoreSigterm) this.exit(143);
  }

  /** The signals sent while it was running. */
  signalsWhileRunning(): Array<{ signal: NodeJS.Signals; at: number }> {
    return this.signals.filter((s) => !s.afterExit).map(({ signal, at }) => ({ signal, at }));
  }
}

/** ChildOperations around one FakeChild; `alive` answers the parent watch. */
export function fakeChildOperations(
  child: FakeChild,
  options: { alive?: (pid: number) => boolean } = {},
): ChildOperations & { spawned: Array<{ bin: string; args: string[]; options: SpawnOptions }> } {
  const spawned: Array<{ bin: string; args: string[]; options: SpawnOptions }> = [];
  return {
    spawned,
    resolvePi: () => "/fake/bin/pi",
    spawn: (bin, args, spawnOptions) => {
      spawned.push({ bin, args, options: spawnOptions });
      process.nextTick(() => child.emit("spawn"));
      return child;
    },
    signalGroup: (pid, signal) => {
      if (pid === child.pid) child.receive(signal);
    },
    canSignal: options.alive ?? (() => true),
  };
}
