import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";
import { directChild, jsonResult, type ToolDeps } from "./common.js";

const parameters = Type.Object({
  target: Type.String({ description: "A direct child (canonical path or name relative to you)." }),
});

export function closeAgentTool({ runtime }: ToolDeps): ToolDefinition<typeof parameters> {
  return {
    name: "close_agent",
    label: "Close agent",
    description:
      "Shut down a direct child and its whole subtree: running turns are stopped, no process is left, and every agent in the subtree becomes `shutdown` (final: it takes no follow-up; list_agents keeps what its last turn ended with as last_outcome). Returns previous_status. Frees capacity at once. The git worktrees of isolated agents in the subtree are removed (what they left uncommitted is committed first); a branch that holds commits stays, one with none is deleted.",
    parameters,
    executionMode: "sequential",
    execute: async (_id, params) => {
      const rt = runtime();
      const state = directChild(rt, params.target, "a close");
      const previous = await rt.close(state);
      return jsonResult({ agent_name: state.record.path, previous_status: previous, agent_status: state.record.status });
    },
  };
}
