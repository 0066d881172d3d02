import { newRunToken } from "../contracts/env.js";
import type { EventRecordBody } from "../contracts/events.js";
import { effectiveModel, type MetaV1 } from "../contracts/meta.js";
import { exitCodeForStatus } from "../contracts/result.js";
import { type Clock, systemClock } from "../lib/clock.js";
import { folderMaker } from "../lib/file-paths.js";
import { errorText } from "../lib/values.js";
import { TRACEPARENT } from "../telemetry/trace-context.js";
import { ResultReserve } from "./artifacts.js";
import {
  buildChildArgs,
  type ChildHandle,
  type ChildOperations,
  findOnPath,
  nodeChildOperations,
  type SpawnOptions,
} from "./child.js";
import { FallbackChain, fallbackSessionPath, switchedMeta } from "./fallback.js";
import { DeliveryLedger } from "./inbox.js";
import { onStopSignals, watchRunEnds } from "./interrupts.js";
import { RunLimits } from "./limits.js";
import type { OrphanGuard } from "./orphan-guard.js";
import { type Outcome, OutcomeTracker } from "./outcome.js";
import { identifyPi, oldNodeCrash } from "./pi-version.js";
import type { RpcSession } from "./rpc-session.js";
import { RunArtifacts } from "./run-artifacts.js";
import { type AttemptRun, nextModel, nextRepair } from "./run-attempts.js";
import type { RunOptions } from "./run-options.js";
import { buildResult, deliverResult, explainOutcome, type RunReport } from "./run-result.js";
import { apply, interruptBy, startPi } from "./run-supervision.js";
import {
  makeRunTemp,
  privateInboxIn,
  removeRunTemp,
  removeTaskFile,
  runTempPath,
  taskFileIn,
  writeTaskFile,
} from "./run-temp.js";
import { RunTimers } from "./run-timers.js";
import { RunWarnings } from "./run-warnings.js";
import { SpendLedger } from "./spend-ledger.js";
import { launchStandby, Standby } from "./standby.js";
import { endTokenProcesses, type StragglerWatch } from "./stragglers.js";
import { TurnTrace } from "./turn-trace.js";
import { Verifier } from "./verification.js";

export { STDOUT_DRAIN_MS } from "./child-stream.js";
export type { RunOptions } from "./run-options.js";
export type { RunReport } from "./run-result.js";
export { KILL_AFTER_MS } from "./run-supervision.js";

/**
 * One child run: starting → running → (draining after the terminal message | stopping) →
 * done. The run's timers and signals meet here; the decisions themselves are OutcomeTracker's,
 * and its pieces are named modules: each pi process's supervision and stop (run-supervision.ts),
 * the next one's model or repair (run-attempts.ts), the files it writes (run-artifacts.ts), what
 * stops it from outside (interrupts.ts), what its child leaves behind (stragglers.ts), its
 * result (run-result.ts).
 */
class WrapperRun implements AttemptRun {
  tracker = new OutcomeTracker();
  /** The models the turn may move to (fallback.ts), and what failed. */
  readonly fallbacks: FallbackChain;
  /** The next fallback model's pi, started beside the running one (standby.ts). */
  readonly standby: Standby;
  /** meta.json as pi processes are started from it (the session fallbacks share: fallback.ts). */
  private readonly runMeta: MetaV1;
  readonly clock: Clock;
  readonly processes: ChildOperations;
  readonly timers: RunTimers;
  private readonly startedAt: number;
  readonly warnings: RunWarnings;
  artifacts!: RunArtifacts;
  child: ChildHandle | undefined;
  /** The running pi's commands and dialogs, when meta.json `dialogs` runs it in RPC mode (rpc-session.ts). */
  rpc: RpcSession | undefined;
  /** Marks every process of this run (the child's environment; see orphan-guard.ts). */
  private readonly runToken: string;
  guard: OrphanGuard | undefined;
  /** The run's own folder in the temp folder (run-temp.ts), removed when the run is over. */
  private runTemp: string | undefined;
  /** The task's text for the child, in the run's folder. */
  private taskFile: string | undefined;
  private reserve: ResultReserve | undefined;
  /** The run's artifacts and its reserve share folders: each is checked and made once. */
  private readonly folders = folderMaker();
  childExit: { exitCode: number | null; signal: string | null } | undefined;
  stderrTail = "";
  /** What pi's stderr says went wrong at its start, when it says pi's Node is too old (pi-version.ts). */
  private explainCrash: ((stderrTail: string) => string | undefined) | undefined;
  forcedExit = false;
  cancelGrace: (() => void) | undefined;
  stopping = false;
  private readonly cleanups: Array<() => void> = [];
  /** Confirms live messages (meta.json `inboxPath`) from the child's stream. */
  inbox: DeliveryLedger | undefined;
  /** meta.json `limits` at work (limits.ts); undefined when it sets none. */
  limits: RunLimits | undefined;
  /** Each model request's cost into the person's spending ledger, when meta.json `env` names it. */
  readonly spend: SpendLedger | undefined;
  /** meta.json `verify` at work (verification.ts); undefined when it sets none. */
  verifier: Verifier | undefined;
  /** The turn's span in the tree's trace, when an OTLP endpoint is set (turn-trace.ts). */
  trace: TurnTrace | undefined;

