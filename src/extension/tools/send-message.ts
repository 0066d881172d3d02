import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";
import { LIMITS } from "../../contracts/tree.js";
import { resolveTarget } from "../tree/paths.js";
import { directChild, jsonResult, requireText, type ToolDeps } from "./common.js";

const parameters = Type.Object({
  target: Type.String({ description: "A direct child (canonical path or name relative to you), or your parent's path." }),
  message: Type.String({ description: "The text, delivered verbatim; it must not be empty." }),
});

export function sendMessageTool({ runtime }: ToolDeps): ToolDefinition<typeof parameters> {
  return {
    name: "send_message",
    label: "Send message",
    description: [
      "Queue a message for a direct child: it is delivered, in order, with the child's next turn (use followup_task to start one). It starts no turn and does not interrupt a running one; a shut-down child takes no messages.",
      `A child may send_message to its parent's path: it lands in the parent's mailbox as a notice of type \`message\` (at most ${LIMITS.maxMessageChars} characters).`,
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
      const delivery = await rt.queueMessage(state, text);
      return jsonResult({ delivered: delivery.delivered, target: state.record.path, queued_messages: delivery.queuedMessages, agent_status: delivery.status });
    },
  };
}
