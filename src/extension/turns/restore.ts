/**
 * Restore on session_start: a restarted parent takes its direct children back, at once. The
 * tree directory is the source of truth; the root's session entries are the fallback when it
 * is gone (tree/session-entries.ts). A turn whose wrapper still runs is taken back
 * (`reattached`, lifecycle.ts): running, its end watched as any. One that ended meanwhile, or
 * was left queued, is one event of the turn's lifecycle (`restore_found`): it ends by the same
 * rule as a live turn's, its notice given once (deliveries.ts), or is queued again. Restore
 * never waits for a running turn. A process ending never turns a finished agent into
 * `shutdown`: only close_agent does, so a restarted parent can still follow up on its
 * children. An isolated agent's worktree is kept (recreated from its branch when it went
 * missing) unless the agent was closed.
 */
import fs from "node:fs";
import path from "node:path";
import { TREE_FILES } from "../../contracts/layout.js";
import type { ResultV1 } from "../../contracts/result.js";
import type { AgentRecordV1 } from "../../contracts/tree.js";
import { emptyUsage } from "../../contracts/usage.js";
import { type Clock, isoNow } from "../../lib/clock.js";
import { errorValue } from "../../lib/text.js";
import { errorText } from "../../lib/values.js";
import { parentOf } from "../tree/paths.js";
import { recordsFromEntries } from "../tree/session-entries.js";
import { type ChildState, childState } from "./child-state.js";
import { deliveryKey, heldDeliveryKeys } from "./delivery/deliveries.js";
import { dropConfirmed, liveRuns } from "./delivery/live-messages.js";
import type { FoundTurn } from "./lifecycle.js";
import type { TreeRuntime } from "./runtime.js";
import { finishLeftCheckout } from "./worktree-turns.js";
import type { RunningTurn } from "./wrapper/launcher.js";
import { wrapperAtWork } from "./wrapper/reattach.js";
import { type RunRead, readRunResult, readWrapperPid } from "./wrapper/run-reads.js";

/**
 * session_start: loads this process's direct children and settles turns that were running
 * when their parent went away. It never throws — a session must start whatever the tree
 * directory holds: a damaged record is reported once (TreeDir) and its agent skipped, a
 * record that cannot be settled or written is reported and kept as read, and the rest of
 * the tree restores.
 */
export async function restore(
  runtime: TreeRuntime,
  sessionEntries: readonly unknown[],
  options: { readOnly?: boolean } = {},
): Promise<void> {
  try {
    await restoreTree(runtime, sessionEntries, options.readOnly === true);
  } catch (err) {
    runtime.report(`the agent tree of ${runtime.tree.root} could not be restored: ${errorText(err)}`);
  }
}

async function restoreTree(runtime: TreeRuntime, sessionEntries: readonly unknown[], readOnly: boolean): Promise<void> {
  const tree = runtime.tree;
  const scan = await tree.scan(runtime.self);
  for (const damage of scan.damaged) {
    if (damage.agentPath && parentOf(damage.agentPath) === runtime.self)
      runtime.damaged.set(damage.agentPath, damage.problem);
  }
  let records = scan.records;
  if (records.length === 0 && scan.damaged.length === 0 && runtime.identity.isRoot && !readOnly)
    records = await fromSessionEntries(runtime, sessionEntries);
  // Deeper agents belong to processes that are gone when the root restarts; a child only settles its own.
  const mine = records.filter((record) => record.parent === runtime.self || runtime.identity.isRoot);
  if (readOnly) {
    // Another live process drives the tree: this one only reads it.
    for (const record of mine)
      if (record.parent === runtime.self) runtime.children.set(record.path, childState(record));
    return;
  }
  await restoreUnread(runtime, sessionEntries);
  const { attached, untouched } = await liveTurns(runtime, mine);
  const settle = mine.filter((record) => !untouched.has(record.path));
  const unsettled = settle.filter(
    (record) => (record.status === "running" && !attached.has(record.path)) || record.status === "pending_init",
  );
  // What turns that ended while no parent was there left: read as it stands, never waited for.
  const runDirs = unsettled.flatMap((record) => {
    const runDir = runDirOf(runtime, record);
    return record.status === "running" && runDir ? [runDir] : [];
  });
  const reads = runDirs.length > 0 ? await runtime.turns.settledResults(runDirs, 0) : new Map<string, RunRead>();
  const queued: ChildState[] = [];
  for (const record of settle) {
    const state = childState(record);
    if (record.status === "pending_init" && record.parent === runtime.self) queued.push(state);
    const keepRun = await settleRecord(runtime, state, attached.get(record.path), unsettled.includes(record), reads);
    // A turn whose wrapper never started is queued again, in its place among the others.
    if (record.status === "pending_init" && record.parent === runtime.self && !queued.includes(state))
      queued.push(state);
    await reconcileRecord(runtime, state, keepRun);
    if (record.parent === runtime.self) {
      await restoreWorktree(runtime, record);
      runtime.children.set(record.path, state);
    }
  }
  // Queued turns start under the usual capacity rules, once the turns still running hold their slots.
  for (const state of queued) await settleLeftTurn(runtime, state, {});
}

