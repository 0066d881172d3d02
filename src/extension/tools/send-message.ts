import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";
import { LIMITS } from "../../contracts/tree.js";
import { resolveTarget } from "../tree/paths.js";
import { directChild, jsonResult, requireText, type ToolDeps } from "./common.js";

const parameters = Type.Object({
  target: Type.String({ description: "A direct child (canonical path or name relative to you), or your parent's path." }),
  message: Type.String({ description: `The text, delivered verbatim; not empty, at most ${LIMITS.maxMessageChars} characters.` }),
});

export function sendMessageTool({ runtime }: ToolDeps): ToolDefinition<typeof parameters> {
  return {
    name: "send_message",
    label: "Send message",
    description: [
      `Message a direct child (at most ${LIMITS.maxMessageChars} characters; starts no turn).`,
      'Running child: delivered "live", read before its next model request, after the tool calls it is running.',
      'Otherwise "queued": read at the start of its next turn (followup_task starts one).',
      "Each arrives once, in send order; a live message the turn ends before reading goes with the next turn. pending_messages counts those not read yet.",
      "To your parent's path: a `message` notice in its mailbox.",
    ].join(" "),
    parameters,
    executionMode: "sequential",
    execute: async (_id, params) => {
      const rt = runtime();
      const text = requireText(params.message, "message");
      const parent = rt.parentPath();
      if (parent && resolveTarget(rt.self, params.target) === parent) {
        await rt.messageParent(parent, text);
        return jsonResult({ delivered: "parent_mailbox", target: parent });
      }
      const state = directChild(rt, params.target, "messages");
      if (text.length > LIMITS.maxMessageChars) throw new Error(`message is ${text.length} characters; the limit is ${LIMITS.maxMessageChars}`);
      const delivery = await rt.queueMessage(state, text);
      return jsonResult({
        delivered: delivery.delivered,
        target: state.record.path,
        message_id: delivery.messageId,
        pending_messages: delivery.pendingMessages,
        queued_messages: delivery.queuedMessages,
        agent_status: delivery.status,
      });
    },
  };
}
