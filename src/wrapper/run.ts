import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ENV } from "../contracts/env.js";
import type { EventRecordBody } from "../contracts/events.js";
import { DEFAULT_GRACE_MS, effectiveModel, type MetaV1 } from "../contracts/meta.js";
import { exitCodeForStatus, RESULT_VERSION, type ResultV1, WRAPPER_EXIT } from "../contracts/result.js";
import { folderMaker } from "../lib/file-paths.js";
import { errorText } from "../lib/values.js";
import { ArtifactFile, EventsWriter, logCapsFromEnv, RawLog, ResultReserve, writeResult } from "./artifacts.js";
import { buildChildArgs, type ChildHandle, type ChildOperations, nodeChildOperations } from "./child.js";
import { DeliveryLedger } from "./inbox.js";
import { PiLineReader } from "./line-reader.js";
import type { PiEvent } from "./normalize.js";
import type { OrphanGuard } from "./orphan-guard.js";
import { type Outcome, OutcomeTracker, type Transition } from "./outcome.js";
import { identifyPi } from "./pi-version.js";
import { nodeScheduler, RunTimers, type Scheduler } from "./scheduler.js";
import { formatTranscriptEntry } from "./transcript.js";

/** After SIGTERM, how long the child gets before SIGKILL. */
export const KILL_AFTER_MS = 3000;
/** After the child exits, how long its stdout may stay open (a grandchild holding it). */
export const STDOUT_DRAIN_MS = 2000;
const STDERR_TAIL_CHARS = 2000;
/** How often the parent named in PI_SUBAGENTS_PARENT_PID is looked for. */
export const PARENT_CHECK_MS = 1000;
/** After the child exited and its group (or a straggler outside it) got SIGTERM, how long it has before SIGKILL. */
export const STRAGGLER_KILL_MS = 1000;
/** How often the child's group is looked at while stragglers are ending. */
export const GROUP_POLL_MS = 50;

export interface RunReport {
  result: ResultV1;
  /** The wrapper's process exit code. */
  exitCode: number;
}

export interface RunOptions {
  /** One-line warnings and errors for the user (stderr in the CLI). */
  warn?: (line: string) => void;
  /** Handle SIGTERM/SIGINT/SIGHUP to the wrapper (the CLI does; embedders may not). */
  handleSignals?: boolean;
  /** A signal that arrived before the run could handle it (while meta.json was read). */
  earlySignal?: NodeJS.Signals;
  env?: NodeJS.ProcessEnv;
  /** The run's clock and timers (default: Node's). */
  scheduler?: Scheduler;
  /** How the child is found, started and signalled (default: the real pi, see child.ts). */
  child?: ChildOperations;
}

/**
 * One child run: starting → running → (draining after the terminal message | stopping) →
 * done. The only place with timers and signals; the decisions themselves are OutcomeTracker's.
 */
class WrapperRun {
  private readonly tracker = new OutcomeTracker();
  private readonly scheduler: Scheduler;
  private readonly processes: ChildOperations;
  private readonly timers: RunTimers;
  private readonly startedAt: number;
  private readonly warnings: string[] = [];
  private events!: EventsWriter;
  private rawLog: RawLog | undefined;
  private stderrLog: RawLog | undefined;
  private transcript: ArtifactFile | undefined;
  private child: ChildHandle | undefined;
  /** Marks every process of this run (the child's environment; see orphan-guard.ts). */
  private readonly runToken = randomBytes(16).toString("hex");
  private guard: OrphanGuard | undefined;
  private reserve: ResultReserve | undefined;
  /** The run's artifacts and its reserve share folders: each is checked and made once. */
  private readonly folders = folderMaker();
  private childExit: { exitCode: number | null; signal: string | null } | undefined;
  private stderrTail = "";
  private forcedExit = false;
  private cancelGrace: (() => void) | undefined;
  private stopping = false;
  private readonly cleanups: Array<() => void> = [];
  /** Confirms live messages (meta.json `inboxPath`) from the child's stream. */
  private inbox: DeliveryLedger | undefined;

  constructor(
    private readonly meta: MetaV1,
    private readonly options: RunOptions = {},
  ) {
    this.scheduler = options.scheduler ?? nodeScheduler;
    this.processes = options.child ?? nodeChildOperations;
    this.timers = new RunTimers(this.scheduler);
    this.startedAt = this.scheduler.now();
  }

