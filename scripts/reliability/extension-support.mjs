// What the extension trials share: the runtime from dist/ and agent records as spawn_agent writes them.
import path from "node:path";
import { ROOT } from "./support.mjs";

export const dist = (file) => import(path.join(ROOT, "dist", "extension", file));
export const TREE_LIMITS = { maxActiveChildTurns: 3, maxDepth: 3, maxSpawns: 64, turnTimeoutMs: 60_000 };

/** A record as spawn_agent writes it, for `/root/<name>`. */
export function agentRecord(name, seq, overrides = {}) {
  const usage = {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
  const now = new Date().toISOString();
  return {
    version: 1,
    kind: "agent",
    path: `/root/${name}`,
    parent: "/root",
    taskName: name,
    nickname: `N${seq}`,
    role: "default",
    model: "fake/fast",
    reasoning: "medium",
    activeTools: [],
    extensions: [],
    status: "pending_init",
    health: "healthy",
    sessionPath: "",
    runs: [],
    usage,
    spawnSeq: seq,
    spawnedAt: now,
    updatedAt: now,
    inbox: [{ kind: "NEW_TASK", from: "/root", text: `task ${name}`, sentAt: now }],
    followupQueued: false,
    undelivered: [],
    ...overrides,
  };
}
