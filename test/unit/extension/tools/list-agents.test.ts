import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { afterEach, describe, expect, it } from "vitest";
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
