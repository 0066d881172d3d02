import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { directChild, jsonResult, loadPart, requireText, type ToolDeps } from "./common.js";
import { object, string } from "./schema.js";

const parameters = object({
  target: string({ description: "Direct child." }),
  message: string({ description: "The new task, verbatim." }),
});

export function followupTaskTool({ runtime }: ToolDeps): ToolDefinition<typeof parameters> {
  return {
    name: "followup_task",
    label: "Follow-up task",
    description:
      "New turn for a child in its own conversation, after any running turn; queued messages and an interrupted task go first.",
    parameters,
    executionMode: "sequential",
    execute: async (_id, params) => {
      const started = runtime();
      const rt = started instanceof Promise ? await started : started;
      const text = requireText(params.message, "message");
      const state = directChild(rt, params.target, "follow-ups");
      const followup = await rt.followup(state, text, async () => {
        const [{ assertBudgetLeft }, { progressOf }] = await loadPart("the budget check", () =>
          Promise.all([import("../progress/budget.js"), import("../progress/progress.js")]),
        );
        await assertBudgetLeft(progressOf(rt));
      });
      return jsonResult({
        agent_name: state.record.path,
        agent_status: followup.status,
        queued_behind_running_turn: followup.queuedBehindRunningTurn,
        ...(followup.queuePosition !== undefined && { queue_position: followup.queuePosition }),
      });
    },
  };
}
