/**
 * The root's session records of its agents: the `pi-subagents` entries the root appends to
 * its session, and the records rebuilt from them. The tree directory is the source of truth;
 * these are restore's fallback when it is gone (turns/restore.ts).
 */
import type { AgentRecordV1 } from "../../contracts/tree.js";
import { checkAgentRecord } from "../../contracts/tree.js";
import { emptyUsage } from "../../contracts/usage.js";
import { type Clock, isoNow, systemClock } from "../../lib/clock.js";

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
    // Its limits: a follow-up after a restore from these entries runs with the same ones.
    limits: record.limits,
  };
}

/** Rebuilds records from the session's entries (the latest entry per agent wins); entries that make no sound record are left out. */
export function recordsFromEntries(
  entries: readonly unknown[],
  clock: Clock = systemClock,
): {
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
      updatedAt: isoNow(clock),
      inbox: [],
      followupQueued: false,
      undelivered: [],
    });
    if (checked.ok) records.push(checked.record);
    else refused.push({ path: data.path as string, problem: checked.problem });
  }
  return { records, refused };
}