/**
 * Notices given before and not read yet go back to the mailbox first, in their order; those
 * the session holds reached pi before the previous process could record them taken: taken now.
 */
async function restoreUnread(runtime: TreeRuntime, sessionEntries: readonly unknown[]): Promise<void> {
  const held = heldDeliveryKeys(sessionEntries);
  const heldKeys: string[] = [];
  for (const notice of await runtime.deliveries.load()) {
    const key = runtime.deliveries.keyOf(notice);
    if (key !== undefined && held.has(key)) heldKeys.push(key);
    else runtime.mailbox.push(notice);
  }
  await runtime.noticesHeld(heldKeys);
}

/**
 * One record as the previous process left it: its turn taken back (`turn`), settled (it was
 * running, or a deeper agent's was queued), or its notice given if it never was. Returns the
 * run whose live messages stay (a run still at work, or one that left no trace).
 */
async function settleRecord(
  runtime: TreeRuntime,
  state: ChildState,
  turn: RunningTurn | undefined,
  unsettled: boolean,
  reads: Map<string, RunRead>,
): Promise<string | undefined> {
  const { record } = state;
  if (turn) {
    await runtime.dispatch(state, { type: "reattached", turn, parts: record.runningParts ?? [] });
    return turn.runName;
  }
  if (record.status === "pending_init" && record.parent === runtime.self) return undefined;
  if (unsettled) return settleLeftTurn(runtime, state, reads.get(runDirOf(runtime, record) ?? "") ?? {});
  await giveUnnoticed(runtime, state);
  return undefined;
}

/**
 * The turns of `records` still at work: this process's own children's are taken back
 * (`attached`); a deeper agent's, or any agent's below a turn still at work, belong to the
 * process of that turn and are left as they are (`untouched`). Never waits for a turn.
 */
async function liveTurns(
  runtime: TreeRuntime,
  records: readonly AgentRecordV1[],
): Promise<{ attached: Map<string, RunningTurn>; untouched: Set<string> }> {
  const attached = new Map<string, RunningTurn>();
  const busy = new Set<string>();
  for (const record of records) {
    if (record.status !== "running") continue;
    const runDir = runDirOf(runtime, record);
    if (!runDir) continue;
    if (record.parent === runtime.self) {
      const turn = await runtime.turns.attach?.(runDir, runtime.clock).catch(() => undefined);
      if (turn) {
        attached.set(record.path, turn);
        busy.add(record.path);
        // Not waited for: restore never waits on a turn (the checkout may take a while).
        if (record.worktree) void finishLeftCheckout(record.worktree, runDir).catch(() => undefined);
      }
    } else if (await wrapperStillRuns(runDir)) busy.add(record.path);
  }
  const untouched = new Set<string>();
  for (const record of records) {
    const below = [...busy].some((path) => record.path.startsWith(`${path}/`));
    if (below || (busy.has(record.path) && !attached.has(record.path))) untouched.add(record.path);
  }
  return { attached, untouched };
}

