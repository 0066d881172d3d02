import type { AgentRecordV1 } from "../../src/contracts/tree.js";
import { emptyUsage } from "../../src/contracts/usage.js";

/** A complete agent record for `/root/worker`; override what a test is about. */
export function agentRecord(overrides: Partial<AgentRecordV1> = {}): AgentRecordV1 {
  const agentPath = overrides.path ?? "/root/worker";
  return {
    version: 1,
    kind: "agent",
    path: agentPath,
    parent: agentPath.slice(0, agentPath.lastIndexOf("/")),
    taskName: agentPath.slice(agentPath.lastIndexOf("/") + 1),
    nickname: "Euclid",
    role: "default",
    model: "fake/fast",
    reasoning: "medium",
    activeTools: [],
    extensions: [],
    status: "completed",
    health: "healthy",
    sessionPath: "",
    runs: [],
    usage: emptyUsage(),
    spawnSeq: 1,
    spawnedAt: "",
    updatedAt: "",
    inbox: [],
    followupQueued: false,
    undelivered: [],
    ...overrides,
  };
}