  readonly meta: MetaV1;

  constructor(
    requested: MetaV1,
    private readonly options: RunOptions = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.warnings = new RunWarnings(options.warn);
    const meta = requested;
    this.meta = meta;
    this.processes = options.child ?? nodeChildOperations;
    // A spare pi's processes carry its token already: the run's guard and sweep must find them.
    this.runToken = options.spare?.runToken ?? newRunToken();
    this.timers = new RunTimers(this.clock);
    this.startedAt = this.clock.now();
    const sessionPath = fallbackSessionPath(meta);
    this.runMeta = sessionPath ? { ...meta, sessionPath } : meta;
    this.fallbacks = new FallbackChain(effectiveModel(meta), meta.fallbackModels);
    this.standby = new Standby(options.standby ?? (options.child ? undefined : launchStandby), this.clock);
    this.spend = SpendLedger.open(
      meta,
      () => this.clock.now(),
      (line) => this.warnings.add(line),
    );
  }

  async run(): Promise<RunReport> {
    const env = this.options.env ?? process.env;
    this.listenForStops(env);
    // The artifacts open while the task file is written and pi starts: start-up is the
    // wrapper's whole overhead on a short run (docs/performance.md).
    const artifactsOpen = this.openArtifacts(env);
    let startError: string | undefined;
    try {
      await this.runChild(env, artifactsOpen);
    } catch (err) {
      startError = errorText(err);
    } finally {
      this.timers.dispose();
      this.limits?.close();
      await this.standby.end();
      if (this.runTemp) await removeRunTemp(this.runTemp);
    }
    await artifactsOpen;
    try {
      // What the run left outside the child's group ends before result.json is written: the
      // parent takes the result as the end of the turn (it need not wait for this process to
      // exit), and nothing the run started may outlive that.
      await this.endStragglers();
      const report = await this.finish(startError);
      // Only once result.json is written: a collector that is down or slow never costs the result.
      await this.trace?.export(report.result, this.meta.eventsPath, (line) => this.warnings.warn(line));
      return report;
    } finally {
      // Then the guard, with nothing left to do: once the wrapper has exited, nothing it started is left.
      await this.guard?.release();
      this.timers.dispose();
      this.disposeHandlers();
    }
  }

  /** Signals, the parent watch and the time limit: what stops the run from outside. */
  private listenForStops(env: NodeJS.ProcessEnv): void {
    if (this.options.handleSignals) this.installSignalHandlers();
    if (this.options.earlySignal) interruptBy(this, `subagent-wrapper received ${this.options.earlySignal}`);
    this.watchParent(env);
    // The time limit counts from here, before any file is touched: a start-up that stalls
    // still ends on time (and a decided run never starts pi).
    if (this.meta.timeoutMs) {
      this.timers.after(this.meta.timeoutMs, () => {
        this.verifier?.stop();
        apply(this, {
          records: [],
          transition: this.tracker.interrupt("timed_out", `run exceeded timeoutMs (${this.meta.timeoutMs} ms)`),
        });
      });
    }
    this.limits = RunLimits.open(this.meta, {
      now: () => this.clock.now(),
      timers: this.timers,
      record: (record) => {
        this.record(record);
        // A limit reached during the checks ends them: the gate's time counts against the turn's.
        if (record.type === "limit") this.verifier?.stop();
      },
      warn: (line) => this.warnings.add(line),
      stop: (reason) => this.stopForLimit(reason),
      answered: () => this.tracker.answered,
    });
  }

  /** A limit's grace ran out: `interrupted`, the last assistant text kept, unless the child has answered. */
  private stopForLimit(reason: string): void {
    if (this.tracker.answered) return;
    apply(this, { records: [], transition: this.tracker.interrupt("interrupted", reason) });
  }

