/**
 * One pi process of a run, from its spawn to its exit: its events into the outcome tracker,
 * its output into the run's files, and its stop — at once when the outcome says so, after
 * graceMs once pi's work is over, and by SIGTERM then SIGKILL to its process group.
 */
import type { EventRecordBody } from "../contracts/events.js";
import { DEFAULT_GRACE_MS, type MetaV1 } from "../contracts/meta.js";
import type { Clock } from "../lib/clock.js";
import { errorText } from "../lib/values.js";
import type { ChildHandle, ChildOperations, SpawnOptions } from "./child.js";
import { streamChild } from "./child-stream.js";
import type { DeliveryLedger } from "./inbox.js";
import type { RunLimits } from "./limits.js";
import type { PiEvent } from "./normalize.js";
import type { OrphanGuard } from "./orphan-guard.js";
import type { OutcomeTracker, Transition } from "./outcome.js";
import { RpcSession, type SpareHandOver } from "./rpc-session.js";
import type { RunArtifacts } from "./run-artifacts.js";
import type { RunTimers } from "./run-timers.js";
import type { RunWarnings } from "./run-warnings.js";
import type { SpendLedger } from "./spend-ledger.js";
import type { Standby } from "./standby.js";
import type { StragglerWatch } from "./stragglers.js";
import type { TurnTrace } from "./turn-trace.js";
import type { Verifier } from "./verification.js";

/** After SIGTERM, how long the child gets before SIGKILL. */
export const KILL_AFTER_MS = 3000;

const STDERR_TAIL_CHARS = 2000;

/** What supervising a pi process reads and changes of its run (run.ts's WrapperRun has it all). */
export interface SupervisedRun {
  tracker: OutcomeTracker;
  readonly meta: MetaV1;
  readonly clock: Clock;
  readonly processes: ChildOperations;
  readonly timers: RunTimers;
  readonly warnings: RunWarnings;
  readonly standby: Standby;
  readonly artifacts: RunArtifacts;
  child: ChildHandle | undefined;
  rpc: RpcSession | undefined;
  childExit: { exitCode: number | null; signal: string | null } | undefined;
  stderrTail: string;
  forcedExit: boolean;
  cancelGrace: (() => void) | undefined;
  stopping: boolean;
  readonly guard: OrphanGuard | undefined;
  readonly inbox: DeliveryLedger | undefined;
  readonly limits: RunLimits | undefined;
  readonly spend: SpendLedger | undefined;
  readonly verifier: Verifier | undefined;
  readonly trace: TurnTrace | undefined;
  record(body: EventRecordBody): void;
  stragglerWatch(): StragglerWatch;
}

/** One pi process of the run, from its spawn to its exit. */
export async function startPi(
  run: SupervisedRun,
  bin: string,
  args: string[],
  options: SpawnOptions,
  artifactsOpen: Promise<void>,
  spare?: SpareHandOver & { child: ChildHandle; args: string[] },
): Promise<void> {
  // A spare pi handed over (spare-pi.ts); a fallback model's pi is its standby when one waits
  // with these arguments; else a new one.
  const child = spare?.child ?? run.standby.take(args) ?? run.processes.spawn(bin, args, options);
  run.child = child;
  if (child.pid) run.guard?.watch(child.pid);
  // Listened for at once: a child that dies while the artifacts open is not missed.
  const exited = new Promise<void>((resolve) => {
    child.once("exit", (exitCode, signal) => {
      run.childExit = { exitCode, signal };
      resolve();
    });
  });
  const [pid] = await Promise.all([started(child, bin), artifactsOpen]);
  run.record({
    type: "run_start",
    runId: run.meta.runId,
    pid,
    argv: spare?.args ?? args,
    ...(spare && { spare: true }),
  });
  run.rpc = openRpc(run, child, spare);
  try {
    await supervise(run, child, exited);
  } finally {
    run.rpc?.end();
    run.rpc = undefined;
  }
}

