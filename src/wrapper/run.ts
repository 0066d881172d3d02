import { randomBytes } from "node:crypto";
import type { EventRecordBody } from "../contracts/events.js";
import { DEFAULT_GRACE_MS, effectiveModel, type MetaV1 } from "../contracts/meta.js";
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
import { streamChild } from "./child-stream.js";
import { FallbackChain, fallbackSessionPath, type ModelSwitch, switchedMeta } from "./fallback.js";
import { DeliveryLedger } from "./inbox.js";
import { onStopSignals, watchRunEnds } from "./interrupts.js";
import { RunLimits } from "./limits.js";
import type { PiEvent } from "./normalize.js";
import type { OrphanGuard } from "./orphan-guard.js";
import { type Outcome, OutcomeTracker, type Transition } from "./outcome.js";
import { identifyPi, oldNodeCrash } from "./pi-version.js";
import { RpcSession } from "./rpc-session.js";
import { RunArtifacts } from "./run-artifacts.js";
import { buildResult, deliverResult, explainOutcome, type RunReport } from "./run-result.js";
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
import { launchStandby, Standby, type StandbyLauncher } from "./standby.js";
import { endTokenProcesses, type StragglerWatch } from "./stragglers.js";
import { TurnTrace } from "./turn-trace.js";
import { Verifier } from "./verification.js";

/** After SIGTERM, how long the child gets before SIGKILL. */
export const KILL_AFTER_MS = 3000;
export { STDOUT_DRAIN_MS } from "./child-stream.js";

const STDERR_TAIL_CHARS = 2000;

export type { RunReport } from "./run-result.js";

export interface RunOptions {
  /** One-line warnings and errors for the user (stderr in the CLI). */
  warn?: (line: string) => void;
  /** Handle SIGTERM/SIGINT/SIGHUP to the wrapper (the CLI does; embedders may not). */
  handleSignals?: boolean;
  /** A signal that arrived before the run could handle it (while meta.json was read). */
  earlySignal?: NodeJS.Signals;
  env?: NodeJS.ProcessEnv;
  /** The run's clock and timers (default: Node's). */
  clock?: Clock;
  /** How the child is found, started and signalled (default: the real pi, see child.ts). */
  child?: ChildOperations;
  /** How the warm standby of a run with fallbacks starts (standby.ts; default: the real one, unless `child` is given). */
  standby?: StandbyLauncher;
}

/**
 * One child run: starting → running → (draining after the terminal message | stopping) →
 * done. The run's timers and signals meet here; the decisions themselves are OutcomeTracker's,
 * and its pieces are named modules: the files it writes (run-artifacts.ts), what stops it from
 * outside (interrupts.ts), what its child leaves behind (stragglers.ts), its result (run-result.ts).
 */
class WrapperRun {
  private tracker = new OutcomeTracker();
  /** The models the turn may move to (fallback.ts), and what failed. */
  private readonly fallbacks: FallbackChain;
  /** The next fallback model's pi, started beside the running one (standby.ts). */
  private readonly standby: Standby;
  /** meta.json as pi processes are started from it (the session fallbacks share: fallback.ts). */
  private readonly runMeta: MetaV1;
  private readonly clock: Clock;
  private readonly processes: ChildOperations;
  private readonly timers: RunTimers;
  private readonly startedAt: number;
  private readonly warnings: RunWarnings;
  private artifacts!: RunArtifacts;
  private child: ChildHandle | undefined;
  /** The running pi's commands and dialogs, when meta.json `dialogs` runs it in RPC mode (rpc-session.ts). */
  private rpc: RpcSession | undefined;
  /** Marks every process of this run (the child's environment; see orphan-guard.ts). */
  private readonly runToken = randomBytes(16).toString("hex");
  private guard: OrphanGuard | undefined;
  /** The run's own folder in the temp folder (run-temp.ts), removed when the run is over. */
  private runTemp: string | undefined;
  /** The task's text for the child, in the run's folder. */
  private taskFile: string | undefined;
  private reserve: ResultReserve | undefined;
  /** The run's artifacts and its reserve share folders: each is checked and made once. */
  private readonly folders = folderMaker();
  private childExit: { exitCode: number | null; signal: string | null } | undefined;
  private stderrTail = "";
  /** What pi's stderr says went wrong at its start, when it says pi's Node is too old (pi-version.ts). */
  private explainCrash: ((stderrTail: string) => string | undefined) | undefined;
  private forcedExit = false;
  private cancelGrace: (() => void) | undefined;
  private stopping = false;
  private readonly cleanups: Array<() => void> = [];
  /** Confirms live messages (meta.json `inboxPath`) from the child's stream. */
  private inbox: DeliveryLedger | undefined;
  /** meta.json `limits` at work (limits.ts); undefined when it sets none. */
  private limits: RunLimits | undefined;
  /** Each model request's cost into the person's spending ledger, when meta.json `env` names it. */
  private readonly spend: SpendLedger | undefined;
  /** meta.json `verify` at work (verification.ts); undefined when it sets none. */
  private verifier: Verifier | undefined;
  /** The turn's span in the tree's trace, when an OTLP endpoint is set (turn-trace.ts). */
  private trace: TurnTrace | undefined;

