import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";
import { directChild, jsonResult, type ToolDeps } from "./common.js";

const parameters = Type.Object({
  target: Type.String({ description: "Direct child." }),
});

export function interruptAgentTool({ runtime }: ToolDeps): ToolDefinition<typeof parameters> {
  return {
    name: "interrupt_agent",
    label: "Interrupt agent",
    description: "Stop a child's running or queued turn, freeing its slot; followup_task resumes it.",
    parameters,
    executionMode: "sequential",
    execute: async (_id, params) => {
      const rt = runtime();
      const state = directChild(rt, params.target, "an interrupt");
      const previous = await rt.interrupt(state);
      return jsonResult({
        agent_name: state.record.path,
        previous_status: previous,
        agent_status: state.record.status,
      });
    },
  };
}