async function wrapperStillRuns(runDir: string): Promise<boolean> {
  const wrapper = await readWrapperPid(runDir);
  return wrapper !== undefined && wrapperAtWork(wrapper, runDir);
}

/**
 * The end of a turn the previous process left running or queued, through the lifecycle;
 * returns the run it settled (its live messages are settled with it), if one ran.
 */
async function settleLeftTurn(runtime: TreeRuntime, state: ChildState, read: RunRead): Promise<string | undefined> {
  const { record } = state;
  const found = (await unstartedTurn(runtime, record, read)) ?? foundTurn(runtime, record, read);
  record.followupQueued = false;
  try {
    await runtime.dispatch(state, { type: "restore_found", found, direct: record.parent === runtime.self });
  } catch (err) {
    // Settled here, not on disk: shutdown writes it once more.
    state.unsaved = true;
    runtime.report(`could not record how the turn ${record.path} left running ended: ${errorText(err)}`);
  }
  return found.kind === "running" ? found.runName : undefined;
}

/**
 * A direct child whose last turn's end is recorded but whose notice was never given (the
 * previous process died in between; deliveries.ts): the notice is given now.
 */
async function giveUnnoticed(runtime: TreeRuntime, state: ChildState): Promise<void> {
  const { record } = state;
  const lastRun = record.runs.at(-1);
  if (record.parent !== runtime.self || !lastRun || record.notifiedRun === lastRun) return;
  if (record.lastOutcome === undefined) return;
  if (runtime.deliveries.has(deliveryKey(record.path, lastRun))) {
    // Given, the record not yet told (killed in between): the record catches up.
    record.notifiedRun = lastRun;
    await runtime.tree.writeRecord(record).catch(() => {
      state.unsaved = true;
    });
    return;
  }
  const read = await readRunResult(runDirOf(runtime, record) ?? "").catch((): RunRead => ({}));
  try {
    await runtime.dispatch(state, {
      type: "restore_found",
      found: { kind: "unnoticed", runName: lastRun, result: read.result },
      direct: true,
    });
  } catch (err) {
    runtime.report(`could not give the notice of ${record.path}'s turn ${lastRun}: ${errorText(err)}`);
  }
}

/**
 * A turn recorded running whose wrapper never started (its run left no result and its folder
 * nothing a started wrapper leaves, launcher.ts `runStarted`: the previous process was killed
 * between recording the run and starting it).
 */
async function unstartedTurn(
  runtime: TreeRuntime,
  record: AgentRecordV1,
  read: RunRead,
): Promise<FoundTurn | undefined> {
  const runName = record.runs.at(-1);
  const runDir = runDirOf(runtime, record);
  if (record.status !== "running" || !runName || !runDir || read.result || read.damaged) return undefined;
  if (!runtime.turns.runStarted || (await runtime.turns.runStarted(runDir).catch(() => true))) return undefined;
  return { kind: "unstarted", runName, parts: record.runningParts ?? [] };
}

/** What the record and its run directory say of a turn that was left behind. */
function foundTurn(runtime: TreeRuntime, record: AgentRecordV1, read: RunRead): FoundTurn {
  if (record.status !== "running") return { kind: "queued", turnKind: record.runs.length === 0 ? "spawn" : "followup" };
  const lastRun = record.runs.at(-1);
  if (read.damaged) runtime.report(`${record.path}'s run ${lastRun}: ${read.damaged}; the turn is recorded errored`);
  // A damaged result.json is the run's end all the same: the wrapper wrote one, so the turn is
  // over, and what it holds cannot be trusted — errored (failed), with the damage as the reason.
  const result = read.damaged ? damagedRunResult(read.damaged, lastRun ?? "", runtime.clock) : read.result;
  return {
    kind: "running",
    runName: lastRun,
    result,
    alreadyNotified:
      record.notifiedRun === lastRun ||
      (lastRun !== undefined && runtime.deliveries.has(deliveryKey(record.path, lastRun))),
    parts: record.runningParts ?? [],
  };
}