  async run(): Promise<RunReport> {
    const env = this.options.env ?? process.env;
    if (this.options.handleSignals) this.installSignalHandlers();
    if (this.options.earlySignal) this.interruptBy(`subagent-wrapper received ${this.options.earlySignal}`);
    this.watchParent(env);
    // The time limit counts from here, before any file is touched: a start-up that stalls
    // still ends on time (and a decided run never starts pi).
    if (this.meta.timeoutMs) {
      this.timers.after(this.meta.timeoutMs, () =>
        this.apply({
          records: [],
          transition: this.tracker.interrupt("timed_out", `run exceeded timeoutMs (${this.meta.timeoutMs} ms)`),
        }),
      );
    }
    // The artifacts open while the task file is written and pi starts: start-up is the
    // wrapper's whole overhead on a short run (docs/performance.md).
    const artifactsOpen = this.openArtifacts(env);
    let taskFile: string | undefined;
    let startError: string | undefined;
    try {
      const childEnv = { ...env, ...this.meta.env } as Record<string, string>;
      const bin = this.processes.resolvePi(childEnv, this.meta.cwd);
      this.identify(bin, childEnv);
      taskFile = path.join(os.tmpdir(), `pi-subagent-task-${process.pid}-${randomBytes(6).toString("hex")}.txt`);
      const taskWritten = fs.promises.writeFile(taskFile, this.meta.task, {
        encoding: "utf8",
        mode: 0o600,
        flag: "wx",
      });
      const reserved = this.takeReserve();
      // Started while those writes run, and before pi: from pi's spawn on, nothing it starts outlives the wrapper.
      this.guard = this.processes.startGuard(this.runToken, ResultReserve.pathFor(this.meta.resultPath), (err) =>
        this.warnOnce(
          `orphan guard could not start (${errorText(err)}): a SIGKILLed wrapper may leave its child running`,
        ),
      );
      // Both settle before going on: a failed reserve must not leave the task file's write in
      // flight past the clean-up that removes it.
      const failed = (await Promise.allSettled([taskWritten, reserved])).find((r) => r.status === "rejected");
      if (failed) throw failed.reason;
      // A signal during start-up is recorded without starting pi at all.
      if (!this.tracker.decided) {
        const args = buildChildArgs(this.meta);
        const inboxDir = this.openInbox();
        const child = this.processes.spawn(bin, args, {
          cwd: this.meta.cwd,
          env: childEnv,
          taskFile,
          runToken: this.runToken,
          ...(inboxDir && { inboxDir }),
          ...(this.meta.cwdReadyPath && { cwdReady: this.meta.cwdReadyPath }),
        });
        this.child = child;
        if (child.pid) this.guard.watch(child.pid);
        // Listened for at once: a child that dies while the artifacts open is not missed.
        const exited = new Promise<void>((resolve) => {
          child.once("exit", (exitCode, signal) => {
            this.childExit = { exitCode, signal };
            resolve();
          });
        });
        const [pid] = await Promise.all([this.started(child, bin), artifactsOpen]);
        this.record({ type: "run_start", runId: this.meta.runId, pid, argv: args });
        await this.supervise(child, exited);
      }
    } catch (err) {
      startError = errorText(err);
    } finally {
      this.timers.dispose();
      if (taskFile) await fs.promises.rm(taskFile, { force: true }).catch(() => undefined);
    }
    await artifactsOpen;
    try {
      // What the run left outside the child's group ends while result.json is written (the
      // two do not depend on each other; the parent waits for the wrapper's exit, so both count).
      const [report] = await Promise.all([this.finish(startError), this.endStragglers()]);
      return report;
    } finally {
      // Then the guard, with nothing left to do: once the wrapper has exited, nothing it started is left.
      await this.guard?.release();
      this.timers.dispose();
      this.disposeHandlers();
    }
  }

