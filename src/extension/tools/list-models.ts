import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";
import { listModels, type ModelInfo, scopePatterns } from "../roles/models.js";
import { jsonResult, type ToolDeps } from "./common.js";

const parameters = Type.Object({});

function readSettings(file: string): { enabledModels?: unknown } {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as { enabledModels?: unknown };
  } catch {
    return {};
  }
}

/** `enabledModels` as pi reads it: the project's .pi/settings.json over the global one. */
export function enabledModelsSetting(cwd: string, env: NodeJS.ProcessEnv = process.env): { enabledModels?: unknown } {
  const agentDir = env.PI_CODING_AGENT_DIR || path.join(os.homedir(), ".pi", "agent");
  const project = readSettings(path.join(cwd, ".pi", "settings.json"));
  return project.enabledModels !== undefined ? project : readSettings(path.join(agentDir, "settings.json"));
}

export function listModelsTool(_deps: ToolDeps): ToolDefinition<typeof parameters> {
  return {
    name: "list_models",
    label: "List models",
    description:
      "List the models a child agent can use (spawn_agent's `model`, written provider/id): each with its supported reasoning_levels and context_window. When the session has a model scope (--models or enabledModels), only the scoped models are listed and scoped is true.",
    parameters,
    execute: async (_id, _params, _signal, _onUpdate, ctx) => {
      const available = ctx.modelRegistry.getAvailable() as ModelInfo[];
      return jsonResult(listModels(available, scopePatterns(process.argv, enabledModelsSetting(ctx.cwd))));
    },
  };
}
