import { getAgentDir, SettingsManager, type ToolDefinition } from "@mariozechner/pi-coding-agent";
import { systemClock } from "../../lib/clock.js";
import { identityFromEnv } from "../config.js";
import type { ModelInfo } from "../roles/models.js";
import type { Cooldowns } from "../tree/cooldowns.js";
import { jsonResult, loadPart, type ToolDeps } from "./common.js";
import { object } from "./schema.js";

const parameters = object({});

/**
 * `enabledModels` as pi reads it, through pi's own settings: the project's .pi/settings.json
 * over the global one in pi's agent directory (PI_CODING_AGENT_DIR, `~` expanded as pi does).
 */
export function enabledModelsSetting(cwd: string): { enabledModels?: unknown } {
  const enabledModels = SettingsManager.create(cwd, getAgentDir()).getEnabledModels();
  return enabledModels === undefined ? {} : { enabledModels };
}

/**
 * The tree's cooling models (tree/cooldowns.ts); none when this session has no tree yet. A
 * child names its tree directory in its environment: it reads the file there rather than start
 * the tree's machinery only for this (most children never delegate).
 */
async function treeCooldowns(
  deps: ToolDeps,
  readCooldowns: typeof import("../tree/cooldowns.js").readCooldowns,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Cooldowns> {
  try {
    const identity = identityFromEnv(env);
    const treeDir = identity.treeDir ?? (await deps.runtime()).tree.root;
    return readCooldowns(treeDir, (deps.clock ?? systemClock).now());
  } catch {
    return {};
  }
}

export function listModelsTool(
  deps: ToolDeps,
  env: NodeJS.ProcessEnv = process.env,
): ToolDefinition<typeof parameters> {
  return {
    name: "list_models",
    label: "List models",
    description:
      "Models for spawn_agent (provider/id), reasoning_levels; scoped: true if the session limits them. cooling_until: spawn skips.",
    parameters,
    execute: async (_id, _params, _signal, _onUpdate, ctx) => {
      const [{ listModels, scopePatterns }, { readCooldowns }] = await loadPart("the model list", () =>
        Promise.all([import("../roles/models.js"), import("../tree/cooldowns.js")]),
      );
      const available = ctx.modelRegistry.getAvailable() as ModelInfo[];
      const listed = listModels(available, scopePatterns(process.argv, enabledModelsSetting(ctx.cwd)));
      const cooling = await treeCooldowns(deps, readCooldowns, env);
      const models = listed.models.map((m) => {
        const cooldown = cooling[m.model];
        return cooldown ? { ...m, cooling_until: cooldown.until, cooling_reason: cooldown.error_class } : m;
      });
      return jsonResult({ ...listed, models });
    },
  };
}