  /**
   * Processes that carry the run's token but left the child's group (`setsid`, pi's detached
   * bash tool): SIGTERM, then SIGKILL for those still there STRAGGLER_KILL_MS later.
   */
  private async endStragglers(): Promise<void> {
    if (!this.child) return;
    const ops = this.processes;
    let left = await ops.tokenProcesses(this.runToken);
    if (left.length === 0) return;
    for (const pid of left) ops.signalProcess(pid, "SIGTERM");
    const deadline = this.scheduler.now() + STRAGGLER_KILL_MS;
    while (left.length > 0 && this.scheduler.now() < deadline) {
      await new Promise<void>((resolve) =>
        this.timers.after(Math.min(GROUP_POLL_MS, deadline - this.scheduler.now()), resolve),
      );
      left = await ops.tokenProcesses(this.runToken);
    }
    for (const pid of left) ops.signalProcess(pid, "SIGKILL");
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

  /** A line for the caller's warn hook; a hook that throws (stderr on a full disk) never fails the run. */
  private say(line: string): void {
    try {
      this.options.warn?.(`subagent-wrapper: ${line}`);
    } catch {
      // the line is lost; result.json still tells the outcome
    }
  }

  private warnOnce(line: string): void {
    if (this.warnings.includes(line)) return;
    this.warnings.push(line);
    this.say(line);
  }

  private async openArtifacts(env: NodeJS.ProcessEnv): Promise<void> {
    const meta = this.meta;
    const [events, stdout, stderr, transcript] = await Promise.all([
      ArtifactFile.open("events", meta.eventsPath, this.folders),
      meta.stdoutPath ? ArtifactFile.open("stdout log", meta.stdoutPath, this.folders) : undefined,
      meta.stderrPath ? ArtifactFile.open("stderr log", meta.stderrPath, this.folders) : undefined,
      meta.transcriptPath ? ArtifactFile.open("transcript", meta.transcriptPath, this.folders) : undefined,
    ]);
    const { caps, error } = logCapsFromEnv(env);
    if (error && (stdout || stderr)) this.say(error);
    this.events = new EventsWriter(events);
    this.rawLog = stdout && new RawLog(stdout, caps);
    this.stderrLog = stderr && new RawLog(stderr, caps);
    this.transcript = transcript;
    this.collectArtifactErrors();
  }

  private collectArtifactErrors(): void {
    const files = [this.events.file, this.rawLog?.file, this.stderrLog?.file, this.transcript];
    for (const file of files) if (file?.error) this.warnOnce(file.error);
  }

  /** Resolves with the pid once pi is running; rejects with a clear message if it cannot start. */
  private started(child: ChildHandle, bin: string): Promise<number | null> {
    return new Promise((resolve, reject) => {
      child.once("spawn", () => resolve(child.pid ?? null));
      child.once("error", (err) => reject(new Error(`could not start pi (${bin}): ${errorText(err)}`)));
    });
  }

  private async supervise(child: ChildHandle, exited: Promise<void>): Promise<void> {
    const reader = new PiLineReader({
      event: (event) => this.onEvent(event),
      garbage: () => undefined,
      raw: (bytes, bulky) => this.rawLog?.write(bytes, bulky),
    });
    const stdoutDone = new Promise<void>((resolve) => {
      child.stdout.on("data", (chunk: Buffer) => reader.push(chunk));
      child.stdout.once("close", () => {
        reader.end();
        resolve();
      });
    });
    child.stderr.on("data", (chunk: Buffer) => {
      this.stderrLog?.write(chunk);
      this.stderrTail = (this.stderrTail + chunk.toString("utf8")).slice(-STDERR_TAIL_CHARS);
    });
    this.applyPendingStop();
    await exited;
    // Stragglers left in the child's process group end with it; one holding stdout would
    // otherwise keep the run open forever.
    this.processes.signalGroup(child.pid, "SIGTERM");
    const termAt = this.scheduler.now();
    await Promise.race([stdoutDone, new Promise<void>((resolve) => this.timers.after(STDOUT_DRAIN_MS, resolve))]);
    child.stdout.destroy();
    child.stderr.destroy();
    if (child.pid) await this.endGroup(child.pid, termAt);
  }

  /**
   * Waits for the child's group to empty — a straggler that ignores the SIGTERM gets SIGKILL
   * STRAGGLER_KILL_MS after it — and then tells the guard the group is gone. A group still
   * there after SIGKILL (a process stuck in the kernel) is not reported gone: should the
   * wrapper die before its end, the guard signals it once more.
   */
  private async endGroup(pgid: number, termAt: number): Promise<void> {
    const ops = this.processes;
    let killed = false;
    while (ops.groupAlive(pgid)) {
      const left = termAt + STRAGGLER_KILL_MS - this.scheduler.now();
      if (left <= 0) {
        if (killed) return;
        ops.signalGroup(pgid, "SIGKILL");
        killed = true;
      }
      await new Promise<void>((resolve) =>
        this.timers.after(left > 0 ? Math.min(GROUP_POLL_MS, left) : GROUP_POLL_MS, resolve),
      );
    }
    this.guard?.groupGone();
  }

  /** Whether this pi emits agent_settled decides when graceMs starts: at agent_settled, or at the terminal message. */
  private identify(bin: string, childEnv: NodeJS.ProcessEnv): void {
    const pi = (this.processes.identifyPi ?? identifyPi)(bin, childEnv);
    if (pi.problem) this.say(pi.problem);
    this.tracker.expectSettled(pi.emitsSettled);
  }

  /** A live-message inbox the child can use, or undefined (none asked for, or unusable: reported, and the run goes on). */
  private openInbox(): string | undefined {
    if (!this.meta.inboxPath) return undefined;
    const inbox = new DeliveryLedger(this.meta.inboxPath);
    const problem = inbox.prepare();
    if (problem) {
      this.warnings.push(problem);
      this.say(problem);
      return undefined;
    }
    this.inbox = inbox;
    return inbox.dir;
  }

  private onEvent(event: PiEvent): void {
    // A delivery is recorded where the child read it: before what pi does with it.
    if (this.inbox) for (const record of this.inbox.observe(event)) this.record(record);
    this.apply(this.tracker.observe(event));
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
    this.tracker.interrupt("interrupted", reason);
    this.stopChild();
  }

  private installSignalHandlers(): void {
    for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
      const handler = () => this.interruptBy(`subagent-wrapper received ${signal}`);
      process.on(signal, handler);
      this.cleanups.push(() => process.off(signal, handler));
    }
  }

