import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";
import { directChild, jsonResult, type ToolDeps } from "./common.js";

const parameters = Type.Object({
  target: Type.String({ description: "A direct child (canonical path or name relative to you)." }),
});

export function interruptAgentTool({ runtime }: ToolDeps): ToolDefinition<typeof parameters> {
  return {
    name: "interrupt_agent",
    label: "Interrupt agent",
    description:
      "Stop a direct child's running turn (or take its queued turn out of the queue) and free its slot at once. Returns previous_status; the child becomes `interrupted` and keeps its conversation — followup_task resumes it, and a task it never got to see is delivered then. On a child with no running or queued turn it changes nothing.",
    parameters,
    executionMode: "sequential",
    execute: async (_id, params) => {
      const rt = runtime();
      const state = directChild(rt, params.target, "an interrupt");
      const previous = await rt.interrupt(state);
      return jsonResult({ agent_name: state.record.path, previous_status: previous, agent_status: state.record.status });
    },
  };
}
