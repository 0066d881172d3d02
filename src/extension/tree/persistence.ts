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
import type { AgentRecordV1 } from "../../contracts/tree.js";
import { healthForOutcome, statusForOutcome } from "../../contracts/tree.js";
import { addUsage, emptyUsage } from "../../contracts/usage.js";
import { ORPHAN_WRAPPER_WAIT_MS } from "../turns/launcher.js";
import { turnEndNotice } from "../turns/notices.js";
import { saveReport } from "../turns/reports.js";
import type { TreeRuntime } from "../turns/runtime.js";
import { finishWorktreeTurn } from "../turns/worktree-turns.js";

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

/** Rebuilds records from the session's entries (the latest entry per agent wins). */
export function recordsFromEntries(entries: readonly unknown[]): AgentRecordV1[] {
  const latest = new Map<string, Record<string, unknown>>();
  for (const entry of entries) {
    const e = entry as { type?: string; customType?: string; data?: Record<string, unknown> };
    if (e.type === "custom" && e.customType === ENTRY_TYPE && e.data?.kind === "agent" && typeof e.data.path === "string") latest.set(e.data.path, e.data);
  }
  return [...latest.values()].map((data) => ({
    ...(data as unknown as AgentRecordV1),
    version: 1,
    kind: "agent",
    usage: emptyUsage(),
    updatedAt: new Date().toISOString(),
    inbox: [],
    followupQueued: false,
    undelivered: [],
  }));
}

/** Loads this process's direct children and settles turns that were running when their parent went away. */
export async function restore(runtime: TreeRuntime, sessionEntries: readonly unknown[]): Promise<void> {
  const tree = runtime.tree;
  let records = await tree.subtree(runtime.self);
  if (records.length === 0 && runtime.identity.isRoot) {
    records = recordsFromEntries(sessionEntries);
    for (const record of records) {
      await tree.claimPath(record.path);
      await tree.claimNickname(record.nickname, record.path);
      await tree.claimSpawn(Number.MAX_SAFE_INTEGER, record.path);
      await tree.writeRecord(record);
    }
  }
  for (const record of records) {
    const direct = record.parent === runtime.self;
    // Deeper agents belong to processes that are gone when the root restarts; a child only settles its own.
    if (!direct && !runtime.identity.isRoot) continue;
    if (record.status === "running" || record.status === "pending_init") await settleOrphan(runtime, record, direct);
    if (direct) {
      await restoreWorktree(runtime, record);
      runtime.children.set(record.path, { record });
    }
  }
}

async function settleOrphan(runtime: TreeRuntime, record: AgentRecordV1, direct: boolean): Promise<void> {
  const lastRun = record.runs.at(-1);
  const runDir = lastRun ? path.join(runtime.tree.agentDir(record.path), TREE_FILES.runs, lastRun) : undefined;
  const result = record.status === "running" && runDir ? await runtime.turns.settledResult(runDir, ORPHAN_WRAPPER_WAIT_MS) : undefined;
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
    if (result.status === "interrupted" && result.turns === 0) record.undelivered = [...(record.runningParts ?? []), ...record.undelivered];
    const report = await saveReport(runtime.tree.agentDir(record.path), {
      runId: result.runId,
      turn: record.runs.length,
      outcome: result.status,
      text: result.finalText,
    }).catch(() => undefined);
    // What the turn left in an isolated agent's worktree is committed before the notice tells it.
    const worktree = await finishWorktreeTurn(runtime.worktrees, record, `${result.status} (committed when its parent came back)`);
    if (direct) {
      runtime.notify(
        turnEndNotice(record, { outcome: result.status, reason: record.lastReason, text: result.finalText, reportStored: report !== undefined, worktree }),
      );
    }
  } else {
    if (!result || result.turns === 0) record.undelivered = [...(record.runningParts ?? []), ...record.undelivered];
    if (record.status === "running" && !result) record.lastReason = "the parent went away and the turn's wrapper left no result.json";
    record.status = "interrupted";
    record.lastTurnStatus = "interrupted";
    record.lastOutcome ??= "interrupted";
    if (lastRun && fs.existsSync(record.worktree?.path ?? "")) await finishWorktreeTurn(runtime.worktrees, record, "interrupted (its parent went away)");
  }
  record.runningParts = undefined;
  record.followupQueued = false;
  await runtime.tree.writeRecord(record);
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
