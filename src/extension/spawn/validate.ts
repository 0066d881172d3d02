/**
 * `spawn_agent` validation: numbered rules, checked in order, each with a fixed message.
 *
 * The tool schema is deliberately permissive (pi would answer a mismatch with its own text),
 * so every field arrives as `unknown` and is checked here. The order matters to models that
 * retry: the first broken rule is the one reported, e.g. an unknown agent_type with the
 * default fork is told about the fork (rule 3) before the role (rule 4), as the subagent
 * extension this package replaces did, so prompts and habits formed on it keep working.
 */
import { mergeLimits, parseLimits, type TurnLimits } from "../../contracts/limits.js";
import type { ThinkingLevel } from "../../contracts/meta.js";
import { ISOLATION_MODES, type IsolationMode, LIMITS } from "../../contracts/tree.js";
import { errorValue } from "../../lib/text.js";
import {
  bestAliasMatch,
  clampLevel,
  isThinkingLevel,
  type ModelInfo,
  modelRef,
  supportedLevels,
} from "../roles/models.js";
import { BUILTIN_CATALOG, lookupRole, type Role, type RoleLookup } from "../roles/roles.js";
import { childPath, depthOf, TASK_NAME_PATTERN } from "../tree/paths.js";
import type { ForkSpec } from "./fork.js";

export interface SpawnRequest {
  task_name?: unknown;
  message?: unknown;
  agent_type?: unknown;
  fork_turns?: unknown;
  model?: unknown;
  reasoning_effort?: unknown;
  isolation?: unknown;
  limits?: unknown;
  /** Checked by spawn/runner.ts once the role is known (its `runner:` is the default). */
  runner?: unknown;
}

export interface SpawnEnv {
  /** Canonical path of the spawning agent (`/root` for the root). */
  callerPath: string;
  /** The caller's current model. */
  parentModel: ModelInfo;
  /** The caller's current thinking level. */
  parentReasoning: ThinkingLevel;
  /** Registry lookup including auth; undefined = unknown. */
  findModel(ref: string): ModelInfo | undefined;
  /** Every model the caller can use (`provider/id`), named when a role's model is unknown. */
  availableModels?(): string[];
  /** The same models whole, where a Claude Code file's alias (`sonnet`) looks for its match. */
  usableModels?(): readonly ModelInfo[];
  /** Built-in and user-defined roles (default: the built-ins only). */
  findRole?(name: string): RoleLookup;
  /** Any agent (any status) already at that path. */
  pathExists(path: string): boolean;
  /** Spawns so far in the whole tree, finished included. */
  spawnCount: number;
  maxDepth: number;
  maxSpawns: number;
  /** The settings' `limits`: under the role's and the call's. */
  settingsLimits?: TurnLimits;
}

export interface SpawnPlan {
  taskName: string;
  path: string;
  /** `default` for a plain child. */
  role: string;
  /** The role's definition; undefined for a plain child. */
  roleInfo: Role | undefined;
  model: ModelInfo;
  /** One line for the caller when the role's model alias matched no usable model and the parent's is used. */
  modelNote?: string;
  reasoning: ThinkingLevel;
  reasoningSource: "explicit" | "role" | "parent";
  fork: ForkSpec;
  message: string;
  /** The parameter, else the role's default, else `none`. */
  isolation: IsolationMode;
  /** Per-turn limits, key by key: the call's, else the role's, else the settings' (defaults are the wrapper's). */
  limits: TurnLimits;
}

export type SpawnValidation = { ok: true; plan: SpawnPlan } | { ok: false; error: string };

export const DEFAULT_ROLE = "default";

/** Absent, null and "" all mean "not given", so a model that fills every field still gets defaults. */
function given(value: unknown): boolean {
  return value !== undefined && value !== null && value !== "";
}

/** A value as a message quotes it: bounded, so a 5 MB argument never comes back whole. */
const text = (value: unknown): string => errorValue(value);

/**
 * `none`, `all`, a positive integer, or a string of digits naming one; absent means `all`.
 * undefined when malformed. An N beyond the parent's history is fine: the fork then holds
 * every turn, but it is not a full-history fork for rule 3 (only `all` is).
 */
export function parseFork(value: unknown): ForkSpec | undefined {
  if (!given(value)) return { kind: "all" };
  if (typeof value === "number") {
    return Number.isSafeInteger(value) && value > 0 ? { kind: "recent", turns: value } : undefined;
  }
  if (typeof value !== "string") return undefined;
  const trimmed = value.trim();
  if (trimmed === "none") return { kind: "none" };
  if (trimmed === "all") return { kind: "all" };
  if (!/^\d+$/.test(trimmed)) return undefined;
  const turns = Number(trimmed);
  return Number.isSafeInteger(turns) && turns > 0 ? { kind: "recent", turns } : undefined;
}

