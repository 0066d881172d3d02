import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";
import { assertBudgetLeft } from "../progress/budget.js";
import { progressOf } from "../progress/progress.js";
import { directChild, jsonResult, requireText, type ToolDeps } from "./common.js";

const parameters = Type.Object({
  target: Type.String({ description: "A direct child (canonical path or name relative to you)." }),
  message: Type.String({ description: "The new task, not empty, delivered verbatim in the child's own conversation." }),
});

export function followupTaskTool({ runtime }: ToolDeps): ToolDefinition<typeof parameters> {
  return {
    name: "followup_task",
    label: "Follow-up task",
    description:
      "Give a direct child a new turn in its own conversation (it keeps its earlier context). If its turn is running, the follow-up waits behind it; if its turn is queued, the follow-up joins that turn. Messages queued with send_message and any interrupted task are delivered first, in order. Resumes an interrupted child; a shut-down child takes no follow-up, and none starts once the tree's budget is spent. Collect the result with wait_agent.",
    parameters,
    executionMode: "sequential",
    execute: async (_id, params) => {
      const rt = runtime();
      const text = requireText(params.message, "message");
      const state = directChild(rt, params.target);
      const { record } = state;
      if (record.status === "shutdown") throw new Error(`${record.path} is shut down; it takes no follow-up`);
      await assertBudgetLeft(progressOf(rt));
      record.inbox.push({ kind: "FOLLOWUP_TASK", from: rt.self, text, sentAt: new Date().toISOString() });
      const busy = state.running !== undefined || rt.queuePosition(record.path) !== undefined;
      if (busy) {
        record.followupQueued = true;
        await rt.persist(state);
      } else {
        await rt.persist(state);
        await rt.requestTurn(state, "followup");
      }
      const queuePosition = rt.queuePosition(record.path);
      return jsonResult({
        agent_name: record.path,
        agent_status: record.status,
        queued_behind_running_turn: busy,
        ...(queuePosition !== undefined && { queue_position: queuePosition }),
      });
    },
  };
}
