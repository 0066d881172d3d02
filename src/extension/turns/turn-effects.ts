/**
 * The I/O of a turn's life: carries out the effects lifecycle.ts `transition` decides, for
 * the live runtime and for restore alike. Nothing here decides what happens next: each step
 * that ends in a new fact (a wrapper started, a turn recorded) reports it as an event.
 */
import path from "node:path";
import type { DialogSettingsV1 } from "../../contracts/dialogs.js";
import { TREE_FILES } from "../../contracts/layout.js";
import { mergeLimits } from "../../contracts/limits.js";
import type { Notice } from "../../contracts/notice.js";
import type { ResultV1 } from "../../contracts/result.js";
import type { AgentRecordV1, PendingPart } from "../../contracts/tree.js";
import type { UsageTotals } from "../../contracts/usage.js";
import { addUsage } from "../../contracts/usage.js";
import { type Clock, isoNow } from "../../lib/clock.js";
import { errorText } from "../../lib/values.js";
import type { TreeLimits } from "../config.js";
import { recordCooldowns } from "../tree/cooldowns.js";
import type { TreeDir } from "../tree/tree-dir.js";
import { runnerPool, type TurnSlots } from "./capacity.js";
import type { ChildState, FaultStep } from "./child-state.js";
import { deliveryKey } from "./delivery/deliveries.js";
import { childInstructions, turnPrompt } from "./delivery/envelope.js";
import { dropConfirmed, liveRuns } from "./delivery/live-messages.js";
import { turnEndNotice } from "./delivery/notices.js";
import { saveReport } from "./delivery/reports.js";
import { turnModelReport } from "./fallback-turns.js";
import { liveTurnOf, type TurnEffect, type TurnEndPlan, type TurnEvent, type TurnKind } from "./lifecycle.js";
import { applyTurnEnd, lostResultReason } from "./turn-end.js";
import { finishWorktreeTurn, type WorktreeOperations } from "./worktree-turns.js";
import type { RunningTurn, TurnOperations } from "./wrapper/launcher.js";

/** What carrying out effects needs of the runtime (TreeRuntime is one). */
export interface EffectContext {
  readonly tree: TreeDir;
  readonly slots: TurnSlots;
  readonly turns: TurnOperations;
  readonly worktrees: WorktreeOperations;
  readonly limits: TreeLimits;
  readonly cwd: string;
  readonly clock: Clock;
  /** This agent's path: the parent of the children whose turns these are. */
  readonly self: string;
  /** Fault injection (tests): the process is killed at this step of a turn's start. */
  readonly fault?: ((step: FaultStep) => void) | undefined;
  dispatch(state: ChildState, event: TurnEvent): Promise<void>;
  persist(state: ChildState): Promise<void>;
  persistOrReport(state: ChildState, what: string): Promise<string | undefined>;
  report(line: string): void;
  notify(notice: Notice): void;
  /** A turn's notice, given once across restarts (deliveries.ts). */
  deliver(key: string, notice: Notice): Promise<void>;
  collectInbox(): Promise<void>;
  subtreeUsageOf(record: AgentRecordV1): Promise<UsageTotals | undefined>;
  requestTurn(state: ChildState, kind: TurnKind): Promise<void>;
  /** Extra meta.json `env` for a turn that starts now (what is left of the tree's budget). */
  turnEnv(): Promise<Record<string, string>>;
  /** meta.json `dialogs` of every turn: its child's dialogs come to this agent. */
  readonly dialogSettings?: DialogSettingsV1 | undefined;
}

