/**
 * Restore on session_start, and the root's session records. The tree directory is the
 * source of truth; the session's `pi-subagents` entries are the fallback when it is gone.
 * A process ending never turns a finished agent into `shutdown`: only close_agent does, so a
 * restarted parent can still follow up on its children. A turn that was running when its
 * parent went away ends as its result.json says, or `interrupted` when there is none, and its
 * notice is given once. An isolated agent's worktree is kept (recreated from its branch when it
 * went missing) unless the agent was closed, and what a settled turn left in it is committed.
 */
import fs from "node:fs";
import path from "node:path";
import { TREE_FILES } from "../../contracts/layout.js";
import type { ResultV1 } from "../../contracts/result.js";
import type { AgentRecordV1 } from "../../contracts/tree.js";
import { checkAgentRecord, healthForOutcome, statusForOutcome } from "../../contracts/tree.js";
import { addUsage, emptyUsage } from "../../contracts/usage.js";
import { errorValue } from "../../lib/text.js";
import { errorText } from "../../lib/values.js";
import { ORPHAN_WRAPPER_WAIT_MS, type RunRead } from "../turns/launcher.js";
import { dropConfirmed, liveRuns } from "../turns/live-messages.js";
import { turnEndNotice } from "../turns/notices.js";
import { saveReport } from "../turns/reports.js";
import type { TreeRuntime } from "../turns/runtime.js";
import { finishWorktreeTurn } from "../turns/worktree-turns.js";
import { parentOf } from "./paths.js";

export const ENTRY_TYPE = "pi-subagents";

/** The small record the root keeps in its session for each agent. */
export function agentEntry(record: AgentRecordV1): Record<string, unknown> {
  return {
    kind: "agent",
    path: record.path,
    parent: record.parent,
    taskName: record.taskName,
    nickname: record.nickname,
    role: record.role,
    agentSource: record.agentSource,
    model: record.model,
    reasoning: record.reasoning,
    status: record.status,
    health: record.health,
    lastOutcome: record.lastOutcome,
    lastTurnStatus: record.lastTurnStatus,
    activeTools: record.activeTools,
    extensions: record.extensions,
    sessionPath: record.sessionPath,
    runs: record.runs,
    runDir: record.runs.at(-1),
    spawnSeq: record.spawnSeq,
    spawnedAt: record.spawnedAt,
    notifiedRun: record.notifiedRun,
    // Where an isolated agent works: with the tree directory gone, restore recreates it from its branch.
    worktree: record.worktree,
  };
}

/** Rebuilds records from the session's entries (the latest entry per agent wins); entries that make no sound record are left out. */
export function recordsFromEntries(entries: readonly unknown[]): {
  records: AgentRecordV1[];
  refused: Array<{ path: string; problem: string }>;
} {
  const latest = new Map<string, Record<string, unknown>>();
  for (const entry of entries) {
    const e = entry as { type?: string; customType?: string; data?: Record<string, unknown> } | null;
    if (
      e?.type === "custom" &&
      e.customType === ENTRY_TYPE &&
      e.data?.kind === "agent" &&
      typeof e.data.path === "string"
    )
      latest.set(e.data.path, e.data);
  }
  const records: AgentRecordV1[] = [];
  const refused: Array<{ path: string; problem: string }> = [];
  for (const data of latest.values()) {
    const { runDir: _runDir, ...fields } = data;
    const checked = checkAgentRecord({
      ...fields,
      version: 1,
      kind: "agent",
      usage: emptyUsage(),
      updatedAt: new Date().toISOString(),
      inbox: [],
      followupQueued: false,
      undelivered: [],
    });
    if (checked.ok) records.push(checked.record);
    else refused.push({ path: data.path as string, problem: checked.problem });
  }
  return { records, refused };
}

/**
 * session_start: loads this process's direct children and settles turns that were running
 * when their parent went away. It never throws — a session must start whatever the tree
 * directory holds: a damaged record is reported once (TreeDir) and its agent skipped, a
 * record that cannot be settled or written is reported and kept as read, and the rest of
 * the tree restores.
 */
