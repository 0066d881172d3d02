/**
 * Seams for driving the wrapper run without processes or wall-clock time: a child that prints
 * pi events and exits on demand (the fake time is FakeClock, fake-clock.ts).
 */
import { EventEmitter } from "node:events";
import { PassThrough } from "node:stream";
import type { ChildHandle, ChildOperations, SpawnOptions } from "../../src/wrapper/child.js";
import type { OrphanGuard } from "../../src/wrapper/orphan-guard.js";
import type { Scheduler } from "../../src/wrapper/scheduler.js";
import { settle } from "./fake-clock.js";

/**
 * Polls on real I/O turns (the run's clock is fake, so no fake time passes) until `check`
 * holds. Bounded by real time, not by a count of turns: on a loaded machine the real file
 * writes the run waits for can take many thousands of turns.
 */
export async function until(check: () => boolean, what = "condition", realMs = 20_000): Promise<void> {
  const deadline = Date.now() + realMs;
  while (Date.now() < deadline) {
    if (check()) return;
    await settle(1);
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

/** How a process left behind by the child takes SIGTERM. */
export type LeftBehind = "ends on SIGTERM" | "ignores SIGTERM";

/**
 * A pi child. By default SIGTERM ends it with code 143 (as pi's handler does) and SIGKILL with
 * the signal; `ignoreSigterm` makes only SIGKILL work. `straggler` leaves a process in its
 * group after it exits; `escapee` one outside the group that carries the run's token (a
 * `setsid` sleep), pid ESCAPEE_PID: one that SIGTERM ends, or with `"ignores SIGTERM"` only SIGKILL.
 */
export { FakeClock as FakeScheduler, settle } from "./fake-clock.js";

export class FakeChild extends EventEmitter implements ChildHandle {
  readonly pid = 424242;
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  readonly signals: ReceivedSignal[] = [];
  exited = false;

  constructor(
    readonly clock: Scheduler,
    private readonly behaviour: { ignoreSigterm?: boolean; straggler?: LeftBehind; escapee?: LeftBehind } = {},
  ) {
    super();
    this.stragglerAlive = behaviour.straggler !== undefined;
    this.escapeeAlive = behaviour.escapee !== undefined;
  }

  /** The escapee is still there. */
  escapeeAlive: boolean;
  /** The signals the escapee got, at the fake time each arrived. */
  readonly escapeeSignals: Array<{ signal: NodeJS.Signals; at: number }> = [];

  receiveAsEscapee(signal: NodeJS.Signals): void {
    this.escapeeSignals.push({ signal, at: this.clock.now() });
    if (signal === "SIGKILL" || (signal === "SIGTERM" && this.behaviour.escapee === "ends on SIGTERM"))
      this.escapeeAlive = false;
  }

  /** A process of its group is still there (before the child exits, the child itself counts). */
  stragglerAlive: boolean;

  get groupAlive(): boolean {
    return !this.exited || this.stragglerAlive;
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
    if (signal === "SIGKILL" || (signal === "SIGTERM" && this.behaviour.straggler === "ends on SIGTERM"))
      this.stragglerAlive = false;
    if (this.exited) return;
    if (signal === "SIGKILL") this.exit(null, "SIGKILL");
    else if (signal === "SIGTERM" && !this.behaviour.ignoreSigterm) this.exit(143);
  }

  /** The signals sent while it was running. */
  signalsWhileRunning(): Array<{ signal: NodeJS.Signals; at: number }> {
    return this.signals.filter((s) => !s.afterExit).map(({ signal, at }) => ({ signal, at }));
  }
}

/** The escapee's pid (see FakeChild). */
export const ESCAPEE_PID = 434343;

/** What the run told its orphan guard, in order, with the fake time of each word. */
export class FakeGuard implements OrphanGuard {
  readonly said: Array<{ word: "watch" | "groupGone" | "release" | "close"; at: number; pgid?: number }> = [];
  started?: { runToken: string; reservePath: string; at: number };

  constructor(private readonly clock: Scheduler) {}

  watch(pgid: number): void {
    this.said.push({ word: "watch", at: this.clock.now(), pgid });
  }

  groupGone(): void {
    this.said.push({ word: "groupGone", at: this.clock.now() });
  }

  async release(): Promise<void> {
    this.said.push({ word: "release", at: this.clock.now() });
  }

  close(): void {
    this.said.push({ word: "close", at: this.clock.now() });
  }

  words(): string[] {
    return this.said.map((s) => (s.pgid === undefined ? s.word : `${s.word} ${s.pgid}`));
  }
}

/** ChildOperations around one FakeChild; `alive` answers the parent watch. */
export function fakeChildOperations(
  child: FakeChild,
  options: { alive?: (pid: number) => boolean } = {},
): ChildOperations & {
  spawned: Array<{ bin: string; args: string[]; options: SpawnOptions }>;
  guard: FakeGuard;
  events: string[];
} {
  const spawned: Array<{ bin: string; args: string[]; options: SpawnOptions }> = [];
  const guard = new FakeGuard(child.clock);
  /** The order in which the guard started and the child was spawned. */
  const events: string[] = [];
  return {
    spawned,
    guard,
    events,
    startGuard: (runToken, reservePath) => {
      events.push("guard");
      guard.started = { runToken, reservePath, at: child.clock.now() };
      return guard;
    },
    groupAlive: (pgid) => pgid === child.pid && child.groupAlive,
    tokenProcesses: async (runToken) =>
      child.escapeeAlive && spawned[0]?.options.runToken === runToken ? [ESCAPEE_PID] : [],
    signalProcess: (pid, signal) => {
      if (pid === ESCAPEE_PID) child.receiveAsEscapee(signal);
    },
    resolvePi: () => "/fake/bin/pi",
    spawn: (bin, args, spawnOptions) => {
      events.push("spawn");
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