  private readonly meta: MetaV1;

  constructor(
    requested: MetaV1,
    private readonly options: RunOptions = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.warnings = new RunWarnings(options.warn);
    const meta = requested;
    this.meta = meta;
    this.processes = options.child ?? nodeChildOperations;
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
      // What the run left outside the child's group ends while result.json is written (the
      // two do not depend on each other; the parent waits for the wrapper's exit, so both count).
      const [report] = await Promise.all([this.finish(startError), this.endStragglers()]);
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
    if (this.options.earlySignal) this.interruptBy(`subagent-wrapper received ${this.options.earlySignal}`);
    this.watchParent(env);
    // The time limit counts from here, before any file is touched: a start-up that stalls
    // still ends on time (and a decided run never starts pi).
    if (this.meta.timeoutMs) {
      this.timers.after(this.meta.timeoutMs, () => {
        this.verifier?.stop();
        this.apply({
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
    this.apply({ records: [], transition: this.tracker.interrupt("interrupted", reason) });
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
      const running = this.startPi(bin, buildChildArgs(meta), options, artifactsOpen);
      // Once pi is spawned (its start-up goes first): the next fallback model's standby.
      // (Else, with checks that may send the child back: a repair's pi, the same arguments.)
      const upcoming = this.fallbacks.upcoming;
      if (upcoming) this.standby.prepare(bin, buildChildArgs(switchedMeta(this.runMeta, upcoming)), options);
      else if (this.verifier?.repairsLeft) this.standby.prepare(bin, buildChildArgs({ ...meta, task: "" }), options);
      await running;
      const next = this.nextModel();
      const following = next
        ? switchedMeta(this.runMeta, next.to, next.prompt)
        : await this.nextRepair(bin, meta, options);
      if (!following) return;
      meta = following;
      // The prompt is in place before the standby is let through: its task extension reads it then.
      await removeTaskFile(this.taskFile);
      await writeTaskFile(this.taskFile, meta.task);
    }
  }

  /** One pi process of the run, from its spawn to its exit. */
  private async startPi(
    bin: string,
    args: string[],
    options: SpawnOptions,
    artifactsOpen: Promise<void>,
  ): Promise<void> {
    // A fallback model's pi is its standby when one waits with these arguments, else a new one.
    const child = this.standby.take(args) ?? this.processes.spawn(bin, args, options);
    this.child = child;
    if (child.pid) this.guard?.watch(child.pid);
    // Listened for at once: a child that dies while the artifacts open is not missed.
    const exited = new Promise<void>((resolve) => {
      child.once("exit", (exitCode, signal) => {
        this.childExit = { exitCode, signal };
        resolve();
      });
    });
    const [pid] = await Promise.all([this.started(child, bin), artifactsOpen]);
    this.record({ type: "run_start", runId: this.meta.runId, pid, argv: args });
    this.rpc = this.openRpc(child);
    try {
      await this.supervise(child, exited);
    } finally {
      this.rpc?.end();
      this.rpc = undefined;
    }
  }

  /** With meta.json `dialogs`: the task goes to pi as its prompt, and its dialogs to the run's `dialogs/` folder. */
  private openRpc(child: ChildHandle): RpcSession | undefined {
    const meta = this.meta;
    if (!meta.dialogs) return undefined;
    const rpc = new RpcSession(child.stdin, meta as MetaV1 & { dialogs: NonNullable<MetaV1["dialogs"]> }, {
      settles: () => this.tracker.emitsSettled,
      now: () => this.clock.now(),
      after: (ms, fn) => this.timers.after(ms, fn),
      record: (record) => this.record(record),
      warn: (line) => this.warnings.add(line),
    });
    rpc.start();
    return rpc;
  }

  /**
   * After a pi process exited: the switch to the next fallback model when it failed with a
   * provider error that moves the turn on (fallback.ts), with a fresh tracker for the next pi.
   */
  private nextModel(): ModelSwitch | undefined {
    const exit = { ...(this.childExit ?? { exitCode: null, signal: null }), stderrTail: this.stderrTail };
    const next = this.fallbacks.afterExit(this.tracker, exit, this.clock.now());
    if (!next) return undefined;
    this.record(next.record);
    this.freshAttempt();
    return next;
  }

  /**
   * After the pi process that ended the turn: its checks (verification.ts), and the meta of
   * the repair's pi — the same session, the current model, the failure as its prompt — when a
   * check failed and repairs are left.
   */
  private async nextRepair(bin: string, meta: MetaV1, options: SpawnOptions): Promise<MetaV1 | undefined> {
    if (!this.verifier || !this.meta.verify) return undefined;
    const outcome = this.tracker.finish({ ...this.exitSeen(), stderrTail: this.stderrTail });
    const end = { status: outcome.status, limitReached: this.limits?.reached !== undefined };
    // A repair's pi waits loaded at the gate (standby.ts), unless a fallback's took its place:
    // a repair's first model request does not wait for pi's start-up.
    if (end.status === "completed" && this.verifier.repairsLeft) {
      this.standby.prepare(bin, buildChildArgs({ ...meta, task: "" }), options);
    }
    const repair = await this.verifier.afterTurn(end, outcome.finalText, bin);
    if (!repair) return undefined;
    this.fallbacks.carry(this.tracker);
    this.freshAttempt();
    return { ...meta, task: repair.prompt };
  }

  private exitSeen(): { exitCode: number | null; signal: string | null } {
    return this.childExit ?? { exitCode: null, signal: null };
  }

  /** A fresh tracker and exit for the run's next pi process (a fallback model's, a repair's). */
  private freshAttempt(): void {
    this.tracker = new OutcomeTracker({ settles: this.tracker.emitsSettled });
    this.childExit = undefined;
    this.stderrTail = "";
    this.forcedExit = this.stopping = false;
    this.cancelGrace?.();
    this.cancelGrace = undefined;
  }

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

  private stragglerWatch(): StragglerWatch {
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

  /** Resolves with the pid once pi is running; rejects with a clear message if it cannot start. */
  private started(child: ChildHandle, bin: string): Promise<number | null> {
    return new Promise((resolve, reject) => {
      child.once("spawn", () => resolve(child.pid ?? null));
      child.once("error", (err) => reject(new Error(`could not start pi (${bin}): ${errorText(err)}`)));
    });
  }

  private supervise(child: ChildHandle, exited: Promise<void>): Promise<void> {
    return streamChild(child, exited, this.stragglerWatch(), {
      event: (event) => this.onEvent(event),
      stdout: (bytes, bulky) => this.artifacts.writeStdout(bytes, bulky),
      stderr: (chunk) => {
        this.artifacts.writeStderr(chunk);
        this.stderrTail = (this.stderrTail + chunk.toString("utf8")).slice(-STDERR_TAIL_CHARS);
      },
      // Past its start-up, pi leaves the standby the CPU it held back (standby.ts).
      output: () => this.standby.runningStarted(),
      listening: () => this.applyPendingStop(),
      groupGone: () => this.guard?.groupGone(),
    });
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

  private onEvent(event: PiEvent): void {
    // A delivery is recorded where the child read it: before what pi does with it.
    if (this.inbox) for (const record of this.inbox.observe(event)) this.record(record);
    this.apply(this.tracker.observe(event));
    this.rpc?.observe(event);
    // Recorded before the limits look: the period budgets' check then counts this request too.
    this.spend?.observe(event);
    this.limits?.observe(event);
    // pi is up and waits on the model: the span exporter loads now, off the child's start.
    this.trace?.preload();
  }

  private apply({ records, transition }: { records: EventRecordBody[]; transition: Transition }): void {
    for (const record of records) this.record(record);
    if (transition.kind === "decided" && transition.stopNow) {
      this.stopChild();
    } else if (transition.kind === "decided" || transition.kind === "settled") {
      // pi's work is over: graceMs counts from here (again, if pi had gone on after an earlier end).
      this.cancelGrace?.();
      this.cancelGrace = this.timers.after(this.meta.graceMs ?? DEFAULT_GRACE_MS, () => this.stopChild());
    } else if (transition.kind === "revoked" && this.cancelGrace) {
      this.cancelGrace();
      this.cancelGrace = undefined;
    }
  }

  /** A stop asked for before the child existed (a signal during start-up) applies now. */
  private applyPendingStop(): void {
    if (this.stopping) {
      this.stopping = false;
      this.stopChild();
    }
  }

  /** SIGTERM to the child's group, SIGKILL 3 s later if it is still there. */
  private stopChild(): void {
    if (this.stopping || this.childExit) return;
    this.stopping = true;
    const pid = this.child?.pid;
    if (!pid) return;
    this.forcedExit = true;
    this.processes.signalGroup(pid, "SIGTERM");
    this.timers.after(KILL_AFTER_MS, () => this.processes.signalGroup(pid, "SIGKILL"));
  }

  private interruptBy(reason: string): void {
    if (this.stopping && this.child?.pid && !this.childExit) {
      // Asked twice: do not wait the 3 s.
      this.processes.signalGroup(this.child.pid, "SIGKILL");
      return;
    }
    this.verifier?.stop();
    this.tracker.interrupt("interrupted", reason);
    this.stopChild();
  }

  private installSignalHandlers(): void {
    this.cleanups.push(onStopSignals((reason) => this.interruptBy(reason)));
  }

  private watchParent(env: NodeJS.ProcessEnv): void {
    this.cleanups.push(
      ...watchRunEnds(env, this.meta, this.clock, this.processes, (reason) => this.interruptBy(reason)),
    );
  }

  /** Signal handlers and the parent watch go last: a SIGTERM while result.json is being written must not kill the wrapper. */
  private disposeHandlers(): void {
    for (const cleanup of this.cleanups.splice(0)) cleanup();
  }

  private record(body: EventRecordBody): void {
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
