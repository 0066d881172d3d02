/**
 * interrupt_agent and close_agent: one shape — a direct child as target, the runtime's stop,
 * and the child's status before and after — with their own names, words and stop.
 */
import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import type { AgentStatus } from "../../contracts/tree.js";
import type { ChildState, TreeRuntime } from "../turns/runtime.js";
import { type ChildAction, directChild, jsonResult, type ToolDeps } from "./common.js";
import { object, string } from "./schema.js";

const parameters = object({
  target: string({ description: "Direct child." }),
});

export type StopToolParameters = typeof parameters;

export interface StopToolSpec {
  name: string;
  label: string;
  description: string;
  /** How a "cannot take …" error names this stop. */
  action: ChildAction;
  stop(runtime: TreeRuntime, state: ChildState): Promise<AgentStatus>;
}

export function stopTool({ runtime }: ToolDeps, spec: StopToolSpec): ToolDefinition<StopToolParameters> {
  return {
    name: spec.name,
    label: spec.label,
    description: spec.description,
    parameters,
    executionMode: "sequential",
    execute: async (_id, params) => {
      const started = runtime();
      const rt = started instanceof Promise ? await started : started;
      const state = directChild(rt, params.target, spec.action);
      const previous = await spec.stop(rt, state);
      return jsonResult({
        agent_name: state.record.path,
        previous_status: previous,
        agent_status: state.record.status,
      });
    },
  };
}