/** Carries out one effect; returns a promise only when the effect waits on I/O. */
export function perform(ctx: EffectContext, state: ChildState, effect: TurnEffect): Promise<unknown> | undefined {
  const { record } = state;
  switch (effect.type) {
    case "record_queued":
      // Its write failing fails the request: nothing started.
      record.status = "pending_init";
      return ctx.persist(state);
    case "launch":
      return launch(ctx, state, effect.kind);
    case "release_slot":
      ctx.slots.release(record.path);
      return undefined;
    case "dequeue":
      ctx.slots.dequeue(record.path);
      return undefined;
    case "record_start":
      return recordStart(ctx, state, effect.runName, effect.parts);
    case "stop_wrapper":
      liveTurnOf(state.phase)?.turn.stop();
      return undefined;
    case "record_interrupted":
      record.status = "interrupted";
      record.lastTurnStatus = "interrupted";
      return effect.restored ? writeRestored(ctx, state) : ctx.persistOrReport(state, effect.what);
    case "add_usage":
      if (effect.result) addUsage(record.usage, effect.result.usage);
      return ctx.persistOrReport(state, "a stopped turn's usage");
    case "end_turn":
      return endTurn(ctx, state, effect.plan);
    case "request_followup":
      return ctx
        .requestTurn(state, "followup")
        .catch((err: unknown) => ctx.report(`could not queue the follow-up of ${record.path}: ${errorText(err)}`));
    case "report_lost":
      reportLost(ctx, state, effect, effect.notify);
      return undefined;
    case "occupy_slot":
      ctx.slots.occupy(record.path, runnerPool(record));
      return undefined;
    case "watch_end":
      watchEnd(ctx, state, effect.runName);
      return undefined;
    case "requeue":
      return ctx
        .requestTurn(state, effect.kind)
        .catch((err: unknown) => ctx.report(`could not queue the turn of ${record.path} again: ${errorText(err)}`));
    case "give_notice":
      return giveUnnoticed(ctx, state, effect.runName, effect.result);
    case "unrecord_run":
      record.runs = record.runs.filter((run) => run !== effect.runName);
      record.runningParts = undefined;
      record.undelivered = [...effect.parts, ...record.undelivered];
      record.status = "pending_init";
      return undefined;
  }
}

/**
 * Takes the record's pending parts as the turn's prompt and starts its wrapper. The record
 * names the run, with its parts, before the wrapper can start (`recordRun`): a parent killed
 * at any moment of the start finds it at restore, re-attaches the wrapper that runs, and
 * starts again only a turn whose wrapper never could have (restore.ts).
 */
async function launch(ctx: EffectContext, state: ChildState, kind: TurnKind): Promise<void> {
  const { record } = state;
  const parts = [...record.undelivered, ...record.inbox];
  const forkTranscript = record.forkTranscript;
  record.undelivered = [];
  record.inbox = [];
  record.forkTranscript = undefined;
  // A follow-up that joined this turn while it was queued is delivered now, not again later.
  record.followupQueued = false;
  let recorded: string | undefined;
  const recordRun = async (runName: string): Promise<void> => {
    record.runs.push(runName);
    recorded = runName;
    record.runningParts = parts;
    record.status = "running";
    await ctx.persist(state);
    ctx.fault?.("run_recorded");
  };
  let turn: RunningTurn;
  try {
    const place = record.worktree ? await ctx.worktrees.turnCwd(record.worktree) : { cwd: ctx.cwd };
    const env = await ctx.turnEnv();
    turn = await ctx.turns.start({
      record,
      agentDir: ctx.tree.agentDir(record.path),
      treeDir: ctx.tree.root,
      prompt: turnPrompt(parts, record.taskName, forkTranscript),
      kind,
      cwd: place.cwd,
      ...(place.readyPath && { cwdReadyPath: place.readyPath }),
      // A child on a runner cannot delegate (spawn/runner.ts, delegationRefusal): not offered.
      instructions: childInstructions(record, record.activeTools.includes("spawn_agent") && !record.runner),
      // The agent's limits; the turn limit (PI_SUBAGENTS_TURN_TIMEOUT_MS, 30 minutes) is time_limit's default.
      limits: mergeLimits(record.limits, { time_limit: ctx.limits.turnTimeoutMs / 1000 }),
      env,
      ...(ctx.dialogSettings && { dialogs: ctx.dialogSettings }),
      recordRun,
      clock: ctx.clock,
    });
  } catch (err) {
    // No wrapper runs: the run it was recorded as is no run of the agent's (its end writes the record).
    if (recorded !== undefined) {
      record.runs = record.runs.filter((run) => run !== recorded);
      record.runningParts = undefined;
    }
    return ctx.dispatch(state, { type: "start_failed", parts, error: errorText(err) });
  }
  ctx.fault?.("wrapper_spawned");
  // A runner's tree-wide slot is the wrapper's from now on: it outlives this process if need be.
  if (turn.pid !== undefined) ctx.slots.handOver(record.path, turn.pid);
  return ctx.dispatch(state, { type: "wrapper_started", turn, parts });
}

