import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { afterEach, describe, expect, it } from "vitest";
import { TREE_FILES } from "../../../../src/contracts/layout.js";
import { LIMITS } from "../../../../src/contracts/tree.js";
import { listAgentsTool } from "../../../../src/extension/tools/list-agents.js";
import { agentRecord } from "../../../support/records.js";
import { cleanupRuntimes, runtimeHarness } from "../../../support/runtime-harness.js";

afterEach(cleanupRuntimes);

interface Listed {
  agents: Array<{ agent_name: string; nickname: string }>;
  omitted?: number;
}

describe("list_agents", () => {
  it("stays under its byte limit when names are multi-byte, leaving out the last agents", async () => {
    const h = await runtimeHarness();
    // 200 chars, 600 bytes: 60 such agents are well under the limit in chars, over it in bytes.
    const nickname = "€".repeat(200);
    for (let seq = 1; seq <= 60; seq++) {
      await h.tree.writeRecord(agentRecord({ path: `/root/a${seq}`, nickname: `${nickname}${seq}`, spawnSeq: seq }));
    }
    const tool = listAgentsTool({ pi: {} as ExtensionAPI, runtime: () => h.runtime });
    const result = await tool.execute("call", {}, undefined, undefined, {} as never);
    const text = (result.content[0] as { text: string }).text;
    const listed = result.details as unknown as Listed;

    expect(text.length).toBeLessThan(LIMITS.listAgentsBytes);
    expect(Buffer.byteLength(text, "utf8")).toBeLessThanOrEqual(LIMITS.listAgentsBytes);
    expect(listed.omitted).toBeGreaterThan(0);
    expect(listed.agents.length + listed.omitted!).toBe(60);
    // In spawn order, the last ones left out; the names intact.
    expect(listed.agents.map((agent) => agent.agent_name)).toEqual(
      Array.from({ length: listed.agents.length }, (_, i) => `/root/a${i + 1}`),
    );
    expect(listed.agents[0]!.nickname).toBe(`${nickname}1`);
    // Not cut more than needed: one agent more would be over the limit.
    const oneMore = { ...listed, agents: [...listed.agents, { ...listed.agents[0]! }] };
    expect(Buffer.byteLength(JSON.stringify(oneMore), "utf8")).toBeGreaterThan(LIMITS.listAgentsBytes - 64);
  });
});

describe("list_agents: isolated agents", () => {
  it("shows the branch of an agent that works in its own worktree, and none for the others", async () => {
    const h = await runtimeHarness();
    const worktree = {
      path: "/t/worktrees/writer",
      branch: "subagent/7f3a9c2e-writer",
      baseCommit: "a".repeat(40),
      gitDir: "/r/.git",
      subdir: "",
    };
    await h.tree.writeRecord(agentRecord({ path: "/root/writer", nickname: "A", spawnSeq: 1, worktree }));
    await h.tree.writeRecord(agentRecord({ path: "/root/plain", nickname: "B", spawnSeq: 2 }));
    const tool = listAgentsTool({ pi: {} as ExtensionAPI, runtime: () => h.runtime });
    const result = await tool.execute("call", {}, undefined, undefined, {} as never);
    const agents = (result.details as unknown as { agents: Array<Record<string, unknown>> }).agents;
    expect(agents[0]).toMatchObject({ agent_name: "/root/writer", branch: "subagent/7f3a9c2e-writer" });
    expect(agents[1]).not.toHaveProperty("branch");
  });
});

describe("list_agents: a running turn's use against its limits", () => {
  it("limits_used: each limit the agent has as used/limit (time_limit from the turn limit when unset), wrap_up once one is met; none when not running", async () => {
    const h = await runtimeHarness();
    const runDir = path.join(h.tree.agentDir("/root/capped"), TREE_FILES.runs, "0001-spawn");
    await mkdir(runDir, { recursive: true });
    const usage = {
      input: 100,
      output: 20,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 120,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0.25 },
    };
    const lines = [
      { seq: 1, ts: Date.now() - 5000, type: "run_start", runId: "r", pid: 1, argv: [] },
      { seq: 2, ts: Date.now(), type: "assistant_text", text: "", usage },
      { seq: 3, ts: Date.now(), type: "assistant_text", text: "", usage },
      { seq: 4, ts: Date.now(), type: "limit", phase: "reached", name: "max_turns", value: 2, used: 2 },
    ];
    await writeFile(path.join(runDir, "events.jsonl"), lines.map((l) => `${JSON.stringify(l)}\n`).join(""));
    await h.tree.writeRecord(
      agentRecord({
        path: "/root/capped",
        nickname: "A",
        spawnSeq: 1,
        status: "running",
        runs: ["0001-spawn"],
        limits: { max_turns: 2, max_tokens: 1000, max_cost: 1 },
      }),
    );
    await h.tree.writeRecord(agentRecord({ path: "/root/idle", nickname: "B", spawnSeq: 2, status: "completed" }));
    const tool = listAgentsTool({ pi: {} as ExtensionAPI, runtime: () => h.runtime });
    const result = await tool.execute("call", {}, undefined, undefined, {} as never);
    const agents = (result.details as unknown as { agents: Array<Record<string, unknown>> }).agents;
    const used = agents[0]!.limits_used as Record<string, string>;
    expect(used).toMatchObject({ max_turns: "2/2", max_tokens: "240/1000", max_cost: "0.5/1", wrap_up: "max_turns" });
    expect(used.time_limit).toMatch(new RegExp(`^[45]/${h.runtime.limits.turnTimeoutMs / 1000}$`));
    expect(agents[1]).not.toHaveProperty("limits_used");
  });
});
