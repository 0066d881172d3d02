import { getAgentDir, SettingsManager, type ToolDefinition } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";
import { listModels, type ModelInfo, scopePatterns } from "../roles/models.js";
import { jsonResult, type ToolDeps } from "./common.js";

const parameters = Type.Object({});

/**
 * `enabledModels` as pi reads it, through pi's own settings: the project's .pi/settings.json
 * over the global one in pi's agent directory (PI_CODING_AGENT_DIR, `~` expanded as pi does).
 */
export function enabledModelsSetting(cwd: string): { enabledModels?: unknown } {
  const enabledModels = SettingsManager.create(cwd, getAgentDir()).getEnabledModels();
  return enabledModels === undefined ? {} : { enabledModels };
}

export function listModelsTool(_deps: ToolDeps): ToolDefinition<typeof parameters> {
  return {
    name: "list_models",
    label: "List models",
    description: "Models for spawn_agent (provider/id), reasoning_levels; scoped: true if the session limits them.",
    parameters,
    execute: async (_id, _params, _signal, _onUpdate, ctx) => {
      const available = ctx.modelRegistry.getAvailable() as ModelInfo[];
      return jsonResult(listModels(available, scopePatterns(process.argv, enabledModelsSetting(ctx.cwd))));
    },
  };
}