/**
 * The record says the turn runs (recorded before its wrapper started, or here for launchers
 * that do not record runs); its end, whenever the wrapper exits, is the next event.
 */
async function recordStart(
  ctx: EffectContext,
  state: ChildState,
  runName: string,
  parts: PendingPart[],
): Promise<void> {
  const { record } = state;
  const recordedBefore = record.runs.at(-1) === runName && record.status === "running";
  if (!recordedBefore) {
    record.runningParts = parts;
    record.runs.push(runName);
    record.status = "running";
    // The wrapper is at work whether or not this write succeeds: failing the call would drop
    // an agent that runs. Its end is recorded (or reported) when it comes.
    await ctx.persistOrReport(state, "the start of a turn");
  }
  watchEnd(ctx, state, runName);
}

/** The turn's end, whenever its wrapper exits, is the next event (a launched or a re-attached turn). */
function watchEnd(ctx: EffectContext, state: ChildState, runName: string): void {
  const turn = liveTurnOf(state.phase)?.turn;
  if (!turn) return;
  state.settled = turn.finished
    .then((result) =>
      ctx.dispatch(state, {
        type: "wrapper_exited",
        runName,
        result,
        lost: lostResultReason(turn.howExited?.(), turn.damagedResult?.()),
      }),
    )
    .catch((err: unknown) => ctx.dispatch(state, { type: "recording_failed", runName, error: errorText(err) }));
}

/**
 * The end of a turn, recorded the one way: usage, the prompt back or the confirmed live
 * messages dropped, the worktree's commit, the record's outcome, the stored answer, the
 * record written, then (when owed) the notice — after the messages the child sent up during
 * its turn, which precede it.
 */
async function endTurn(ctx: EffectContext, state: ChildState, plan: TurnEndPlan): Promise<void> {
  const { record } = state;
  record.runningParts = undefined;
  if (plan.result) addUsage(record.usage, plan.result.usage);
  // A model that failed with a rate limit or quota is skipped by the tree's later turns for a while.
  if (plan.result?.attempts)
    await recordCooldowns(ctx.tree.root, plan.result.attempts, ctx.clock.now()).catch((err: unknown) =>
      ctx.report(`could not record the model cool-downs of ${record.path}: ${errorText(err)}`),
    );
  if (plan.returnParts) record.undelivered = [...plan.returnParts, ...record.undelivered];
  else if (plan.dropConfirmedOf && liveRuns(record).includes(plan.dropConfirmedOf)) {
    // The wrapper has exited: what its run confirmed is final. The live messages it did not
    // read stay in the inbox, in their place, for the next turn.
    const runDir = path.join(ctx.tree.agentDir(record.path), TREE_FILES.runs, plan.dropConfirmedOf);
    dropConfirmed(record, plan.dropConfirmedOf, await ctx.turns.deliveredIds(runDir).catch(() => new Set<string>()));
  }
  // A notice owed is recorded as given (deliveries.ts) before notifiedRun says so: a parent
  // killed in between finds the end unnoticed at restore and gives the notice then.
  if (plan.runName && !plan.notify) record.notifiedRun = plan.runName;
  // Whatever the outcome, an isolated turn's work is committed (a follow-up's start waits for it).
  const worktree = plan.commitHow ? await finishWorktreeTurn(ctx.worktrees, record, plan.commitHow) : undefined;
  const { outcome, reason, text } = applyTurnEnd(record, plan);
  const stored = plan.storeReport
    ? await saveReport(ctx.tree.agentDir(record.path), {
        runId: plan.result?.runId ?? "none",
        turn: record.runs.length,
        outcome,
        text,
        at: isoNow(ctx.clock),
      }).catch(() => undefined)
    : undefined;
  const unrecorded = plan.restored
    ? await writeRestored(ctx, state)
    : await ctx.persistOrReport(state, `the end of a turn (${outcome})`);
  if (plan.notify) {
    // The parent still learns how the turn ended, and that the tree directory does not say
    // so: errored, with the write's failure as the reason. The report text is in the notice.
    if (unrecorded) {
      record.status = "errored";
      record.lastTurnStatus = "errored";
    }
    await ctx
      .collectInbox()
      .catch((err: unknown) => ctx.report(`could not read the inbox of ${ctx.self}: ${errorText(err)}`));
    // A restore settles the deeper records too, in spawn order: their sum is not known yet (docs/tools.md).
    const subtreeUsage = plan.restored ? undefined : await ctx.subtreeUsageOf(record);
    const reportStored = stored !== undefined;
    const limit = plan.result?.limit;
    const models = turnModelReport(record, plan.result);
    const notice = turnEndNotice(record, {
      outcome,
      reason,
      text,
      reportStored,
      subtreeUsage,
      unrecorded,
      worktree,
      limit,
      models,
      verification: plan.result?.verification,
    });
    await giveOnce(ctx, state, plan.runName, notice, plan.restored);
  }
  await ctx.dispatch(state, { type: "recorded", followupQueued: plan.notify && record.followupQueued });
}

