/**
 * Seams for driving the wrapper run without processes or wall-clock time: a child that prints
 * pi events and exits on demand (the fake time is FakeClock, fake-clock.ts), and the harness
 * the run's tests share (fakeRunHarness): a folder per test, runs started in it, and the end
 * of any run a failed test left open.
 */
import { EventEmitter } from "node:events";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, beforeEach } from "vitest";
import type { EventRecord } from "../../src/contracts/events.js";
import type { MetaV1 } from "../../src/contracts/meta.js";
import type { Clock } from "../../src/lib/clock.js";
import type { ChildHandle, ChildOperations, SpawnOptions } from "../../src/wrapper/child.js";
import type { OrphanGuard } from "../../src/wrapper/orphan-guard.js";
import type { PiIdentity } from "../../src/wrapper/pi-version.js";
import { type RunOptions, type RunReport, runWrapper, STDOUT_DRAIN_MS } from "../../src/wrapper/run.js";
import { GROUP_POLL_MS, STRAGGLER_KILL_MS } from "../../src/wrapper/stragglers.js";
import { FakeClock, settle } from "./fake-clock.js";

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
export type LeftBehind = "ends on SIGTERM" | "ignores SIGTERM" | "ignores SIGTERM, dies 120 ms after SIGKILL";

/** How a FakeChild takes signals, and what it leaves behind. */
export interface ChildBehaviour {
  ignoreSigterm?: boolean;
  straggler?: LeftBehind;
  escapee?: LeftBehind;
}

/**
 * A pi child. By default SIGTERM ends it with code 143 (as pi's handler does) and SIGKILL with
 * the signal; `ignoreSigterm` makes only SIGKILL work. `straggler` leaves a process in its
 * group after it exits; `escapee` one outside the group that carries the run's token (a
 * `setsid` sleep), pid ESCAPEE_PID: one that SIGTERM ends, or with `"ignores SIGTERM"` only SIGKILL.
 */
export class FakeChild extends EventEmitter implements ChildHandle {
  readonly pid = 424242;
  /** pi's stdin (read only by a run in RPC mode: meta.json `dialogs`). */
  readonly stdin = new PassThrough();
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  readonly signals: ReceivedSignal[] = [];
  exited = false;

  constructor(
    readonly clock: Clock,
    private readonly behaviour: ChildBehaviour = {},
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
    if (signal === "SIGKILL" && this.behaviour.escapee === "ignores SIGTERM, dies 120 ms after SIGKILL")
      this.escapeeDiesAt = this.clock.now() + 120;
    else if (signal === "SIGKILL" || (signal === "SIGTERM" && this.behaviour.escapee === "ends on SIGTERM"))
      this.escapeeAlive = false;
  }

  /** When a SIGKILLed escapee that takes its time is gone (a loaded machine). */
  private escapeeDiesAt: number | undefined;

