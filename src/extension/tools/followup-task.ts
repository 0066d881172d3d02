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
      const state = directChild(rt, params.target, "follow-ups");
      const followup = await rt.followup(state, text, () => assertBudgetLeft(progressOf(rt)));
      return jsonResult({
        agent_name: state.record.path,
        agent_status: followup.status,
        queued_behind_running_turn: followup.queuedBehindRunningTurn,
        ...(followup.queuePosition !== undefined && { queue_position: followup.queuePosition }),
      });
    },
  };
}