/** With meta.json `dialogs`: the task goes to pi as its prompt, and its dialogs to the run's `dialogs/` folder. */
function openRpc(run: SupervisedRun, child: ChildHandle, spare?: SpareHandOver): RpcSession | undefined {
  const meta = run.meta;
  if (!meta.dialogs && spare === undefined) return undefined;
  const rpc = new RpcSession(child.stdin, meta, {
    settles: () => run.tracker.emitsSettled,
    now: () => run.clock.now(),
    after: (ms, fn) => run.timers.after(ms, fn),
    record: (record) => run.record(record),
    warn: (line) => run.warnings.add(line),
  });
  rpc.start(spare);
  return rpc;
}

/** Resolves with the pid once pi is running; rejects with a clear message if it cannot start. */
function started(child: ChildHandle, bin: string): Promise<number | null> {
  return new Promise((resolve, reject) => {
    child.once("spawn", () => resolve(child.pid ?? null));
    child.once("error", (err) => reject(new Error(`could not start pi (${bin}): ${errorText(err)}`)));
  });
}

function supervise(run: SupervisedRun, child: ChildHandle, exited: Promise<void>): Promise<void> {
  return streamChild(child, exited, run.stragglerWatch(), {
    event: (event) => onEvent(run, event),
    stdout: (bytes, bulky) => run.artifacts.writeStdout(bytes, bulky),
    stderr: (chunk) => {
      run.artifacts.writeStderr(chunk);
      run.stderrTail = (run.stderrTail + chunk.toString("utf8")).slice(-STDERR_TAIL_CHARS);
    },
    // Past its start-up, pi leaves the standby the CPU it held back (standby.ts).
    output: () => run.standby.runningStarted(),
    listening: () => applyPendingStop(run),
    groupGone: () => run.guard?.groupGone(),
  });
}

function onEvent(run: SupervisedRun, event: PiEvent): void {
  // A delivery is recorded where the child read it: before what pi does with it.
  if (run.inbox) for (const record of run.inbox.observe(event)) run.record(record);
  apply(run, run.tracker.observe(event));
  run.rpc?.observe(event);
  // Recorded before the limits look: the period budgets' check then counts this request too.
  run.spend?.observe(event);
  run.limits?.observe(event);
  // pi is up and waits on the model: the span exporter loads now, off the child's start.
  run.trace?.preload();
}

export function apply(
  run: SupervisedRun,
  { records, transition }: { records: EventRecordBody[]; transition: Transition },
): void {
  for (const record of records) run.record(record);
  if (transition.kind === "decided" && transition.stopNow) {
    stopChild(run);
  } else if (transition.kind === "decided" || transition.kind === "settled") {
    // pi's work is over: graceMs counts from here (again, if pi had gone on after an earlier end).
    run.cancelGrace?.();
    run.cancelGrace = run.timers.after(run.meta.graceMs ?? DEFAULT_GRACE_MS, () => stopChild(run));
  } else if (transition.kind === "revoked" && run.cancelGrace) {
    run.cancelGrace();
    run.cancelGrace = undefined;
  }
}

/** A stop asked for before the child existed (a signal during start-up) applies now. */
function applyPendingStop(run: SupervisedRun): void {
  if (run.stopping) {
    run.stopping = false;
    stopChild(run);
  }
}

/** SIGTERM to the child's group, SIGKILL 3 s later if it is still there. */
export function stopChild(run: SupervisedRun): void {
  if (run.stopping || run.childExit) return;
  run.stopping = true;
  const pid = run.child?.pid;
  if (!pid) return;
  run.forcedExit = true;
  run.processes.signalGroup(pid, "SIGTERM");
  run.timers.after(KILL_AFTER_MS, () => run.processes.signalGroup(pid, "SIGKILL"));
}

/** A stop from outside (a signal, the parent gone); asked twice, SIGKILL at once. */
export function interruptBy(run: SupervisedRun, reason: string): void {
  if (run.stopping && run.child?.pid && !run.childExit) {
    // Asked twice: do not wait the 3 s.
    run.processes.signalGroup(run.child.pid, "SIGKILL");
    return;
  }
  run.verifier?.stop();
  run.tracker.interrupt("interrupted", reason);
  stopChild(run);
}
