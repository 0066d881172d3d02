/**
 * The new agent's record (agent.json), built from the checked spawn plan and what the spawn's
 * steps claimed and made: the agent waits for its first turn, whose prompt is the spawn's message.
 */
import type { ResolvedRunner } from "../../contracts/runners.js";
import type { AgentRecordV1, AgentWorktreeV1, FallbackModel } from "../../contracts/tree.js";
import { emptyUsage } from "../../contracts/usage.js";
import { modelRef } from "../roles/models.js";
import type { SpawnPlan } from "./validate.js";

export interface RecordParts {
  nickname: string;
  spawnSeq: number;
  sessionPath: string;
  activeTools: string[];
  extensions: string[];
  forkTranscript: string | undefined;
  worktree: AgentWorktreeV1 | undefined;
  runner: ResolvedRunner | undefined;
  verify: AgentRecordV1["verify"];
  /** When the record is made (ISO 8601, on the runtime's clock). */
  spawnedAt: string;
}

/** The new agent's record: waiting for its first turn, whose prompt is the spawn's message. */
export function newRecord(
  parent: string,
  plan: SpawnPlan & { fallbacks: FallbackModel[] },
  parts: RecordParts,
): AgentRecordV1 {
  const now = parts.spawnedAt;
  const { forkTranscript, worktree } = parts;
  return {
    version: 1,
    kind: "agent",
    path: plan.path,
    parent,
    taskName: plan.taskName,
    nickname: parts.nickname,
    role: plan.role,
    ...(plan.roleInfo && plan.roleInfo.source !== "builtin" && { agentSource: plan.roleInfo.source }),
    model: modelRef(plan.model),
    reasoning: plan.reasoning,
    activeTools: parts.activeTools,
    extensions: parts.extensions,
    status: "pending_init",
    health: "healthy",
    sessionPath: parts.sessionPath,
    runs: [],
    usage: emptyUsage(),
    spawnSeq: parts.spawnSeq,
    spawnedAt: now,
    updatedAt: now,
    inbox: [{ kind: "NEW_TASK", from: parent, text: plan.message, sentAt: now }],
    followupQueued: false,
    undelivered: [],
    ...(forkTranscript !== undefined && { forkTranscript }),
    ...(worktree && { worktree }),
    ...(Object.keys(plan.limits).length > 0 && { limits: plan.limits }),
    ...(plan.fallbacks.length > 0 && { fallbacks: plan.fallbacks }),
    ...(parts.runner && { runner: parts.runner }),
    ...(parts.verify && { verify: parts.verify }),
  };
}
