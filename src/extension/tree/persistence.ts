/**
 * Restore on session_start, and the root's session records. The tree directory is the
 * source of truth; the session's `pi-subagents` entries are the fallback when it is gone.
 * A process ending never turns a finished agent into `shutdown`: only close_agent does, so a
 * restarted parent can still follow up on its children. A turn that was running when its
 * parent went away ends as its result.json says, or `interrupted` when there is none, and its
 * notice is given once.
 */
import path from "node:path";
import { TREE_FILES } from "../../contracts/layout.js";
import type { AgentRecordV1 } from "../../contracts/tree.js";
import { healthForOutcome, statusForOutcome } from "../../contracts/tree.js";
import { addUsage, emptyUsage } from "../../contracts/usage.js";
import { ORPHAN_WRAPPER_WAIT_MS } from "../turns/launcher.js";
import { dropConfirmed, liveRuns } from "../turns/live-messages.js";
import { turnEndNotice } from "../turns/notices.js";
import { saveReport } from "../turns/reports.js";
import type { TreeRuntime } from "../turns/runtime.js";

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
    const requeued = record.status === "running" || record.status === "pending_init" ? await settleOrphan(runtime, record, direct) : false;
    if (await reconcileLiveMessages(runtime, record, requeued ? record.runs.at(-1) : undefined)) await tree.writeRecord(record);
    if (direct) runtime.children.set(record.path, { record });
  }
}

/**
 * Drops the live messages that their runs confirmed (events.jsonl `message_delivered`), so a
 * restarted parent never gives one twice; the others stay for the next turn. `keepRun`: a run
 * whose turn left no trace in the session, so what it read is given again. Whether anything changed.
 */
async function reconcileLiveMessages(runtime: TreeRuntime, record: AgentRecordV1, keepRun: string | undefined): Promise<boolean> {
  let dropped = 0;
  for (const run of liveRuns(record)) {
    if (run === keepRun) continue;
    const delivered = await runtime.turns.deliveredIds(path.join(runtime.tree.agentDir(record.path), TREE_FILES.runs, run)).catch(() => new Set<string>());
    dropped += dropConfirmed(record, run, delivered);
  }
  return dropped > 0;
}

/** Settles a turn its parent's previous process left running or queued; whether its prompt goes again (it left no trace). */
async function settleOrphan(runtime: TreeRuntime, record: AgentRecordV1, direct: boolean): Promise<boolean> {
  let requeued = false;
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
    if (direct) {
      runtime.notify(turnEndNotice(record, { outcome: result.status, reason: record.lastReason, text: result.finalText, reportStored: report !== undefined }));
    }
  } else {
    if (!result || result.turns === 0) {
      record.undelivered = [...(record.runningParts ?? []), ...record.undelivered];
      requeued = true;
    }
    if (record.status === "running" && !result) record.lastReason = "the parent went away and the turn's wrapper left no result.json";
    record.status = "interrupted";
    record.lastTurnStatus = "interrupted";
    record.lastOutcome ??= "interrupted";
  }
  record.runningParts = undefined;
  record.followupQueued = false;
  await runtime.tree.writeRecord(record);
  return requeued;
}