export async function restore(runtime: TreeRuntime, sessionEntries: readonly unknown[]): Promise<void> {
  try {
    await restoreTree(runtime, sessionEntries);
  } catch (err) {
    runtime.report(`the agent tree of ${runtime.tree.root} could not be restored: ${errorText(err)}`);
  }
}

async function restoreTree(runtime: TreeRuntime, sessionEntries: readonly unknown[]): Promise<void> {
  const tree = runtime.tree;
  const scan = await tree.scan(runtime.self);
  for (const damage of scan.damaged) {
    if (damage.agentPath && parentOf(damage.agentPath) === runtime.self)
      runtime.damaged.set(damage.agentPath, damage.problem);
  }
  let records = scan.records;
  if (records.length === 0 && scan.damaged.length === 0 && runtime.identity.isRoot)
    records = await fromSessionEntries(runtime, sessionEntries);
  // Deeper agents belong to processes that are gone when the root restarts; a child only settles its own.
  const mine = records.filter((record) => record.parent === runtime.self || runtime.identity.isRoot);
  const unsettled = mine.filter((record) => record.status === "running" || record.status === "pending_init");
  // Every wrapper that may still be finishing is waited for at once, to one deadline.
  const runDirs = unsettled.flatMap((record) =>
    record.status === "running" && record.runs.length > 0 ? [runDirOf(runtime, record)!] : [],
  );
  const reads =
    runDirs.length > 0
      ? await runtime.turns.settledResults(runDirs, ORPHAN_WRAPPER_WAIT_MS)
      : new Map<string, RunRead>();
  for (const record of mine) {
    const direct = record.parent === runtime.self;
    let unsaved = false;
    let requeued = false;
    if (unsettled.includes(record)) {
      try {
        requeued = await settleOrphan(runtime, record, direct, reads.get(runDirOf(runtime, record) ?? "") ?? {});
      } catch (err) {
        // Settled here, not on disk: shutdown writes it once more.
        unsaved = true;
        runtime.report(`could not record how the turn ${record.path} left running ended: ${errorText(err)}`);
      }
    }
    try {
      if (await reconcileLiveMessages(runtime, record, requeued ? record.runs.at(-1) : undefined))
        await tree.writeRecord(record);
    } catch (err) {
      unsaved = true;
      runtime.report(`could not record which live messages ${record.path} read: ${errorText(err)}`);
    }
    if (direct) {
      await restoreWorktree(runtime, record);
      runtime.children.set(record.path, { record, ...(unsaved && { unsaved }) });
    }
  }
}

/** The root's fallback when its tree directory is gone: records rebuilt from its session, written back. */
async function fromSessionEntries(runtime: TreeRuntime, sessionEntries: readonly unknown[]): Promise<AgentRecordV1[]> {
  const tree = runtime.tree;
  const { records, refused } = recordsFromEntries(sessionEntries);
  for (const entry of refused)
    runtime.report(
      `the session's record of ${errorValue(entry.path)} is damaged: ${entry.problem} — the agent is skipped`,
    );
  const written: AgentRecordV1[] = [];
  for (const record of records) {
    try {
      await tree.claimPath(record.path);
      await tree.claimNickname(record.nickname, record.path);
      await tree.claimSpawn(Number.MAX_SAFE_INTEGER, record.path);
      await tree.writeRecord(record);
      written.push(record);
    } catch (err) {
      runtime.report(`could not write ${record.path}'s record back from the session: ${errorText(err)}`);
      written.push(record);
    }
  }
  return written;
}

function runDirOf(runtime: TreeRuntime, record: AgentRecordV1): string | undefined {
  const lastRun = record.runs.at(-1);
  return lastRun ? path.join(runtime.tree.agentDir(record.path), TREE_FILES.runs, lastRun) : undefined;
}