  /** Whether the escapee is still there now (the wrapper looks for it by its token). */
  escapeeSeen(): boolean {
    if (this.escapeeDiesAt !== undefined && this.clock.now() >= this.escapeeDiesAt) this.escapeeAlive = false;
    return this.escapeeAlive;
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

  constructor(private readonly clock: Clock) {}

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

/** ChildOperations around one FakeChild, with what the run did through them. */
export type FakeChildOperations = ChildOperations & {
  spawned: Array<{ bin: string; args: string[]; options: SpawnOptions }>;
  guard: FakeGuard;
  events: string[];
};

/** ChildOperations around one FakeChild; `alive` answers the parent watch. */
export function fakeChildOperations(
  child: FakeChild,
  options: { alive?: (pid: number) => boolean } = {},
): FakeChildOperations {
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
      child.escapeeSeen() && spawned[0]?.options.runToken === runToken ? [ESCAPEE_PID] : [],
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
    identify: (pid) => ({ pid }),
    stillRuns: (identity) => (options.alive ?? (() => true))(identity.pid),
  };
}

/** One run on fake time against a FakeChild, as a test drives it. */
export interface FakeRun {
  clock: FakeClock;
  child: FakeChild;
  ops: FakeChildOperations;
  meta: MetaV1;
  /** The fake time the run started at. */
  t0: number;
  done: Promise<RunReport>;
  finished: () => boolean;
  /** events.jsonl as it is on disk now. */
  events: () => Promise<EventRecord[]>;
  /** Prints the events and waits until the run has read them all (their records are written). */
  print: (...events: object[]) => Promise<void>;
}

export interface FakeRunOptions extends ChildBehaviour {
  /** Answers the parent watch (default: the parent is there). */
  alive?: (pid: number) => boolean;
  /** Which pi the run takes the child for (default: pi-version.ts's own answer for the fake binary). */
  pi?: PiIdentity;
  /** The run's options besides its clock and child (env defaults to none). */
  run?: RunOptions;
}

export interface FakeRunHarness {
  /** This test's folder (a fresh one for each test). */
  readonly dir: string;
  /** Starts a run; the spawn of pi is still to come. */
  begin(meta?: Partial<MetaV1>, options?: FakeRunOptions): FakeRun;
  /** Starts a run and waits until pi is running and its stdout is read. */
  start(meta?: Partial<MetaV1>, options?: FakeRunOptions): Promise<FakeRun>;
}

/**
 * For one test file: a fresh folder for each test (named `prefix…`), and runs in it whose
 * meta.json is `defaults`, the folder's paths and the test's own fields. A run a failed test
 * left open is ended after the test (the child SIGKILLed, every wait of the run's end passed),
 * so its task file and result go before the folder does.
 */
export function fakeRunHarness(prefix: string, defaults: Pick<MetaV1, "runId" | "task">): FakeRunHarness {
  let dir = "";
  const runs: FakeRun[] = [];
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  });
  afterEach(async () => {
    for (const run of runs.splice(0)) {
      if (run.finished()) continue;
      run.child.exit(null, "SIGKILL");
      await run.clock.advance(STDOUT_DRAIN_MS + STRAGGLER_KILL_MS + GROUP_POLL_MS);
      await run.done;
    }
    await rm(dir, { recursive: true, force: true });
  });

  const begin = (meta: Partial<MetaV1> = {}, options: FakeRunOptions = {}): FakeRun => {
    const clock = new FakeClock();
    const { alive, pi, run: runOptions, ...behaviour } = options;
    const child = new FakeChild(clock, behaviour);
    const ops: FakeChildOperations = fakeChildOperations(child, alive ? { alive } : {});
    if (pi) ops.identifyPi = () => pi;
    const full: MetaV1 = {
      ...defaults,
      cwd: dir,
      resultPath: path.join(dir, "result.json"),
      eventsPath: path.join(dir, "events.jsonl"),
      ...meta,
    };
    let finished = false;
    const done = runWrapper(full, { env: {}, ...runOptions, clock, child: ops }).then((report) => {
      finished = true;
      return report;
    });
    const run: FakeRun = {
      clock,
      child,
      ops,
      meta: full,
      t0: clock.now(),
      done,
      finished: () => finished,
      events: async () =>
        (await readFile(full.eventsPath, "utf8"))
          .split("\n")
          .filter(Boolean)
          .map((line) => JSON.parse(line) as EventRecord),
      print: async (...events) => {
        for (const event of events) child.print(event);
        await until(() => child.stdout.readableLength === 0, "the lines read");
        await settle();
      },
    };
    runs.push(run);
    return run;
  };

  return {
    get dir() {
      return dir;
    },
    begin,
    start: async (meta, options) => {
      const run = begin(meta, options);
      await until(
        () => run.ops.spawned.length === 1 && run.child.stdout.listenerCount("data") > 0,
        "pi started and read",
      );
      return run;
    },
  };
}
