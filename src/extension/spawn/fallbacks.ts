/**
 * A spawn's fallback models: `fallback_models` on spawn_agent, else the agent
 * definition's `fallback_models:`, else the settings default (`subagents.fallback_models`).
 * Each must be a model the caller can use; each gets the reasoning level nearest to the
 * child's (the clamp of roles/models.ts, the one pi applies). A model cooling down after a
 * rate-limit or quota error (tree/cooldowns.ts) is not started: the child starts on the first
 * free fallback, and the spawn fails clearly when none is left. Pure: the caller reads the
 * settings and the cool-downs.
 */
import type { ThinkingLevel } from "../../contracts/meta.js";
import type { FallbackModel } from "../../contracts/tree.js";
import { clampLevel, type ModelInfo, modelRef, parseModelRef } from "../roles/models.js";
import type { Role } from "../roles/roles.js";
import { type Cooldowns, describeCooldown } from "../tree/cooldowns.js";

export interface FallbackInput {
  /** spawn_agent's `fallback_models`, as the model sent it. */
  param: unknown;
  role: Role | undefined;
  /** The settings default. */
  settings: readonly string[] | undefined;
  /** The child's model and reasoning as the other rules settled them. */
  model: ModelInfo;
  reasoning: ThinkingLevel;
  findModel(ref: string): ModelInfo | undefined;
  /** The tree's cooling models (`provider/id` → until when). */
  cooling: Cooldowns;
}

export interface FallbackChoice {
  /** The model the child starts on: its own, or the first free fallback when its own is cooling down. */
  model: ModelInfo;
  reasoning: ThinkingLevel;
  /** The rest, in order, each at its clamped level. */
  fallbacks: FallbackModel[];
  /** Why the child is not on the model asked for. */
  note?: string;
}

export type FallbackResult = { ok: true; value: FallbackChoice } | { ok: false; error: string };

/** The list in effect and where it comes from (named in an error). */
function chosenList(input: FallbackInput): { names: unknown; from: string } | undefined {
  // Absent, null and "" mean "not given", as for every optional spawn field; [] means none.
  const given = input.param !== undefined && input.param !== null && input.param !== "";
  if (given) return { names: input.param, from: "fallback_models" };
  if (input.role?.fallbackModels) {
    return { names: input.role.fallbackModels, from: `fallback_models of ${input.role.filePath ?? input.role.name}` };
  }
  if (input.settings) return { names: input.settings, from: "the settings' subagents.fallback_models" };
  return undefined;
}

/** The named models, each known to the registry, or the first that is not. */
function knownModels(names: unknown, from: string, input: FallbackInput): ModelInfo[] | string {
  if (!Array.isArray(names)) return `${from} must be a list of provider/id (list_models)`;
  const models: ModelInfo[] = [];
  for (const name of names) {
    const model = typeof name === "string" && parseModelRef(name.trim()) ? input.findModel(name.trim()) : undefined;
    if (!model) return `${from}: ${JSON.stringify(name)} is not a model you can use (list_models shows them)`;
    if (!models.some((m) => modelRef(m) === modelRef(model))) models.push(model);
  }
  return models;
}

export function resolveFallbacks(input: FallbackInput): FallbackResult {
  const list = chosenList(input);
  const known = list ? knownModels(list.names, list.from, input) : [];
  if (typeof known === "string") return { ok: false, error: known };
  const own = modelRef(input.model);
  const chain = [input.model, ...known.filter((m) => modelRef(m) !== own)];
  const free = chain.filter((m) => input.cooling[modelRef(m)] === undefined);
  const first = free[0];
  if (!first) {
    const cooling = input.cooling[own];
    const rest = chain.length > 1 ? " and so is every fallback model" : " and the spawn names no fallback_models";
    return { ok: false, error: `model ${own} is ${cooling ? describeCooldown(cooling) : "cooling down"}${rest}` };
  }
  const reasoning = first === input.model ? input.reasoning : clampLevel(first, input.reasoning);
  const fallbacks = chain
    .filter((m) => m !== first && chain.indexOf(m) > chain.indexOf(first))
    .map((m) => ({ model: modelRef(m), reasoning: clampLevel(m, input.reasoning) }));
  const cooling = input.cooling[own];
  return {
    ok: true,
    value: {
      model: first,
      reasoning,
      fallbacks,
      ...(first !== input.model &&
        cooling && { note: `${own} is ${describeCooldown(cooling)}: the child starts on ${modelRef(first)}` }),
    },
  };
}
