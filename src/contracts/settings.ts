/**
 * The extension's settings: the object `subagents` in pi's global settings file
 * (`settings.json` in pi's agent dir). A project's `.pi/settings.json` may set `limits` and
 * `fallback_models` (and `verify`: a repository knows its own checks) there too, but not `runners`, `runner`, `onExit`, `budgets`,
 * `confirm_every_usd`, `dialogs`, `dialog_timeout` or `child_extensions`: a repository does not choose where code runs, what
 * outlives a session, what a person spends, what a person is asked or which of the person's
 * guards a child leaves out. Invalid values give one line naming the key each, and the defaults
 * hold for them.
 */
import { isRecord } from "../lib/values.js";
import { BUDGET_KEYS, type PeriodBudgets } from "./budget-periods.js";
import {
  type ChildExtensionSettings,
  type DialogRoute,
  parseChildExtensions,
  parseDialogRoute,
  parseDialogTimeout,
} from "./dialog-settings.js";
import { nearestField } from "./field-suggestion.js";
import { kindOf } from "./fields.js";
import { parseLimits, type TurnLimits } from "./limits.js";
import { LOCAL_RUNNER, parseRunners, type RunnerDefinition, unknownRunnerMessage } from "./runners.js";
import { parseVerify, type VerifySpec } from "./verify.js";

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
  /** USD the agents of all the person's trees may spend per local day / month (the ledger counts it). */
  budgets?: PeriodBudgets;
  /** USD after which, and after each further multiple of it, the person is asked whether the tree may spend more. */
  confirmEveryUsd?: number;
  /** Who answers a child's dialogs (default `person`). */
  dialogs?: DialogRoute;
  /** Seconds after which an unanswered child dialog is cancelled (default 300). */
  dialogTimeout?: number;
  /** Which of the root's extensions a child on this machine leaves out. */
  childExtensions?: ChildExtensionSettings;
  /** Runners the settings name but cannot use, and why (an invalid definition, a project's runners). */
  unusableRunners?: Record<string, string>;
  /** The checks of every child's turns, unless its spawn or definition sets its own. */
  verify?: VerifySpec;
  /** Whether an active tree keeps a spare pi started for its next turn (default true; contracts/spare.ts). */
  spare?: boolean;
}

/** Keys only the global settings may set. */
export const GLOBAL_ONLY_KEYS = [
  "runners",
  "runner",
  "onExit",
  "budgets",
  "confirm_every_usd",
  "dialogs",
  "dialog_timeout",
  "child_extensions",
] as const;
const KNOWN_KEYS = [
  "onExit",
  "limits",
  "fallback_models",
  "runner",
  "runners",
  "budgets",
  "confirm_every_usd",
  "dialogs",
  "dialog_timeout",
  "child_extensions",
  "verify",
  "spare",
];
const BUDGET_NAMES: readonly string[] = Object.values(BUDGET_KEYS);

/** `budgets`: positive USD per period; a bad key is named and left out (that period has no budget). */
function parseBudgets(value: unknown, at: string, problems: string[]): PeriodBudgets {
  if (!isRecord(value)) {
    problems.push(`${at} must be an object like {"daily_usd": 5}, not ${kindOf(value)}`);
    return {};
  }
  const budgets: PeriodBudgets = {};
  for (const [key, amount] of Object.entries(value)) {
    if (!BUDGET_NAMES.includes(key)) problems.push(`${at}: unknown key "${key}" (known: ${BUDGET_NAMES.join(", ")})`);
    else if (typeof amount === "number" && Number.isFinite(amount) && amount > 0) {
      budgets[key as keyof PeriodBudgets] = amount;
    } else
      problems.push(
        `${at}.${key} must be a positive number of USD, not ${typeof amount === "number" || typeof amount === "string" ? JSON.stringify(amount) : kindOf(amount)}`,
      );
  }
  return budgets;
}

export interface SettingsParse {
  settings: SubagentSettings;
  problems: string[];
}

/** `provider/id`: what `fallback_models` lists. */
const isModelName = (value: unknown): value is string => typeof value === "string" && /^[^/\s]+\/\S+$/.test(value);

