import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { LIMITS } from "../../../../src/contracts/tree.js";
import { BUILTIN_CATALOG } from "../../../../src/extension/roles/roles.js";
import { closeAgentTool } from "../../../../src/extension/tools/close-agent.js";
import type { ToolDeps } from "../../../../src/extension/tools/common.js";
import { followupTaskTool } from "../../../../src/extension/tools/followup-task.js";
import { getAgentReportTool } from "../../../../src/extension/tools/get-agent-report.js";
import { interruptAgentTool } from "../../../../src/extension/tools/interrupt-agent.js";
import { listAgentsTool } from "../../../../src/extension/tools/list-agents.js";
import { listModelsTool } from "../../../../src/extension/tools/list-models.js";
import { sendMessageTool } from "../../../../src/extension/tools/send-message.js";
import { describeDuration, spawnAgentTool } from "../../../../src/extension/tools/spawn-agent.js";
import { waitAgentTool } from "../../../../src/extension/tools/wait-agent.js";
import { truncationMarker } from "../../../../src/extension/turns/delivery/bounds.js";

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
].map((make) => make(deps) as Described);

type Described = {
  name: string;
  description: string;
  parameters: { properties: Record<string, { description?: string }> };
};

const toolNamed = (name: string): Described => tools.find((tool) => tool.name === name)!;
/** A tool's description and its parameters' descriptions: everything of it the model reads. */
const said = (name: string): string => {
  const tool = toolNamed(name);
  return [tool.description, ...Object.values(tool.parameters.properties).map((schema) => schema.description)].join(" ");
};
const param = (tool: string, name: string): string => toolNamed(tool).parameters.properties[name]!.description!;

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

  it("state the bounds of messages, pages, stored reports, lists and waits", () => {
    // How to read the rest of a cut report: the cut itself says so, where the model reads it.
    expect(truncationMarker(1)).toContain("get_agent_report has the full text");
    expect(toolNamed("wait_agent").description).toContain(
      `≤${LIMITS.noticesPerWait} per call (pending counts the rest)`,
    );
    expect(param("wait_agent", "timeout_ms")).toBe(
      `Default ${LIMITS.waitDefaultMs}, clamped to 0…${LIMITS.waitMaxMs}; 0 = just look.`,
    );
    expect(param("send_message", "message")).toContain(`≤${LIMITS.maxMessageChars} chars`);
    expect(toolNamed("get_agent_report").description).toContain(`≤${LIMITS.reportPageChars} chars a page`);
    expect(toolNamed("get_agent_report").description).toContain(
      `≤${LIMITS.reportChars} chars, newest ${LIMITS.reportsKept}`,
    );
    expect(toolNamed("list_agents").description).toContain(
      `≤${LIMITS.listAgentsBytes / 1024} KiB; omitted counts the rest`,
    );
    expect(param("spawn_agent", "task_name")).toContain(
      `[a-z0-9_]{1,${LIMITS.taskNameChars}}, unique among your children`,
    );
  });

  it("state each refusal rule the model can avoid, once, in the tool it concerns", () => {
    // spawn_agent: names, forks, roles, models, reasoning; the budget also stops follow-ups.
    expect(param("spawn_agent", "fork_turns")).toBe(
      "none, all (default) or your N latest turns; any agent_type needs none or N.",
    );
    expect(param("spawn_agent", "agent_type")).toContain("`scout` (Cheap read-only search; needs fork_turns none.)");
    expect(param("spawn_agent", "model")).toContain("provider/id (list_models)");
    expect(param("spawn_agent", "reasoning_effort")).toContain("A list_models level");
    expect(toolNamed("spawn_agent").description).toContain("No spawn or follow-up once the tree budget is spent.");
    for (const tool of ["spawn_agent", "send_message", "followup_task"])
      expect(param(tool, "message"), tool).toMatch(/verbatim/);
    // Who a tool may act on.
    for (const tool of ["followup_task", "interrupt_agent", "close_agent"])
      expect(param(tool, "target"), tool).toBe("Direct child.");
    expect(param("send_message", "target")).toBe("Direct child, or your parent.");
    for (const tool of ["wait_agent", "get_agent_report"])
      expect(param(tool, "target"), tool).toContain("of your subtree");
    // Shut down is final; an interrupted child resumes, and a task it never saw goes first.
    expect(toolNamed("close_agent").description).toContain("for good");
    expect(toolNamed("interrupt_agent").description).toContain("followup_task resumes it");
    expect(toolNamed("followup_task").description).toContain("queued messages and an interrupted task go first");
    // Damaged records, report turns and pages.
    expect(toolNamed("list_agents").description).toContain("Agents in damaged cannot be acted on.");
    expect(param("get_agent_report", "offset")).toContain("next_offset (default 0)");
    expect(param("get_agent_report", "turn")).toContain("0 = latest (default)");
    expect(toolNamed("get_agent_report").description).toContain("available: false");
  });

  it("wait_agent says when it returns, and how it gives way to the user", () => {
    const text = toolNamed("wait_agent").description;
    expect(text).toContain("pending ones at once, else the next");
    expect(text).toContain("idle: true if none is working");
    expect(text).toContain("user_message_pending: true (answer the user; notices stay)");
    expect(param("wait_agent", "target")).toBe("Agent of your subtree (default: any child).");
    // One wait for many: the mode, and whom it waits for.
    expect(param("wait_agent", "all")).toBe("true: wait until every working child (or target) ends.");
    expect(param("wait_agent", "targets")).toBe("Direct children.");
  });

  it("send_message says it starts no turn and its two deliveries", () => {
    const text = toolNamed("send_message").description;
    expect(text).toContain("starts no turn");
    expect(text).toContain(
      "A running child reads it live before its next model request, else queued for its next turn.",
    );
    expect(toolNamed("list_agents").description).toContain("pending_messages (unread)");
  });

  it("spawn_agent says what isolation does and how to bring an isolated child's work in, once for all nine tools", () => {
    const isolation = param("spawn_agent", "isolation");
    expect(isolation).toBe(
      "none (default or the role's) or worktree: own git worktree and branch, a commit per turn. Take its work with the notice's merge_hint, not git merge.",
    );
    const everything = tools.map((tool) => said(tool.name)).join(" ");
    expect(everything.split("merge_hint")).toHaveLength(2);
    expect(toolNamed("close_agent").description).toContain(
      "Worktrees go (leftovers committed); branches with commits stay.",
    );
  });

  it("spawn_agent states the limits the runtime applies, not only the defaults", () => {
    const standard = spawnAgentTool(deps, BUILTIN_CATALOG, {
      maxActiveChildTurns: 3,
      maxDepth: 3,
      maxSpawns: 64,
      turnTimeoutMs: 30 * 60_000,
    });
    expect(standard.description).toContain(
      "Limits: 3 running local turns of your children (more queue), depth 3, 64 spawns per tree.",
    );
    const configured = spawnAgentTool(deps, BUILTIN_CATALOG, {
      maxActiveChildTurns: 2,
      maxDepth: 5,
      maxSpawns: 10,
      turnTimeoutMs: 90_000,
    });
    expect(configured.description).toContain(
      "Limits: 2 running local turns of your children (more queue), depth 5, 10 spawns per tree.",
    );
    expect(param("spawn_agent", "limits")).toContain("time_limit (s, default 30 minutes)");
    // A wrapped-up turn is not finished work: the parameter that sets limits says how to tell.
    expect(param("spawn_agent", "limits")).toContain("Reached: it wraps up (notice limit: partial work).");
    expect((configured.parameters.properties.limits as { description?: string }).description).toContain(
      "time_limit (s, default 90 seconds)",
    );
  });

  it("words a turn limit the way a person would", () => {
    expect(describeDuration(60_000)).toBe("1 minute");
    expect(describeDuration(1_800_000)).toBe("30 minutes");
    expect(describeDuration(1000)).toBe("1 second");
    expect(describeDuration(1500)).toBe("1500 milliseconds");
  });
});