/** How many models an unknown role model's error lists. */
const MODELS_LISTED = 10;

/** ` — named by agent definition <file>; models you can use: a/b, c/d, … (N more: list_models)` */
export function roleModelHelp(role: Role, available: readonly string[]): string {
  const from = role.filePath ? ` — named by agent definition ${role.filePath}` : ` — named by role ${role.name}`;
  if (available.length === 0) return `${from}; no model is available`;
  const listed = available.slice(0, MODELS_LISTED).join(", ");
  const more = available.length > MODELS_LISTED ? `, … (${available.length - MODELS_LISTED} more: list_models)` : "";
  return `${from}; models you can use: ${listed}${more}`;
}

/** One rule group's verdict: the value it settled, or the message of the first rule it broke. */
type Checked<T> = { ok: true; value: T } | { ok: false; error: string };

const pass = <T>(value: T): Checked<T> => ({ ok: true, value });
const fail = (error: string): { ok: false; error: string } => ({ ok: false, error });

export function validateSpawn(req: SpawnRequest, env: SpawnEnv): SpawnValidation {
  const taskName = checkTaskName(req.task_name);
  if (!taskName.ok) return taskName;
  const fork = parseFork(req.fork_turns);
  const role = checkRole(req.agent_type, fork, env);
  if (!role.ok) return role;
  const model = checkModel(req.model, role.value, env);
  if (!model.ok) return model;
  const reasoning = checkReasoning(req.reasoning_effort, model.value.model, role.value, env);
  if (!reasoning.ok) return reasoning;

  // 8.
  if (!fork) return fail('fork_turns must be "none", "all", or a positive integer');

  // Not one of the numbered rules: a child with no task would only burn a turn asking what to do.
  const message = req.message;
  if (typeof message !== "string" || message.trim() === "") return fail("message must be a non-empty string");

  const path = checkPlace(taskName.value, env);
  if (!path.ok) return path;
  const isolation = checkIsolation(req.isolation, role.value);
  if (!isolation.ok) return isolation;
  const limits = checkLimits(req.limits);
  if (!limits.ok) return limits;

  return {
    ok: true,
    plan: {
      taskName: taskName.value,
      path: path.value,
      role: role.value ? role.value.name : DEFAULT_ROLE,
      roleInfo: role.value,
      model: model.value.model,
      ...(model.value.note !== undefined && { modelNote: model.value.note }),
      reasoning: reasoning.value.level,
      reasoningSource: reasoning.value.source,
      fork,
      message,
      isolation: isolation.value,
      limits: mergeLimits(limits.value, role.value?.limits, env.settingsLimits),
    },
  };
}

function checkTaskName(taskName: unknown): Checked<string> {
  // 1. The message says agent_name although the parameter is task_name: scripts match this exact text (docs/tools.md).
  if (typeof taskName !== "string" || !TASK_NAME_PATTERN.test(taskName)) {
    return fail("agent_name must use only lowercase letters, digits, and underscores");
  }
  // 1b. Not one of the numbered rules of docs/tools.md: a name that is valid but long becomes a folder
  // name (a file name has 255 bytes) and a path every list and notice repeats.
  if (taskName.length > LIMITS.taskNameChars) {
    return fail(`task_name must be at most ${LIMITS.taskNameChars} characters (this one has ${taskName.length})`);
  }
  return pass(taskName);
}

/** Rules 2 to 4: the role, given the fork (a malformed fork is reported later, by rule 8). */
function checkRole(agentType: unknown, fork: ForkSpec | undefined, env: SpawnEnv): Checked<Role | undefined> {
  // Compared whole (never a cut one: a cut name must not match a role), quoted bounded.
  const roleName = given(agentType)
    ? typeof agentType === "string"
      ? agentType
      : JSON.stringify(agentType)
    : undefined;

  // 2. Any fork but `none` (an invalid one included) is refused for a scout before rule 8 parses it.
  if (roleName === "scout" && fork?.kind !== "none") return fail("scout agents require fork_turns `none`");

  // 3. A full-history fork continues the parent's conversation, so it cannot take a new role.
  if (roleName !== undefined && fork?.kind === "all") {
    return fail(
      "Full-history forked agents inherit the parent agent type; omit agent_type, or spawn without a full-history fork.",
    );
  }

  // 4. An unknown role; when a user-defined role's file was refused, the message says why.
  if (roleName === undefined) return pass(undefined);
  const found = (env.findRole ?? ((name: string) => lookupRole(BUILTIN_CATALOG, name)))(roleName);
  return found.ok ? pass(found.role) : fail(found.error);
}