/** `dialogs`, `dialog_timeout` and `child_extensions`; false for any other key. */
function parseDialogKey(key: string, value: unknown, at: string, into: SubagentSettings, problems: string[]): boolean {
  if (key === "dialogs") {
    const route = parseDialogRoute(value, at, problems);
    if (route) into.dialogs = route;
  } else if (key === "dialog_timeout") {
    const seconds = parseDialogTimeout(value, at, problems);
    if (seconds !== undefined) into.dialogTimeout = seconds;
  } else if (key === "child_extensions") {
    const parsed = parseChildExtensions(value, at, problems);
    if (parsed) into.childExtensions = parsed;
  } else return false;
  return true;
}

/** `budgets` and `confirm_every_usd`; false for any other key. */
function parseSpendKey(key: string, value: unknown, at: string, into: SubagentSettings, problems: string[]): boolean {
  if (key === "budgets") into.budgets = parseBudgets(value, at, problems);
  else if (key !== "confirm_every_usd") return false;
  else if (typeof value === "number" && Number.isFinite(value) && value > 0) into.confirmEveryUsd = value;
  else
    problems.push(
      `${at} must be a positive number of USD, not ${typeof value === "number" || typeof value === "string" ? JSON.stringify(value) : kindOf(value)}`,
    );
  return true;
}

/** `verify`: the checks of every child's turns (contracts/verify.ts); a bad one is named and no default applies. */
function parseVerifySetting(value: unknown, at: string, into: SubagentSettings, problems: string[]): void {
  const parsed = parseVerify(value, at);
  if (parsed.ok) into.verify = parsed.verify;
  else problems.push(parsed.problem);
}

/** `spare`: whether an active tree keeps a spare pi (true or false). */
function parseSpare(value: unknown, at: string, into: SubagentSettings, problems: string[]): void {
  if (typeof value === "boolean") into.spare = value;
  else problems.push(`${at} must be true or false`);
}

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
  } else if (key === "verify") {
    parseVerifySetting(value, at, into, problems);
  } else if (key === "runner") {
    if (typeof value === "string" && value.length > 0) into.runner = value;
    else problems.push(`${at} must be a runner name`);
  } else if (key === "runners") {
    const parsed = parseRunners(value, at);
    into.runners = parsed.runners;
    if (Object.keys(parsed.unusable).length > 0) into.unusableRunners = parsed.unusable;
    problems.push(...parsed.problems);
  } else if (key === "spare") {
    parseSpare(value, at, into, problems);
  } else if (!parseSpendKey(key, value, at, into, problems) && !parseDialogKey(key, value, at, into, problems)) {
    const meant = nearestField(key, KNOWN_KEYS);
    problems.push(
      `${where}: unknown key "${key}"${meant ? `; did you mean "${meant}"?` : ""} (known: ${KNOWN_KEYS.join(", ")})`,
    );
  }
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
      if (key === "runners" && isRecord(value)) settings.unusableRunners = projectRunners(value, file);
      continue;
    }
    parseKey(key, value, where, settings, problems);
  }
  return { settings, problems };
}

/** Why each runner a project's settings define is not used: a repository does not choose where code runs. */
function projectRunners(runners: Record<string, unknown>, file: string): Record<string, string> {
  const why = `it is defined in ${file}, and only pi's global settings (settings.json in pi's agent dir) may define runners`;
  return Object.fromEntries(Object.keys(runners).map((name) => [name, why]));
}

/** Global settings, with a project's `limits` (key by key) and `fallback_models` over them; the default runner checked. */
export function combineSettings(global: SettingsParse, project: SettingsParse): SettingsParse {
  const settings: SubagentSettings = { ...global.settings };
  if (project.settings.limits) settings.limits = { ...global.settings.limits, ...project.settings.limits };
  if (project.settings.fallbackModels) settings.fallbackModels = project.settings.fallbackModels;
  if (project.settings.verify) settings.verify = project.settings.verify;
  if (project.settings.spare !== undefined) settings.spare = project.settings.spare;
  const problems = [...global.problems, ...project.problems];
  const runners = settings.runners ?? {};
  // A runner the global settings define (even invalid) is not shadowed by a project's of that name.
  const unusable = { ...project.settings.unusableRunners, ...global.settings.unusableRunners };
  for (const name of Object.keys(runners)) delete unusable[name];
  if (Object.keys(unusable).length > 0) settings.unusableRunners = unusable;
  if (settings.runner !== undefined && settings.runner !== LOCAL_RUNNER && !(settings.runner in runners)) {
    problems.push(`${SETTINGS_KEY}.runner: ${unknownRunnerMessage(settings.runner, runners, unusable)}; using local`);
    delete settings.runner;
  }
  return { settings, problems };
}