/** Gives a turn's notice once (a run's) or as it comes (no run: it never started), then records it given. */
async function giveOnce(
  ctx: EffectContext,
  state: ChildState,
  runName: string | undefined,
  notice: Notice,
  restored: boolean,
): Promise<void> {
  const { record } = state;
  if (!runName) {
    ctx.notify(notice);
    return ctx.dispatch(state, { type: "notice_given" });
  }
  await ctx.deliver(deliveryKey(record.path, runName), notice);
  // The notice is in the mailbox: a wait may hand it on at once, and the parent's next call must
  // not find the turn still owing it while its record is written below.
  await ctx.dispatch(state, { type: "notice_given" });
  record.notifiedRun = runName;
  // The delivery record already says it was given: a failed write here is only retried later (shutdown).
  await (restored ? ctx.tree.writeRecord(record) : ctx.persist(state)).catch(() => {
    state.unsaved = true;
  });
}

/**
 * The notice of a turn whose end its record holds but that was never given (the previous
 * process died between the two): rebuilt from the record and the run's result.
 */
async function giveUnnoticed(
  ctx: EffectContext,
  state: ChildState,
  runName: string,
  result: ResultV1 | undefined,
): Promise<void> {
  const { record } = state;
  const notice = turnEndNotice(record, {
    outcome: record.lastOutcome ?? result?.status ?? "failed",
    reason: record.lastReason,
    text: result?.finalText ?? "",
    reportStored: result !== undefined,
    verification: record.lastVerification ?? result?.verification,
  });
  await giveOnce(ctx, state, runName, notice, true);
}

/** A restore's write: a failure leaves the settled record in memory (shutdown writes it once more). */
async function writeRestored(ctx: EffectContext, state: ChildState): Promise<string | undefined> {
  try {
    await ctx.tree.writeRecord(state.record);
    return undefined;
  } catch (err) {
    state.unsaved = true;
    ctx.report(`could not record how the turn ${state.record.path} left running ended: ${errorText(err)}`);
    return undefined;
  }
}

/**
 * The last guard of a turn's end, for what recording it did not foresee: the wait is
 * released and the notice that is owed given, so a parent never waits forever.
 */
function reportLost(
  ctx: EffectContext,
  state: ChildState,
  lost: { runName?: string | undefined; error: string },
  notify: boolean,
): void {
  const { record } = state;
  const failure = lost.error;
  ctx.report(`recording the end of ${record.path}'s turn ${lost.runName} failed: ${failure}`);
  if (!notify) return;
  record.status = "errored";
  ctx.notify(
    turnEndNotice(record, {
      outcome: "failed",
      reason: `recording the end of the turn failed: ${failure}`,
      text: "",
      reportStored: false,
    }),
  );
}