  private watchParent(env: NodeJS.ProcessEnv): void {
    const parentPid = Number(env[ENV.parentPid]);
    if (!Number.isInteger(parentPid) || parentPid <= 1) return;
    const timer = this.scheduler.setInterval(() => {
      if (this.processes.canSignal(parentPid)) return;
      this.scheduler.clearInterval(timer);
      this.interruptBy(`parent process ${parentPid} is gone`);
    }, PARENT_CHECK_MS);
    this.cleanups.push(() => this.scheduler.clearInterval(timer));
  }

  /** Signal handlers and the parent watch go last: a SIGTERM while result.json is being written must not kill the wrapper. */
  private disposeHandlers(): void {
    for (const cleanup of this.cleanups.splice(0)) cleanup();
  }

  private record(body: EventRecordBody): void {
    this.events.append(body, this.scheduler.now());
    const line = formatTranscriptEntry(body);
    if (line) this.transcript?.write(line);
  }

  private async finish(startError: string | undefined): Promise<RunReport> {
    const outcome = this.outcome(startError);
    const exitCode = exitCodeForStatus(outcome.status);
    this.record({ type: "run_end", status: outcome.status, exitCode });
    await Promise.all([
      this.events.close(),
      this.rawLog?.file.close(),
      this.stderrLog?.file.close(),
      this.transcript?.close(),
    ]);
    this.collectArtifactErrors();
    const result = this.buildResult(outcome, exitCode);
    try {
      const { written, fromReserve } = await writeResult(this.meta.resultPath, result, this.reserve);
      if (fromReserve)
        this.say(`result ${this.meta.resultPath} went into the space reserved for it: the disk is full or failing`);
      return { result: written, exitCode };
    } catch (err) {
      this.say(`result ${this.meta.resultPath} could not be written: ${errorText(err)}`);
      return { result, exitCode: WRAPPER_EXIT.noResult };
    }
  }

  /** A run that could not start failed with the reason, unless a signal had already decided it. */
  private outcome(startError: string | undefined): Outcome {
    if (startError && !this.tracker.decided) return { status: "failed", finalText: "", errorMessage: startError };
    return this.tracker.finish({
      exitCode: this.childExit?.exitCode ?? null,
      signal: this.childExit?.signal ?? null,
      stderrTail: this.stderrTail,
    });
  }

  private buildResult(outcome: Outcome, exitCode: number): ResultV1 {
    const endedAt = this.scheduler.now();
    const meta = this.meta;
    const errors = [outcome.errorMessage, ...this.warnings].filter((text): text is string => Boolean(text));
    const requestedModel = meta.requestedModel ?? effectiveModel(meta);
    const resolvedModel = this.tracker.resolvedModel ?? meta.resolvedModel;
    return {
      version: RESULT_VERSION,
      runId: meta.runId,
      ...(meta.agent !== undefined && { agent: meta.agent }),
      ...(meta.agentPath !== undefined && { agentPath: meta.agentPath }),
      status: outcome.status,
      exitCode,
      ...(outcome.stopReason !== undefined && { stopReason: outcome.stopReason }),
      ...(outcome.rawStopReason !== undefined && { rawStopReason: outcome.rawStopReason }),
      finalText: outcome.finalText,
      ...(outcome.abortReason !== undefined && { abortReason: outcome.abortReason }),
      ...(outcome.abortSource !== undefined && { abortSource: outcome.abortSource }),
      usage: this.tracker.usage,
      turns: this.tracker.turns,
      toolCalls: this.tracker.toolCalls,
      ...(requestedModel !== undefined && { requestedModel }),
      ...(resolvedModel !== undefined && { resolvedModel }),
      startedAt: new Date(this.startedAt).toISOString(),
      endedAt: new Date(endedAt).toISOString(),
      durationMs: endedAt - this.startedAt,
      childExitCode: this.childExit?.exitCode ?? null,
      childSignal: this.childExit?.signal ?? null,
      forcedExit: this.forcedExit,
      ...(errors.length > 0 && { errorMessage: errors.join("; ") }),
    };
  }
}

/** Run one child to its outcome and write result.json. Never throws for run problems. */
export function runWrapper(meta: MetaV1, options: RunOptions = {}): Promise<RunReport> {
  return new WrapperRun(meta, options).run();
}
