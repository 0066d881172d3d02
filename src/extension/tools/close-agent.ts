import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";
import { directChild, jsonResult, type ToolDeps } from "./common.js";

const parameters = Type.Object({
  target: Type.String({ description: "Direct child." }),
});

export function closeAgentTool({ runtime }: ToolDeps): ToolDefinition<typeof parameters> {
  return {
    name: "close_agent",
    label: "Close agent",
    description:
      "Shut down a child and its subtree for good, freeing slots. Worktrees go (leftovers committed); branches with commits stay.",
    parameters,
    executionMode: "sequential",
    execute: async (_id, params) => {
      const rt = runtime();
      const state = directChild(rt, params.target, "a close");
      const previous = await rt.close(state);
      return jsonResult({
        agent_name: state.record.path,
        previous_status: previous,
        agent_status: state.record.status,
      });
    },
  };
}
