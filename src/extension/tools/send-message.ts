import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { LIMITS } from "../../contracts/tree.js";
import { resolveTarget } from "../tree/paths.js";
import { directChild, jsonResult, requireText, type ToolDeps } from "./common.js";
import { boolean, object, optional, string } from "./schema.js";

const parameters = object({
  target: string({ description: "Direct child, or your parent." }),
  message: optional(string({ description: `≤${LIMITS.maxMessageChars} chars, verbatim.` })),
  answer: optional(
    object(
      {
        question_id: string(),
        value: optional(string()),
        confirmed: optional(boolean()),
      },
      { description: "Answers a question notice." },
    ),
  ),
});

export function sendMessageTool({ runtime }: ToolDeps): ToolDefinition<typeof parameters> {
  return {
    name: "send_message",
    label: "Send message",
    description: [
      "Message a child or your parent; starts no turn.",
      "A running child reads it live before its next model request, else queued for its next turn.",
    ].join(" "),
    parameters,
    executionMode: "sequential",
    execute: async (_id, params) => {
      const started = runtime();
      const rt = started instanceof Promise ? await started : started;
      if (params.answer !== undefined) {
        if (params.message !== undefined) throw new Error("give message or answer, not both");
        const state = directChild(rt, params.target, "messages");
        if (!rt.dialogDesk)
          throw new Error(`no question of ${state.record.path} is waiting: its dialogs do not come here`);
        return jsonResult(await rt.dialogDesk.answerQuestion(state.record.path, params.answer));
      }
      const text = requireText(params.message, "message");
      const parent = rt.parentPath();
      if (parent && resolveTarget(rt.self, params.target) === parent) {
        await rt.messageParent(parent, text);
        return jsonResult({ delivered: "parent_mailbox", target: parent });
      }
      const state = directChild(rt, params.target, "messages");
      if (text.length > LIMITS.maxMessageChars)
        throw new Error(`message is ${text.length} characters; the limit is ${LIMITS.maxMessageChars}`);
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
