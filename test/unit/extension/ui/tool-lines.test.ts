import { visibleWidth } from "@mariozechner/pi-tui";
import { describe, expect, it } from "vitest";
import { turnEndNotice } from "../../../../src/extension/turns/delivery/notices.js";
import type { Painter } from "../../../../src/extension/ui/paint.js";
import { callLine, expandedJson, resultLine } from "../../../../src/extension/ui/tool-lines.js";
import { toolRenderers } from "../../../../src/extension/ui/tool-render.js";
import { agentRecord } from "../../../support/records.js";

const tagged: Painter = { fg: (color, text) => `<${color}>${text}</${color}>`, bold: (text) => `**${text}**` };
const done = { isError: false, isPartial: false };

describe("tool call lines", () => {
  it.each([
    ["list_models", {}, "list_models"],
    [
      "spawn_agent",
      { task_name: "scout_one", agent_type: "scout", fork_turns: "none", message: "Map   src/auth:\nentry points" },
      'spawn_agent scout_one scout · fork none "Map src/auth: entry points"',
    ],
    [
      "spawn_agent",
      { task_name: "w", model: "fake/deep", reasoning_effort: "high", isolation: "worktree", message: "x" },
      'spawn_agent w fake/deep · high · worktree "x"',
    ],
    ["wait_agent", { timeout_ms: 60_000 }, "wait_agent 1m00s"],
    ["wait_agent", { target: "lead" }, "wait_agent 30s for lead"],
    ["list_agents", { path_prefix: "/root/lead" }, "list_agents /root/lead"],
    ["send_message", { target: "lead", message: "skip legacy/" }, 'send_message → lead "skip legacy/"'],
    [
      "send_message",
      { target: "fixer", answer: { question_id: "fixer.0001.1", value: "No" } },
      "send_message → fixer answers fixer.0001.1",
    ],
    ["followup_task", { target: "lead", message: "now the tests" }, 'followup_task → lead "now the tests"'],
    ["interrupt_agent", { target: "lead" }, "interrupt_agent lead"],
    ["close_agent", { target: "/root/lead" }, "close_agent /root/lead"],
    ["get_agent_report", { target: "lead", offset: 6000, turn: 1 }, "get_agent_report lead offset 6000 · turn -1"],
  ])("%s %j reads: %s", (tool, args, line) => {
    expect(callLine(tool, args)).toBe(line);
  });

  it("quotes a long message in one line, cut with an ellipsis, and paints name, target and details", () => {
    const line = callLine("followup_task", { target: "lead", message: "word ".repeat(100) }, tagged);
    expect(line).toMatch(
      /^<toolTitle>\*\*followup_task\*\*<\/toolTitle> <accent>→ lead<\/accent> <dim>"(word ){15}word…"<\/dim>$/,
    );
    expect(line).not.toContain("\n");
  });
});