  /** Starts pi once everything it needs is in place, unless a stop came first, and supervises it to its exit. */
  private async runChild(env: NodeJS.ProcessEnv, artifactsOpen: Promise<void>): Promise<void> {
    const childEnv = { ...env, ...this.meta.env } as Record<string, string>;
    this.trace = TurnTrace.open(env, childEnv);
    if (this.trace) childEnv[TRACEPARENT] = this.trace.childTraceparent;
    const bin = this.processes.resolvePi(childEnv, this.meta.cwd);
    this.identify(bin, childEnv);
    this.runTemp = runTempPath();
    this.taskFile = taskFileIn(this.runTemp);
    await this.prepareStart(this.runTemp, this.taskFile);
    const inboxDir = this.openInbox(this.runTemp);
    if (this.meta.verify) {
      this.verifier = new Verifier(this.meta.verify, {
        meta: this.meta,
        clock: this.clock,
        processes: this.processes,
        env: childEnv,
        runToken: this.runToken,
        tempDir: this.runTemp,
        record: (record) => this.record(record),
        warn: (line) => this.warnings.add(line),
      });
    }
    const options: SpawnOptions = {
      cwd: this.meta.cwd,
      env: childEnv,
      taskFile: this.taskFile,
      tempDir: this.runTemp,
      runToken: this.runToken,
      ...(inboxDir && { inboxDir }),
      ...(this.meta.cwdReadyPath && { cwdReady: this.meta.cwdReadyPath }),
    };
    let meta = this.runMeta;
    for (;;) {
      // A signal during start-up (or between two models) is recorded without starting pi at all.
      if (this.tracker.decided) return;
      // The first pi may be the spare this wrapper started before the turn was handed to it.
      const spare = meta === this.runMeta ? this.options.spare?.take(meta, bin, options, this.warnAdd) : undefined;
      const running = startPi(this, bin, buildChildArgs(meta), options, artifactsOpen, spare);
      // Once pi is spawned (its start-up goes first): the next fallback model's standby.
      // (Else, with checks that may send the child back: a repair's pi, the same arguments.)
      const upcoming = this.fallbacks.upcoming;
      if (upcoming) this.standby.prepare(bin, buildChildArgs(switchedMeta(this.runMeta, upcoming)), options);
      else if (this.verifier?.repairsLeft) this.standby.prepare(bin, buildChildArgs({ ...meta, task: "" }), options);
      await running;
      const next = nextModel(this);
      const following = next
        ? switchedMeta(this.runMeta, next.to, next.prompt)
        : await nextRepair(this, bin, meta, options);
      if (!following) return;
      meta = following;
      // The prompt is in place before the standby is let through: its task extension reads it then.
      await removeTaskFile(this.taskFile);
      await writeTaskFile(this.taskFile, meta.task);
    }
  }

  private readonly warnAdd = (line: string): void => this.warnings.add(line);

  /** The result's reserve, the orphan guard, and the run's folder with the task file, all started at once. */
  private async prepareStart(runTemp: string, taskFile: string): Promise<void> {
    const reserved = this.takeReserve();
    // Started while the reserve is written, and before pi: from pi's spawn on, nothing it
    // starts outlives the wrapper; and before the run's folder is made, which it removes
    // when the wrapper dies (a SIGKILL leaves no copy of the task in the temp folder).
    this.guard = this.processes.startGuard(
      this.runToken,
      ResultReserve.pathFor(this.meta.resultPath),
      (err) =>
        this.warnings.addOnce(
          `orphan guard could not start (${errorText(err)}): a SIGKILLed wrapper may leave its child running and its task file in the temp folder`,
        ),
      runTemp,
    );
    const taskWritten = makeRunTemp(runTemp).then(() => writeTaskFile(taskFile, this.meta.task));
    // Both settle before going on: a failed reserve must not leave the task file's write in
    // flight past the clean-up that removes it.
    const failed = (await Promise.allSettled([taskWritten, reserved])).find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
  }

  /** What the run left outside the child's group (stragglers.ts); nothing when pi never started. */
  private async endStragglers(): Promise<void> {
    if (this.child) await endTokenProcesses(this.stragglerWatch(), this.runToken);
  }

  stragglerWatch(): StragglerWatch {
    return { processes: this.processes, clock: this.clock, timers: this.timers };
  }

