/**
 * The runtime's turn launcher for unit tests: no process, no run directory. Each started
 * turn waits until the test finishes it by hand (or, by default, until it is stopped: then
 * it ends `interrupted`, as a wrapper does on SIGTERM).
 */
import path from "node:path";
import type { InboxMessageV1 } from "../../src/contracts/inbox.js";
import { runName, TREE_FILES } from "../../src/contracts/layout.js";
import type { ResultV1 } from "../../src/contracts/result.js";
import { emptyUsage } from "../../src/contracts/usage.js";
import type { RunningTurn, RunRead, TurnOperations, TurnSpec } from "../../src/extension/turns/wrapper/launcher.js";

/** A result.json as a wrapper writes it; override what a test is about. */
export function turnResult(overrides: Partial<ResultV1> = {}): ResultV1 {
  return {
    version: 1,
    runId: "run",
    status: "completed",
    exitCode: overrides.status && overrides.status !== "completed" ? 1 : 0,
    finalText: "",
    usage: emptyUsage(),
    turns: 1,
    toolCalls: 0,
    startedAt: "2026-01-01T00:00:00.000Z",
    endedAt: "2026-01-01T00:00:01.000Z",
    durationMs: 1000,
    childExitCode: 0,
    childSignal: null,
    forcedExit: false,
    ...overrides,
  };
}

export interface FakeTurn {
  spec: TurnSpec;
  runName: string;
  runDir: string;
  /** How many times the runtime asked the turn to stop. */
  stops: number;
  /** Ends the turn: `undefined` is a wrapper that wrote no result.json. */
  finish(result: ResultV1 | undefined): void;
}

export class FakeTurns implements TurnOperations {
  readonly started: FakeTurn[] = [];
  /** When set, the next start throws it (a run directory that cannot be written). */
  failNextStart: Error | undefined;
  /** When set, the next start waits for it first (a wrapper still starting). */
  holdNextStart: Promise<void> | undefined;
  /** What a stopped turn does: end `interrupted` at once (the default), or wait for `finish`. */
  onStop: "interrupted" | "hold" = "interrupted";
  /** What `settledResults` answers per run directory (a previous process's runs). */
  readonly previousResults = new Map<string, ResultV1>();
  /** Run directories whose result.json `settledResults` finds damaged, with the problem. */
  readonly damagedResults = new Map<string, string>();
  /** Every `settledResults` call, with the wait it was allowed. */
  readonly settledCalls: Array<{ runDirs: readonly string[]; waitMs: number }> = [];
  /** When set, the next turn's wrapper leaves a damaged result.json (the problem) instead of a result. */
  damageNextResult: string | undefined;
  /** Live messages written, per run directory, in the order written (what the run's inbox holds). */
  readonly live = new Map<string, Array<InboxMessageV1 & { seq: number }>>();
  /** The ids each run confirmed (what its events.jsonl would say): `confirm` adds to it. */
  readonly delivered = new Map<string, Set<string>>();
  /** When set, the next postLive throws it (a run directory that cannot be written). */
  failNextPost: Error | undefined;
  /** When set, the next turn's wrapper "runs" as this pid (a real process the test started). */
  nextPid: number | undefined;
  /** Run directories of a previous process whose wrapper never started (`runStarted` says false). */
  readonly neverStarted = new Set<string>();

  async start(spec: TurnSpec): Promise<RunningTurn> {
    const hold = this.holdNextStart;
    this.holdNextStart = undefined;
    await hold;
    const failure = this.failNextStart;
    if (failure) {
      this.failNextStart = undefined;
      throw failure;
    }
    const name = runName(spec.record.runs.length + 1, spec.kind);
    // As the real launcher: the record names the run before the wrapper starts.
    await spec.recordRun?.(name);
    let resolve!: (result: ResultV1 | undefined) => void;
    const finished = new Promise<ResultV1 | undefined>((r) => (resolve = r));
    let ended = false;
    const damaged = this.damageNextResult;
    this.damageNextResult = undefined;
    const pid = this.nextPid;
    this.nextPid = undefined;
    const turn: FakeTurn = {
      spec,
      runName: name,
      runDir: path.join(spec.agentDir, TREE_FILES.runs, name),
      stops: 0,
      finish: (result) => {
        if (ended) return;
        ended = true;
        resolve(result);
      },
    };
    this.started.push(turn);
    return {
      runDir: turn.runDir,
      runName: name,
      pid,
      finished,
      howExited: () => (ended ? "exit code 1" : undefined),
      ...(damaged !== undefined && { damagedResult: () => (ended ? damaged : undefined) }),
      stop: () => {
        turn.stops++;
        if (this.onStop === "interrupted")
          turn.finish(turnResult({ status: "interrupted", turns: 0, abortReason: "stopped" }));
      },
    };
  }

  async runStarted(runDir: string): Promise<boolean> {
    return !this.neverStarted.has(runDir);
  }

  async settledResults(runDirs: readonly string[], waitMs: number): Promise<Map<string, RunRead>> {
    this.settledCalls.push({ runDirs: [...runDirs], waitMs });
    const reads = new Map<string, RunRead>();
    for (const runDir of runDirs) {
      const result = this.previousResults.get(runDir);
      const damaged = this.damagedResults.get(runDir);
      reads.set(runDir, result ? { result } : damaged ? { damaged } : {});
    }
    return reads;
  }

  async postLive(runDir: string, seq: number, message: InboxMessageV1): Promise<void> {
    const failure = this.failNextPost;
    if (failure) {
      this.failNextPost = undefined;
      throw failure;
    }
    this.live.set(runDir, [...(this.live.get(runDir) ?? []), { ...message, seq }]);
  }

  async deliveredIds(runDir: string): Promise<Set<string>> {
    return new Set(this.delivered.get(runDir) ?? []);
  }

  /** The run read these live messages (its wrapper recorded message_delivered). */
  confirm(runDir: string, ...ids: string[]): void {
    this.delivered.set(runDir, new Set([...(this.delivered.get(runDir) ?? []), ...ids]));
  }

  /** The latest turn started (throws when none was). */
  get last(): FakeTurn {
    const turn = this.started.at(-1);
    if (!turn) throw new Error("no turn was started");
    return turn;
  }
}
