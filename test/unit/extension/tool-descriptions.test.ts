import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { LIMITS } from "../../../src/contracts/tree.js";
import { BUILTIN_CATALOG } from "../../../src/extension/roles/roles.js";
import { closeAgentTool } from "../../../src/extension/tools/close-agent.js";
import type { ToolDeps } from "../../../src/extension/tools/common.js";
import { followupTaskTool } from "../../../src/extension/tools/followup-task.js";
import { getAgentReportTool } from "../../../src/extension/tools/get-agent-report.js";
import { interruptAgentTool } from "../../../src/extension/tools/interrupt-agent.js";
import { listAgentsTool } from "../../../src/extension/tools/list-agents.js";
import { listModelsTool } from "../../../src/extension/tools/list-models.js";
import { sendMessageTool } from "../../../src/extension/tools/send-message.js";
import { describeDuration, spawnAgentTool } from "../../../src/extension/tools/spawn-agent.js";
import { waitAgentTool } from "../../../src/extension/tools/wait-agent.js";

const deps: ToolDeps = {
  pi: {} as ExtensionAPI,
  runtime: () => {
    throw new Error("not used");
  },
};

const tools = [
  listModelsTool,
  spawnAgentTool,
  waitAgentTool,
  listAgentsTool,
  sendMessageTool,
  followupTaskTool,
  interruptAgentTool,
  closeAgentTool,
  getAgentReportTool,
].map((make) => make(deps) as { name: string; description: string; parameters: { properties: Record<string, { description?: string }> } });

describe("the tool descriptions the model reads", () => {
  it("describe every tool and every parameter", () => {
    expect(tools.map((tool) => tool.name)).toHaveLength(9);
    for (const tool of tools) {
      expect(tool.description.length, tool.name).toBeGreaterThan(40);
      for (const [name, schema] of Object.entries(tool.parameters.properties)) {
        expect(schema.description, `${tool.name}.${name}`).toMatch(/\S/);
      }
    }
  });

  it("state the bounds of notices and pages", () => {
    const text = (name: string) => tools.find((tool) => tool.name === name)!.description;
    expect(text("wait_agent")).toContain(`at most ${LIMITS.maxMessageChars} characters`);
    expect(text("wait_agent")).toContain(`at most ${LIMITS.noticesPerWait} per call`);
    expect(text("get_agent_report")).toContain(`at most ${LIMITS.reportPageChars} characters`);
    expect(text("list_agents")).toContain("under 50 KiB");
    expect(text("send_message")).toContain(`at most ${LIMITS.maxMessageChars} characters`);
  });

  it("send_message says its two deliveries, one sentence each", () => {
    const text = tools.find((tool) => tool.name === "send_message")!.description;
    const sentences = text.split(/(?<=\.) /);
    expect(sentences.filter((s) => s.includes('"live"'))).toEqual([
      'Running child: delivered "live", read before its next model request, after the tool calls it is running.',
    ]);
    expect(sentences.filter((s) => s.includes('"queued"'))).toEqual(['Otherwise "queued": read at the start of its next turn (followup_task starts one).']);
  });

  it("spawn_agent and wait_agent say how to bring an isolated child's work in, and list_agents shows its branch", () => {
    const text = (name: string) => tools.find((tool) => tool.name === name)!.description;
    for (const name of ["spawn_agent", "wait_agent"]) {
      expect(text(name)).toContain("git diff <base_commit> <head_commit> | git apply --3way");
      expect(text(name)).toContain("a plain `git merge <branch>` would also bring the uncommitted work its base holds");
    }
    const spawn = tools.find((tool) => tool.name === "spawn_agent")!;
    expect(spawn.parameters.properties.isolation?.description).toMatch(/^`none` \(default, or the role's default\).*`worktree`/);
    expect(text("list_agents")).toContain("branch for an agent in its own git worktree");
    expect(text("close_agent")).toContain("a branch that holds commits stays, one with none is deleted");
  });

  it("spawn_agent states the limits the runtime applies, not only the defaults", () => {
    const standard = spawnAgentTool(deps, BUILTIN_CATALOG, { maxActiveChildTurns: 3, maxDepth: 3, maxSpawns: 64, turnTimeoutMs: 30 * 60_000 });
    expect(standard.description).toContain("3 turns of your children run at once");
    expect(standard.description).toContain("3 levels below the root, 64 spawns per tree");
    expect(standard.description).toContain("each turn at most 30 minutes");
    const configured = spawnAgentTool(deps, BUILTIN_CATALOG, { maxActiveChildTurns: 2, maxDepth: 5, maxSpawns: 10, turnTimeoutMs: 90_000 });
    expect(configured.description).toContain("2 turns of your children run at once");
    expect(configured.description).toContain("5 levels below the root, 10 spawns per tree");
    expect(configured.description).toContain("each turn at most 90 seconds");
  });

  it("words a turn limit the way a person would", () => {
    expect(describeDuration(60_000)).toBe("1 minute");
    expect(describeDuration(1_800_000)).toBe("30 minutes");
    expect(describeDuration(1000)).toBe("1 second");
    expect(describeDuration(1500)).toBe("1500 milliseconds");
  });
});