/**
 * 5. An explicit model wins over a user-defined role's default, which is checked the same way.
 * A Claude Code file's alias never fails a spawn: it takes the best usable match, else the
 * parent's model with a note saying so (the file was written for another tool's models).
 */
function checkModel(
  requested: unknown,
  role: Role | undefined,
  env: SpawnEnv,
): Checked<{ model: ModelInfo; note?: string }> {
  if (given(requested)) {
    const found = typeof requested === "string" ? env.findModel(requested) : undefined;
    return found ? pass({ model: found }) : fail(`unknown model: ${text(requested)}`);
  }
  if (role?.model !== undefined) {
    const found = env.findModel(role.model);
    // The call named no model, so the model must learn where this one came from and what exists.
    if (!found) return fail(`unknown model: ${text(role.model)}${roleModelHelp(role, env.availableModels?.() ?? [])}`);
    return pass({ model: found });
  }
  if (role?.modelAlias !== undefined) {
    const match = bestAliasMatch(role.modelAlias, env.usableModels?.() ?? [], env.parentModel.provider);
    if (match) return pass({ model: match });
    const from = role.filePath ? ` of agent definition ${role.filePath}` : "";
    const note = `model ${text(role.modelAlias)}${from} matches no model you can use; the child runs on your model ${modelRef(env.parentModel)}`;
    return pass({ model: env.parentModel, note });
  }
  return pass({ model: env.parentModel });
}

/**
 * 6 and 7: an explicit level is honoured exactly or refused, so the model learns that its
 * choice did not hold; only defaults (the role's, the parent's) are clamped silently.
 */
function checkReasoning(
  requested: unknown,
  model: ModelInfo,
  role: Role | undefined,
  env: SpawnEnv,
): Checked<{ level: ThinkingLevel; source: SpawnPlan["reasoningSource"] }> {
  if (given(requested)) {
    if (!isThinkingLevel(requested)) return fail(`unknown reasoning_effort: ${text(requested)}`);
    if (!supportedLevels(model).includes(requested)) {
      return fail(`reasoning_effort ${requested} is not supported by ${modelRef(model)}`);
    }
    return pass({ level: requested, source: "explicit" });
  }
  if (role?.reasoning !== undefined) return pass({ level: clampLevel(model, role.reasoning), source: "role" });
  return pass({ level: clampLevel(model, env.parentReasoning), source: "parent" });
}

/** Rules 9 to 11: where the child goes in the tree, and whether the tree has room for it. */
function checkPlace(taskName: string, env: SpawnEnv): Checked<string> {
  // 9.
  const path = childPath(env.callerPath, taskName);
  if (env.pathExists(path)) return fail(`agent task path already exists: ${path}`);

  // 10.
  const depth = depthOf(path);
  if (depth > env.maxDepth) {
    return fail(`agent depth limit reached: ${path} would be ${depth} levels below the root (limit ${env.maxDepth})`);
  }

  // 11. Finished agents count too, so a loop of spawn-and-close cannot run forever.
  if (env.spawnCount >= env.maxSpawns) {
    return fail(`spawn limit reached: this tree has spawned ${env.spawnCount} agents (limit ${env.maxSpawns})`);
  }
  return pass(path);
}

/** 12. Rule 13 (a git repository must hold the cwd) needs git, so spawn.ts checks it next. */
function checkIsolation(requested: unknown, role: Role | undefined): Checked<IsolationMode> {
  if (!given(requested)) return pass(role?.isolation ?? "none");
  if (typeof requested !== "string" || !(ISOLATION_MODES as readonly string[]).includes(requested.trim())) {
    return fail(ISOLATION_VALUE_ERROR);
  }
  return pass(requested.trim() as IsolationMode);
}

/** Not a numbered rule: `limits`, every bad key named at once. */
function checkLimits(requested: unknown): Checked<TurnLimits> {
  if (!given(requested)) return pass({});
  const { limits, problems } = parseLimits(requested, "limits");
  return problems.length > 0 ? fail(problems.join("; ")) : pass(limits);
}

export const ISOLATION_VALUE_ERROR = 'isolation must be "none" or "worktree"';

/** 13. The message when `isolation: "worktree"` is asked for in a cwd that no git working tree holds. */
export function noRepositoryError(cwd: string): string {
  return `isolation "worktree" needs a git repository: ${cwd} is not inside one`;
}