describe("tool result lines", () => {
  const completed = turnEndNotice(agentRecord({ status: "completed" }), {
    outcome: "completed",
    text: "all good",
    reportStored: true,
  });
  const errored = turnEndNotice(
    agentRecord({ path: "/root/b", nickname: "Hypatia", status: "errored", health: "unhealthy" }),
    {
      outcome: "failed",
      reason: "500 scripted error",
      text: "",
      reportStored: false,
    },
  );

  it("wait_agent: the notices by how they ended (errors in the error colour), idle, time-out, give-way and cancel with counts", () => {
    expect(resultLine("wait_agent", { notices: [completed, errored], pending: 2, timed_out: false }, "", done)).toBe(
      "2 notices: ✓ /root/worker (Euclid) completed, ✗ /root/b (Hypatia) errored (failed) · 2 pending",
    );
    expect(resultLine("wait_agent", { notices: [errored] }, "", done, tagged)).toBe(
      "1 notice: <error>✗ /root/b (Hypatia) errored (failed)</error>",
    );
    expect(resultLine("wait_agent", { notices: [], idle: true }, "", done)).toBe(
      "idle: no child has a running or queued turn",
    );
    expect(resultLine("wait_agent", { notices: [], timed_out: true, timeout_ms: 30_000 }, "", done)).toBe(
      "timed out after 30s",
    );
    expect(resultLine("wait_agent", { notices: [], user_message_pending: true, running: 2, queued: 0 }, "", done)).toBe(
      "gave way to your message · 2 running keep working",
    );
    expect(resultLine("wait_agent", { notices: [], cancelled: true, running: 1, queued: 2 }, "", done, tagged)).toBe(
      "<warning>cancelled · 1 running, 2 queued keep working (/agents stop stops them)</warning>",
    );
    // One child: the verb and the pronoun agree.
    expect(resultLine("wait_agent", { notices: [], user_message_pending: true, running: 1, queued: 0 }, "", done)).toBe(
      "gave way to your message · 1 running keeps working",
    );
    expect(resultLine("wait_agent", { notices: [], cancelled: true, running: 0, queued: 1 }, "", done)).toBe(
      "cancelled · 1 queued keeps working (/agents stop stops it)",
    );
  });

  it("wait_agent progress is one line of counts (the widget draws the tree)", () => {
    const agents = [{ agent_status: "running" }, { agent_status: "running" }, { agent_status: "pending_init" }];
    expect(resultLine("wait_agent", { waiting_ms: 12_400, agents }, "", { isError: false, isPartial: true })).toBe(
      "waiting 12s for notices · 2 running, 1 queued",
    );
  });

  it.each([
    [
      "spawn_agent",
      {
        agent_name: "/root/a",
        nickname: "Euclid",
        role: "scout",
        model: "fake/fast",
        reasoning: "low",
        agent_status: "running",
      },
      "/root/a (Euclid) · running · scout · fake/fast · low",
    ],
    [
      "spawn_agent",
      {
        agent_name: "/root/a",
        nickname: "Euclid",
        agent_status: "pending_init",
        queue_position: 2,
        worktree: { branch: "subagent/x-a" },
      },
      "/root/a (Euclid) · queued #2 · branch subagent/x-a",
    ],
    [
      "list_agents",
      {
        agents: [{ agent_status: "running" }, { agent_status: "completed" }, { agent_status: "completed" }],
        total_usage: { total_tokens: 12_300, cost: 0.0123 },
      },
      "3 agents: 1 running, 2 completed · 12k tok · $0.0123",
    ],
    ["list_models", { models: [{ model: "a/x" }, { model: "b/y" }], scoped: true }, "2 models (scoped): a/x, b/y"],
    [
      "send_message",
      { delivered: "queued", target: "/root/a", queued_messages: 2 },
      "queued → /root/a · 2 messages waiting for its next turn",
    ],
    ["send_message", { delivered: "parent_mailbox", target: "/root" }, "sent to /root (your parent's mailbox)"],
    ["send_message", { answered: "fixer.0001.1", answered_by: "parent" }, "answered fixer.0001.1"],
    [
      "followup_task",
      { agent_name: "/root/a", agent_status: "running", queued_behind_running_turn: true },
      "/root/a running · starts when its running turn ends",
    ],
    [
      "interrupt_agent",
      { agent_name: "/root/a", previous_status: "running", agent_status: "interrupted" },
      "/root/a running → interrupted",
    ],
    [
      "close_agent",
      { agent_name: "/root/a", previous_status: "shutdown", agent_status: "shutdown" },
      "/root/a shutdown (nothing to stop)",
    ],
    ["get_agent_report", { agent_name: "/root/a", available: false }, "/root/a has no report yet"],
    [
      "get_agent_report",
      {
        agent_name: "/root/a",
        available: true,
        text: "abc",
        offset: 0,
        next_offset: 3,
        total_chars: 9,
        complete: true,
      },
      '/root/a report · chars 0–3 of 9, next offset 3 "abc"',
    ],
  ])("%s %j reads: %s", (tool, details, line) => {
    expect(resultLine(tool, details, JSON.stringify(details), done)).toBe(line);
  });

  it("an error is one line in the error colour, whatever it holds", () => {
    expect(
      resultLine("spawn_agent", undefined, "unknown model: a/b\n  more", { isError: true, isPartial: false }, tagged),
    ).toBe("<error>✗ unknown model: a/b more</error>");
  });

  it("expanded, the whole JSON", () => {
    expect(expandedJson({ a: 1, b: [2] })).toEqual(["{", '  "a": 1,', '  "b": [', "    2", "  ]", "}"]);
  });
});

describe("pi renderers", () => {
  const theme = { fg: (_color: string, text: string) => text, bold: (text: string) => text } as never;
  const { renderCall, renderResult } = toolRenderers("interrupt_agent");
  const details = {
    agent_name: "/root/a_rather_long_agent_name",
    previous_status: "running",
    agent_status: "interrupted",
  };
  const result = { content: [{ type: "text" as const, text: JSON.stringify(details) }], details };

  it("compact: one row cut to the width, never wrapped", () => {
    const rows = renderResult!(result, { expanded: false, isPartial: false }, theme, {
      isError: false,
    } as never).render(20);
    expect(rows).toHaveLength(1);
    expect(visibleWidth(rows[0]!)).toBeLessThanOrEqual(20);
    expect(rows[0]).toMatch(/^\/root\/a_rather_lo/);
    expect(renderCall!({ target: "a" }, theme, { expanded: false } as never).render(80)).toEqual(["interrupt_agent a"]);
  });

  it("expanded: the summary, then the whole JSON", () => {
    const rows = renderResult!(result, { expanded: true, isPartial: false }, theme, { isError: false } as never).render(
      80,
    );
    expect(rows[0]!.trimEnd()).toBe("/root/a_rather_long_agent_name running → interrupted");
    expect(rows.join("\n")).toContain('"previous_status": "running"');
  });
});
