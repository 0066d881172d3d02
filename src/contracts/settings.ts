/**
 * The extension's settings: the object `subagents` in pi's global settings file
 * (`settings.json` in pi's agent dir). A project's `.pi/settings.json` may set `limits` and
 * `fallback_models` there too, but not `runners`, `runner` or `onExit`: a repository does not
 * choose where code runs or what outlives a session. Invalid values give one line naming the
 * key each, and the defaults hold for them.
 */
import { isRecord } from "../lib/values.js";
import { kindOf } from "./fields.js";
import { parseLimits, type TurnLimits } from "./limits.js";
import { LOCAL_RUNNER, parseRunners, type RunnerDefinition, unknownRunnerMessage } from "./runners.js";

export const SETTINGS_KEY = "subagents";
export const ON_EXIT_CHOICES = ["detach", "stop"] as const;
export type OnExit = (typeof ON_EXIT_CHOICES)[number];

export interface SubagentSettings {
  /** What a deliberate exit does with running turns. Unset: detach interactive, stop otherwise. */
  onExit?: OnExit;
  /** Per-turn limit defaults. */
  limits?: TurnLimits;
  /** Models tried in order when a turn's model fails with a provider error. */
  fallbackModels?: string[];
  /** The default runner's name; `local` when unset. */
  runner?: string;
  /** Named runner definitions. */
  runners?: Record<string, RunnerDefinition>;
}

/** Keys only the global settings may set. */
export const GLOBAL_ONLY_KEYS = ["runners", "runner", "onExit"] as const;
const KNOWN_KEYS = ["onExit", "limits", "fallback_models", "runner", "runners"];

export interface SettingsParse {
  settings: SubagentSettings;
  problems: string[];
}

/** `provider/id`: what `fallback_models` lists. */
const isModelName = (value: unknown): value is string => typeof value === "string" && /^[^/\s]+\/\S+$/.test(value);

function parseKey(key: string, value: unknown, where: string, into: SubagentSettings, problems: string[]): void {
  const at = `${where}.${key}`;
  if (key === "onExit") {
    if ((ON_EXIT_CHOICES as readonly unknown[]).includes(value)) into.onExit = value as OnExit;
    else problems.push(`${at} must be "detach" or "stop"`);
  } else if (key === "limits") {
    const parsed = parseLimits(value, at);
    into.limits = parsed.limits;
    problems.push(...parsed.problems);
  } else if (key === "fallback_models") {
    if (Array.isArray(value) && value.every(isModelName)) into.fallbackModels = value;
    else problems.push(`${at} must be a list of provider/id model names`);
  } else if (key === "runner") {
    if (typeof value === "string" && value.length > 0) into.runner = value;
    else problems.push(`${at} must be a runner name`);
  } else if (key === "runners") {
    const parsed = parseRunners(value, at);
    into.runners = parsed.runners;
    problems.push(...parsed.problems);
  } else problems.push(`${where}: unknown key "${key}" (known: ${KNOWN_KEYS.join(", ")})`);
}

/**
 * The `subagents` object of one settings file. `scope` says which file: a project's may not set
 * the global-only keys (each is named once and ignored).
 */
export function parseSubagentSettings(raw: unknown, scope: "global" | "project", file = "settings"): SettingsParse {
  const where = `${file}: ${SETTINGS_KEY}`;
  if (raw === undefined) return { settings: {}, problems: [] };
  if (!isRecord(raw)) return { settings: {}, problems: [`${where} must be an object, not ${kindOf(raw)}`] };
  const settings: SubagentSettings = {};
  const problems: string[] = [];
  for (const [key, value] of Object.entries(raw)) {
    if (scope === "project" && (GLOBAL_ONLY_KEYS as readonly string[]).includes(key)) {
      problems.push(`${where}.${key} is ignored: only pi's global settings may set ${GLOBAL_ONLY_KEYS.join(", ")}`);
      continue;
    }
    parseKey(key, value, where, settings, problems);
  }
  return { settings, problems };
}

/** Global settings, with a project's `limits` (key by key) and `fallback_models` over them; the default runner checked. */
export function combineSettings(global: SettingsParse, project: SettingsParse): SettingsParse {
  const settings: SubagentSettings = { ...global.settings };
  if (project.settings.limits) settings.limits = { ...global.settings.limits, ...project.settings.limits };
  if (project.settings.fallbackModels) settings.fallbackModels = project.settings.fallbackModels;
  const problems = [...global.problems, ...project.problems];
  const runners = settings.runners ?? {};
  if (settings.runner !== undefined && settings.runner !== LOCAL_RUNNER && !(settings.runner in runners)) {
    problems.push(`${SETTINGS_KEY}.runner: ${unknownRunnerMessage(settings.runner, runners)}; using local`);
    delete settings.runner;
  }
  return { settings, problems };
}
