import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";
import { LIMITS } from "../../contracts/tree.js";
import { type ToolDeps, jsonResult, subtreeTarget } from "./common.js";

const parameters = Type.Object({
  timeout_ms: Type.Optional(Type.Number({ description: `How long to wait for a notice, in ms (default ${LIMITS.waitDefaultMs}; clamped to 0…${LIMITS.waitMaxMs}).` })),
  target: Type.Optional(Type.String({ description: "Optional agent path; it must exist in your subtree. Waiting is still mailbox-wide: any child's notice returns." })),
});

/** How often a waiting parent looks at its inbox for messages its children sent up. */
const INBOX_POLL_MS = 200;

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
      `Each notice carries agent_name, nickname, type, agent_status, health, the child's effective model and reasoning, outcome and reason when it did not complete, usage, and its report (at most ${LIMITS.maxMessageChars} characters; report_chars is the full length, get_agent_report pages it).`,
    ].join(" "),
    parameters,
    execute: async (_id, params, signal) => {
      const rt = runtime();
      if (params.target !== undefined) subtreeTarget(rt, params.target);
      const timeoutMs = clampTimeout(params.timeout_ms);
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        await rt.collectInbox();
        if (rt.mailbox.pending > 0) {
          const notices = rt.mailbox.take(LIMITS.noticesPerWait);
          return jsonResult({ notices, pending: rt.mailbox.pending, timed_out: false, timeout_ms: timeoutMs });
        }
        if (!rt.hasActiveTurns()) return jsonResult({ notices: [], pending: 0, timed_out: false, idle: true, timeout_ms: timeoutMs });
        const left = deadline - Date.now();
        if (left <= 0 || signal?.aborted) return jsonResult({ notices: [], pending: 0, timed_out: true, timeout_ms: timeoutMs });
        await rt.mailbox.waitForNotice(Math.min(left, INBOX_POLL_MS), signal);
      }
    },
  };
}
