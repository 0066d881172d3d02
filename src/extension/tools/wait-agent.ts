import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";
import { LIMITS } from "../../contracts/tree.js";
import { usageTotals } from "../../contracts/usage.js";
import { type AgentProgress, progressFields, progressOf } from "../progress/progress.js";
import type { TreeRuntime } from "../turns/runtime.js";
import { widgetLines } from "../ui/widget.js";
import { jsonResult, subtreeTarget, type ToolDeps } from "./common.js";
import { ISOLATION_MERGE_TEXT } from "./spawn-agent.js";

const parameters = Type.Object({
  timeout_ms: Type.Optional(
    Type.Number({ description: `How long to wait for a notice, in ms (default ${LIMITS.waitDefaultMs}, clamped to 0…${LIMITS.waitMaxMs}; 0 = just look).` }),
  ),
  target: Type.Optional(
    Type.String({
      description:
        "An agent of your subtree that must exist (canonical path or relative to you), though waiting stays mailbox-wide: any child's notice returns.",
    }),
  ),
});

/** How often a waiting parent looks at its inbox for messages its children sent up. */
const INBOX_POLL_MS = 200;
/** How often a waiting parent streams the progress of its subtree (pi's onUpdate). */
export const PROGRESS_UPDATE_MS = 1000;

/** One partial result while waiting: the subtree as text, and its active agents as details. */
export function progressUpdate(self: string, agents: AgentProgress[], waitedMs: number) {
  const active = agents.filter((agent) => agent.record.status === "running" || agent.record.status === "pending_init");
  const lines = widgetLines(self, agents) ?? ["no agents"];
  return {
    content: [{ type: "text" as const, text: [`waiting ${Math.round(waitedMs / 1000)}s for notices`, ...lines].join("\n") }],
    details: {
      waiting_ms: waitedMs,
      agents: active.map((agent) => ({
        agent_name: agent.record.path,
        nickname: agent.record.nickname,
        agent_status: agent.record.status,
        model: agent.record.model,
        ...progressFields(agent),
        ...(agent.queuePosition !== undefined && { queue_position: agent.queuePosition }),
        usage: usageTotals(agent.usage),
      })),
    },
  };
}

async function sendProgress(rt: TreeRuntime, waitedMs: number, onUpdate: ((update: ReturnType<typeof progressUpdate>) => void) | undefined): Promise<void> {
  if (!onUpdate) return;
  try {
    onUpdate(progressUpdate(rt.self, await progressOf(rt).snapshot(rt.self), waitedMs));
  } catch {
    // progress is a courtesy: a failed read never fails the wait
  }
}

export function clampTimeout(value: unknown): number {
  if (typeof value !== "number" || !Number.isFinite(value)) return LIMITS.waitDefaultMs;
  return Math.min(LIMITS.waitMaxMs, Math.max(0, Math.floor(value)));
}

export function waitAgentTool({ runtime }: ToolDeps): ToolDefinition<typeof parameters> {
  return {
    name: "wait_agent",
    label: "Wait for agents",
    description: [
      "Wait for notices from your child agents: a finished turn (completed, errored, aborted), an interrupt or shutdown, or a message a child sent you.",
      `This is the way to wait — do not poll list_agents. Returns at once when notices are pending (at most ${LIMITS.noticesPerWait} per call, oldest first; \`pending\` says how many remain), at once with idle: true when no child has a running or queued turn, else when one arrives or timeout_ms passes (timed_out: true).`,
      `While waiting it streams the progress of your running and queued agents (elapsed time, current tool, turns, tokens, cost) about once a second. Each notice carries agent_name, nickname, type, agent_status, health, the child's effective model and reasoning, outcome and reason when it did not complete, usage and subtree_usage (the agent plus its descendants; a message notice has neither), and its report (a message notice: the text), the whole notice at most ${LIMITS.maxMessageChars} characters (report_chars is the full length; get_agent_report pages a stored report).`,
      ISOLATION_MERGE_TEXT,
    ].join(" "),
    parameters,
    execute: async (_id, params, signal, onUpdate) => {
      const rt = runtime();
      if (params.target !== undefined) subtreeTarget(rt, params.target);
      const timeoutMs = clampTimeout(params.timeout_ms);
      const started = Date.now();
      const deadline = started + timeoutMs;
      let lastUpdate: number | undefined;
      for (;;) {
        await rt.collectInbox();
        if (rt.mailbox.pending > 0) {
          const notices = rt.mailbox.take(LIMITS.noticesPerWait);
          return jsonResult({ notices, pending: rt.mailbox.pending, timed_out: false, timeout_ms: timeoutMs });
        }
        if (!rt.hasActiveTurns()) return jsonResult({ notices: [], pending: 0, timed_out: false, idle: true, timeout_ms: timeoutMs });
        const left = deadline - Date.now();
        if (left <= 0 || signal?.aborted) return jsonResult({ notices: [], pending: 0, timed_out: true, timeout_ms: timeoutMs });
        if (lastUpdate === undefined || Date.now() - lastUpdate >= PROGRESS_UPDATE_MS) {
          lastUpdate = Date.now();
          await sendProgress(rt, lastUpdate - started, onUpdate);
        }
        await rt.mailbox.waitForNotice(Math.min(left, INBOX_POLL_MS), signal);
      }
    },
  };
}