  /**
   * The disk space result.json will need, taken before pi starts (artifacts.ts). A run that
   * cannot have it never starts pi: its result could not be promised.
   */
  private async takeReserve(): Promise<void> {
    try {
      this.reserve = await ResultReserve.create(this.meta.resultPath, undefined, this.folders);
    } catch (err) {
      throw new Error(`cannot reserve space for result.json beside ${this.meta.resultPath}: ${errorText(err)}`);
    }
  }

  private async openArtifacts(env: NodeJS.ProcessEnv): Promise<void> {
    this.artifacts = await RunArtifacts.open(this.meta, env, this.folders, (line) => this.warnings.warn(line));
    this.collectArtifactErrors();
  }

  private collectArtifactErrors(): void {
    for (const error of this.artifacts.errors()) this.warnings.addOnce(error);
  }

  /** Whether this pi emits agent_settled decides when graceMs starts: at agent_settled, or at the terminal message. */
  private identify(bin: string, childEnv: NodeJS.ProcessEnv): void {
    const pi = (this.processes.identifyPi ?? identifyPi)(bin, childEnv);
    this.explainCrash = (stderrTail) => oldNodeCrash(pi, stderrTail, findOnPath("node", childEnv, this.meta.cwd));
    if (pi.problem) this.warnings.warn(pi.problem);
    this.tracker.expectSettled(pi.emitsSettled);
  }

  /** A live-message inbox the child can use, or undefined (none asked for, or unusable: reported, and the run goes on). */
  private openInbox(runTemp: string): string | undefined {
    // With limits, a run always has an inbox: the wrap-up message goes through it (limits.ts).
    const inboxPath = this.limits
      ? this.limits.inbox(this.meta.inboxPath, privateInboxIn(runTemp))
      : this.meta.inboxPath;
    if (!inboxPath) return undefined;
    const inbox = new DeliveryLedger(inboxPath);
    const problem = inbox.prepare();
    if (problem) {
      this.warnings.add(problem);
      return undefined;
    }
    this.inbox = inbox;
    return inbox.dir;
  }

  private installSignalHandlers(): void {
    this.cleanups.push(onStopSignals((reason) => interruptBy(this, reason)));
  }

  private watchParent(env: NodeJS.ProcessEnv): void {
    this.cleanups.push(
      ...watchRunEnds(env, this.meta, this.clock, this.processes, (reason) => interruptBy(this, reason)),
    );
  }

  /** Signal handlers and the parent watch go last: a SIGTERM while result.json is being written must not kill the wrapper. */
  private disposeHandlers(): void {
    for (const cleanup of this.cleanups.splice(0)) cleanup();
  }

  record(body: EventRecordBody): void {
    this.artifacts.record(body, this.clock.now());
  }

  private async finish(startError: string | undefined): Promise<RunReport> {
    const outcome = this.outcome(startError);
    const exitCode = exitCodeForStatus(outcome.status);
    this.record({ type: "run_end", status: outcome.status, exitCode });
    await this.artifacts.close();
    this.collectArtifactErrors();
    const totals = this.fallbacks.totals(this.tracker);
    const result = buildResult(this.meta, outcome, exitCode, {
      startedAt: this.startedAt,
      endedAt: this.clock.now(),
      ...totals,
      resolvedModel: this.tracker.resolvedModel ?? this.fallbacks.model,
      attempts: this.fallbacks.attempts,
      childExit: this.childExit,
      forcedExit: this.forcedExit,
      warnings: this.warnings.all,
      limit: this.limits?.reached,
      verification: this.verifier?.verification,
    });
    return deliverResult(this.meta.resultPath, result, exitCode, this.reserve, this.warnings);
  }

  /** A run that could not start failed with the reason, unless a signal had already decided it. */
  private outcome(startError: string | undefined): Outcome {
    if (startError && !this.tracker.decided) return { status: "failed", finalText: "", errorMessage: startError };
    const exit = { exitCode: this.childExit?.exitCode ?? null, signal: this.childExit?.signal ?? null };
    return explainOutcome(this.tracker.finish({ ...exit, stderrTail: this.stderrTail }), {
      exitCode: exit.exitCode,
      crashHint: () => this.explainCrash?.(this.stderrTail),
      limits: this.limits,
      stderrTail: this.stderrTail,
    });
  }
}

/** Run one child to its outcome and write result.json. Never throws for run problems. */
export function runWrapper(meta: MetaV1, options: RunOptions = {}): Promise<RunReport> {
  return new WrapperRun(meta, options).run();
}