/**
 * Drops the live messages that their runs confirmed (events.jsonl `message_delivered`), so a
 * restarted parent never gives one twice; the others stay for the next turn. `keepRun`: a run
 * whose turn left no trace in the session, so what it read is given again. Whether anything changed.
 */
async function reconcileLiveMessages(
  runtime: TreeRuntime,
  record: AgentRecordV1,
  keepRun: string | undefined,
): Promise<boolean> {
  let dropped = 0;
  for (const run of liveRuns(record)) {
    if (run === keepRun) continue;
    const delivered = await runtime.turns
      .deliveredIds(path.join(runtime.tree.agentDir(record.path), TREE_FILES.runs, run))
      .catch(() => new Set<string>());
    dropped += dropConfirmed(record, run, delivered);
  }
  return dropped > 0;
}

/** Settles a turn its parent's previous process left running or queued; whether its prompt goes again (it left no trace). */
async function settleOrphan(
  runtime: TreeRuntime,
  record: AgentRecordV1,
  direct: boolean,
  read: RunRead,
): Promise<boolean> {
  let requeued = false;
  const lastRun = record.runs.at(-1);
  if (read.damaged) runtime.report(`${record.path}'s run ${lastRun}: ${read.damaged}; the turn is recorded errored`);
  // A damaged result.json is the run's end all the same: the wrapper wrote one, so the turn is
  // over, and what it holds cannot be trusted — errored (failed), with the damage as the reason.
  const result: ResultV1 | undefined =
    record.status !== "running"
      ? undefined
      : read.damaged
        ? damagedRunResult(read.damaged, lastRun ?? "")
        : read.result;
  if (result && record.notifiedRun !== lastRun) {
    addUsage(record.usage, result.usage);
    record.lastOutcome = result.status;
    record.lastReason = result.errorMessage ?? result.abortReason;
    record.status = statusForOutcome(result.status);
    record.health = healthForOutcome(result.status);
    record.lastTurnStatus = record.status;
    record.notifiedRun = lastRun;
    // Stopped (its parent went away) before any assistant message reached the session: pi never
    // wrote the prompt there, so it goes first with the next turn, as for a live interrupt.
    if (result.status === "interrupted" && result.turns === 0) {
      record.undelivered = [...(record.runningParts ?? []), ...record.undelivered];
      requeued = true;
    }
    const report = await saveReport(runtime.tree.agentDir(record.path), {
      runId: result.runId,
      turn: record.runs.length,
      outcome: result.status,
      text: result.finalText,
    }).catch(() => undefined);
    // What the turn left in an isolated agent's worktree is committed before the notice tells it.
    const worktree = await finishWorktreeTurn(
      runtime.worktrees,
      record,
      `${result.status} (committed when its parent came back)`,
    );
    if (direct) {
      runtime.notify(
        turnEndNotice(record, {
          outcome: result.status,
          reason: record.lastReason,
          text: result.finalText,
          reportStored: report !== undefined,
          worktree,
        }),
      );
    }
  } else {
    if (!result || result.turns === 0) {
      record.undelivered = [...(record.runningParts ?? []), ...record.undelivered];
      requeued = true;
    }
    if (record.status === "running" && !result)
      record.lastReason = "the parent went away and the turn's wrapper left no result.json";
    record.status = "interrupted";
    record.lastTurnStatus = "interrupted";
    record.lastOutcome ??= "interrupted";
    if (lastRun && fs.existsSync(record.worktree?.path ?? ""))
      await finishWorktreeTurn(runtime.worktrees, record, "interrupted (its parent went away)");
  }
  record.runningParts = undefined;
  record.followupQueued = false;
  await runtime.tree.writeRecord(record);
  return requeued;
}

/** Stands in for a result.json that is damaged: the turn failed, for the reason `damaged`. */
function damagedRunResult(damaged: string, runName: string): ResultV1 {
  const now = new Date().toISOString();
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
