import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import type { ToolDeps } from "./common.js";
import { type StopToolParameters, stopTool } from "./stop-tool.js";

export function closeAgentTool(deps: ToolDeps): ToolDefinition<StopToolParameters> {
  return stopTool(deps, {
    name: "close_agent",
    label: "Close agent",
    description:
      "Shut down a child and its subtree for good. Worktrees go (leftovers committed); branches with commits stay.",
    action: "a close",
    stop: (runtime, state) => runtime.close(state),
  });
}