/**
 * Drops the live messages that their runs confirmed (events.jsonl `message_delivered`), so a
 * restarted parent never gives one twice; the others stay for the next turn. `keepRun`: a run
 * whose turn left no trace in the session, so what it read is given again.
 */
async function reconcileRecord(runtime: TreeRuntime, state: ChildState, keepRun: string | undefined): Promise<void> {
  const { record } = state;
  try {
    let dropped = 0;
    for (const run of liveRuns(record)) {
      if (run === keepRun) continue;
      const runDir = path.join(runtime.tree.agentDir(record.path), TREE_FILES.runs, run);
      dropped += dropConfirmed(record, run, await runtime.turns.deliveredIds(runDir).catch(() => new Set<string>()));
    }
    if (dropped > 0) await runtime.tree.writeRecord(record);
  } catch (err) {
    state.unsaved = true;
    runtime.report(`could not record which live messages ${record.path} read: ${errorText(err)}`);
  }
}

/** The root's fallback when its tree directory is gone: records rebuilt from its session, written back. */
async function fromSessionEntries(runtime: TreeRuntime, sessionEntries: readonly unknown[]): Promise<AgentRecordV1[]> {
  const tree = runtime.tree;
  const { records, refused } = recordsFromEntries(sessionEntries, runtime.clock);
  for (const entry of refused)
    runtime.report(
      `the session's record of ${errorValue(entry.path)} is damaged: ${entry.problem} — the agent is skipped`,
    );
  // The tree directory was removed: made again for them (a failure is reported per record below).
  if (records.length > 0) await tree.ensure().catch(() => undefined);
  for (const record of records) {
    try {
      await tree.claimPath(record.path);
      await tree.claimNickname(record.nickname, record.path);
      await tree.claimSpawn(Number.MAX_SAFE_INTEGER, record.path);
      await tree.writeRecord(record);
    } catch (err) {
      runtime.report(`could not write ${record.path}'s record back from the session: ${errorText(err)}`);
    }
  }
  return records;
}

function runDirOf(runtime: TreeRuntime, record: AgentRecordV1): string | undefined {
  const lastRun = record.runs.at(-1);
  return lastRun ? path.join(runtime.tree.agentDir(record.path), TREE_FILES.runs, lastRun) : undefined;
}

/** Stands in for a result.json that is damaged: the turn failed, for the reason `damaged`. */
function damagedRunResult(damaged: string, runName: string, clock: Clock): ResultV1 {
  const now = isoNow(clock);
  return {
    version: 1,
    runId: runName,
    status: "failed",
    exitCode: 1,
    finalText: "",
    usage: emptyUsage(),
    turns: 0,
    toolCalls: 0,
    startedAt: now,
    endedAt: now,
    durationMs: 0,
    childExitCode: null,
    childSignal: null,
    forcedExit: false,
    errorMessage: `the run's ${damaged}`,
  };
}

/**
 * A direct child's worktree after a restart: an agent that was not closed keeps it, recreated
 * from its branch when the folder went missing; a closed agent's worktree that is still there
 * (its close was cut short) is removed as close_agent would. A failure here is left for the
 * agent's next turn to report (it cannot start without its worktree).
 */
async function restoreWorktree(runtime: TreeRuntime, record: AgentRecordV1): Promise<void> {
  const worktree = record.worktree;
  if (!worktree) return;
  if (record.status !== "shutdown") await runtime.worktrees.turnCwd(worktree).catch(() => undefined);
  else if (fs.existsSync(worktree.path)) await runtime.worktrees.remove(worktree).catch(() => undefined);
}
