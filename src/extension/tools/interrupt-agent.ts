import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import type { ToolDeps } from "./common.js";
import { type StopToolParameters, stopTool } from "./stop-tool.js";

export function interruptAgentTool(deps: ToolDeps): ToolDefinition<StopToolParameters> {
  return stopTool(deps, {
    name: "interrupt_agent",
    label: "Interrupt agent",
    description: "Stop a child's running or queued turn, freeing its slot; followup_task resumes it.",
    action: "an interrupt",
    stop: (runtime, state) => runtime.interrupt(state),
  });
}
