/**
 * User-defined roles: markdown files with YAML frontmatter, found in the pi agent dir's
 * `agents/` (`~/.pi/agent/agents/`, moved by PI_CODING_AGENT_DIR) and, only when the user
 * opts in with PI_SUBAGENTS_PROJECT_AGENTS=1, in the nearest `.pi/agents/` above the cwd.
 * Files written for Claude Code (`.claude/agents/`) are read too: claude-agents.ts maps them.
 *
 *   ---
 *   name: reviewer
 *   description: Reviews a diff for bugs; read-only.
 *   tools: read, grep, find, ls        # or a YAML list; omit for the parent's tools, [] for none
 *   model: anthropic/claude-sonnet-4-5  # provider/id or `inherit` (the default)
 *   reasoning: high                     # a default, clamped to what the model supports
 *   isolation: worktree                 # a default: the child works in its own git worktree
 *   limits: { max_turns: 40, max_cost: 2 }  # per-turn limits; spawn_agent's keys win
 *   ---
 *   You are a code reviewer. …          (appended to the child's system prompt)
 *
 * `parseAgentDefinition` and `mergeDefinitions` (definition-set.ts) are pure; definition-files.ts
 * does the file I/O. A file that breaks a rule is never half-used: it becomes a `RejectedDefinition` whose
 * problems — all of them at once, so one edit can fix the file — are shown to the user at
 * session start and in spawn_agent's errors.
 * docs/agents.md is the user's guide to the format and to every choice made here.
 */

import path from "node:path";
import { parseFrontmatter } from "@mariozechner/pi-coding-agent";
import { parseLimits, type TurnLimits } from "../../contracts/limits.js";
import { THINKING_LEVELS, type ThinkingLevel } from "../../contracts/meta.js";
import { LOCAL_RUNNER, RUNNER_NAME_PATTERN } from "../../contracts/runners.js";
import { ISOLATION_MODES, type IsolationMode } from "../../contracts/tree.js";
import { type VerifySpec, verifyField } from "../../contracts/verify.js";
import { errorText, isRecord } from "../../lib/values.js";
import { isThinkingLevel, parseModelRef } from "./models.js";

export type DefinitionSource = "user" | "project";

export interface AgentDefinition {
  name: string;
  description: string;
  /** Tool names for the child; "parent" when the file names none (the parent's tools). */
  tools: readonly string[] | "parent";
  /** Default model as `provider/id`; undefined = the parent's model (`inherit`). */
  model?: string;
  /** A Claude Code model name (`sonnet`, a bare model id), matched against the usable models at spawn. */
  modelAlias?: string;
  /** Default reasoning, clamped like a built-in role's; undefined = the parent's level. */
  reasoning?: ThinkingLevel;
  /** Default isolation; undefined = `none` (spawn_agent's `isolation` parameter wins either way). */
  isolation?: IsolationMode;
  /** Per-turn limits (`limits:`); spawn_agent's `limits` win key by key, settings' lose. */
  limits?: TurnLimits;
  /** Default fallback models (`provider/id`, in order; spawn_agent's `fallback_models` wins). */
  fallbackModels?: readonly string[];
  /** Default runner's name (spawn_agent's `runner` parameter wins). */
  runner?: string;
  /** Default checks of its turns (`verify:`; spawn_agent's `verify` wins, settings' lose). */
  verify?: VerifySpec;
  /** The markdown body, appended to the child's system prompt ("" = nothing to add). */
  prompt: string;
  source: DefinitionSource;
  filePath: string;
  /** What of the file was left out while the rest loads (a Claude Code tool pi lacks, …): shown at session start. */
  notes?: readonly string[];
}

export interface RejectedDefinition {
  filePath: string;
  source: DefinitionSource;
  /** The name the file declares, else its file name without `.md` (to match an agent_type). */
  name: string;
  /** Every problem of the file, joined with "; ". */
  problem: string;
}

export type ParsedDefinition = { ok: true; definition: AgentDefinition } | { ok: false; rejected: RejectedDefinition };

export const DEFINITION_FIELDS = [
  "name",
  "description",
  "tools",
  "model",
  "reasoning",
  "isolation",
  "limits",
  "fallback_models",
  "runner",
  "verify",
] as const;
/** lowercase letters, digits, `_` and `-` (Claude Code's `code-reviewer` style), a letter first. */
export const DEFINITION_NAME_PATTERN = /^[a-z][a-z0-9_-]{0,63}$/;
/** Larger files are refused: the body goes into every turn's system prompt. */
export const MAX_DEFINITION_BYTES = 64 * 1024;

/** Why a field (or the whole file) is refused. */
export type Problem = { problem: string };
export const isProblem = (value: unknown): value is Problem => isRecord(value) && typeof value.problem === "string";

/** Gathers every field's problem, so a file is reported whole rather than one problem per edit. */
export function problemList(): { problems: string[]; take<T>(value: T | Problem): T | undefined } {
  const problems: string[] = [];
  return {
    problems,
    take: <T>(value: T | Problem): T | undefined => {
      if (!isProblem(value)) return value;
      problems.push(value.problem);
      return undefined;
    },
  };
}

/** The optional fields a pi file and a Claude Code file share. */
export type SharedFields = Partial<
  Pick<AgentDefinition, "reasoning" | "isolation" | "limits" | "fallbackModels" | "runner" | "verify">
>;

/**
 * pi's own optional fields, read the same way from both kinds of file: each problem goes to
 * `take`, and only the fields a file sets are kept. `limitsOf` reads the limits (a Claude Code
 * file also maps its `maxTurns`).
 */
export function parseSharedFields(
  fm: Record<string, unknown>,
  take: ReturnType<typeof problemList>["take"],
  limitsOf: (fm: Record<string, unknown>) => TurnLimits | undefined | Problem = parseLimitsField,
): SharedFields {
  const reasoning = take(parseReasoning(fm));
  const isolation = take(parseIsolation(fm));
  const limits = take(limitsOf(fm));
  const fallbackModels = take(parseFallbackModels(fm));
  const runner = take(parseRunnerName(fm));
  const verify = take(verifyField(fm));
  return {
    ...(reasoning !== undefined && { reasoning }),
    ...(isolation !== undefined && { isolation }),
    ...(limits !== undefined && { limits }),
    ...(fallbackModels !== undefined && { fallbackModels }),
    ...(runner !== undefined && { runner }),
    ...(verify !== undefined && { verify }),
  };
}

/** The file name without `.md`: the name a refused file is matched by when it declares none. */
export const fileStem = (filePath: string): string => path.basename(filePath).replace(/\.md$/i, "");

/** A missing or non-string name leaves the file name, which is what an agent_type would match. */
export function declaredName(fm: Record<string, unknown>, filePath: string): string {
  return typeof fm.name === "string" && fm.name.trim() !== "" ? fm.name.trim() : fileStem(filePath);
}

export function rejectDefinition(
  filePath: string,
  source: DefinitionSource,
  name: string,
  problems: readonly string[],
): ParsedDefinition {
  return { ok: false, rejected: { filePath, source, name, problem: problems.join("; ") } };
}

/** Parses one file's text. Pure: no file system, no registry (tool names are checked at use). */
export function parseAgentDefinition(content: string, filePath: string, source: DefinitionSource): ParsedDefinition {
  const parsed = readFrontmatter(content);
  if (isProblem(parsed)) return rejectDefinition(filePath, source, fileStem(filePath), [parsed.problem]);
  const { fm, body } = parsed;
  const { problems, take } = problemList();
  take(checkKnownFields(fm, DEFINITION_FIELDS));
  const name = take(checkName(fm));
  const description = take(parseDescription(fm));
  const tools = take(parseTools(fm));
  const model = take(parseModel(fm));
  const shared = parseSharedFields(fm, take);
  if (problems.length > 0) return rejectDefinition(filePath, source, name ?? declaredName(fm, filePath), problems);
  return {
    ok: true,
    definition: {
      name: name!,
      description: description!,
      tools: tools!,
      ...(model !== undefined && { model }),
      ...shared,
      prompt: body.trim(),
      source,
      filePath,
    },
  };
}

export function readFrontmatter(content: string): { fm: Record<string, unknown>; body: string } | Problem {
  const text = content.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
  // pi's parseFrontmatter treats a file without a closing `---` as having no frontmatter.
  if (!/^---[ \t]*\n/.test(text) || !/\n---/.test(text.slice(3))) {
    return {
      problem:
        "no frontmatter: the file must start with a `---` line, then `name:` and `description:`, then a closing `---` line",
    };
  }
  let frontmatter: unknown;
  let body: string;
  try {
    ({ frontmatter, body } = parseFrontmatter<Record<string, unknown>>(text));
  } catch (err) {
    return { problem: `the frontmatter is not valid YAML: ${firstLine(errorText(err))}` };
  }
  if (!isRecord(frontmatter) || Array.isArray(frontmatter))
    return { problem: "the frontmatter must be `key: value` lines" };
  return { fm: frontmatter, body };
}

/** `limits:` — the keys of contracts/limits.ts, each positive; every bad key is named (`limits.max_turns must be …`). */
export function parseLimitsField(fm: Record<string, unknown>): TurnLimits | undefined | Problem {
  if (!("limits" in fm)) return undefined;
  const { limits, problems } = parseLimits(fm.limits, "limits");
  return problems.length > 0 ? { problem: problems.join("; ") } : limits;
}

/** Only the known fields: a misspelt `tool:` silently ignored would give the role every tool. */
export function checkKnownFields(fm: Record<string, unknown>, allowed: readonly string[]): true | Problem {
  const unknown = Object.keys(fm).filter((key) => !allowed.includes(key));
  if (unknown.length === 0) return true;
  const list = unknown.map((key) => `"${key}"`).join(", ");
  return { problem: `unknown field${unknown.length > 1 ? "s" : ""} ${list} (allowed: ${allowed.join(", ")})` };
}

/** A name that can be an agent_type. */
export function checkName(fm: Record<string, unknown>): string | Problem {
  if (fm.name === undefined || fm.name === null) return { problem: "missing `name:` in the frontmatter" };
  if (typeof fm.name !== "string" || !DEFINITION_NAME_PATTERN.test(fm.name)) {
    return {
      problem: `name ${JSON.stringify(fm.name)} must be 1-64 lowercase letters, digits, "_" or "-", starting with a letter`,
    };
  }
  return fm.name;
}

/** One line the model chooses the role by (line breaks folded). */
export function parseDescription(fm: Record<string, unknown>): string | Problem {
  if (fm.description === undefined || fm.description === null)
    return { problem: "missing `description:` in the frontmatter" };
  if (typeof fm.description !== "string" || fm.description.trim() === "")
    return { problem: "description must be a non-empty string" };
  return fm.description.replace(/\s+/g, " ").trim();
}

/** `provider/id`, or `inherit` (the default) for the parent's model. */
function parseModel(fm: Record<string, unknown>): string | undefined | Problem {
  if (!("model" in fm)) return undefined;
  const value = fm.model;
  if (typeof value !== "string" || (value.trim() !== "inherit" && !parseModelRef(value.trim()))) {
    return {
      problem: `model ${JSON.stringify(value)} must be written provider/id (as list_models shows it) or \`inherit\``,
    };
  }
  return value.trim() === "inherit" ? undefined : value.trim();
}

export function parseReasoning(fm: Record<string, unknown>): ThinkingLevel | undefined | Problem {
  if (!("reasoning" in fm)) return undefined;
  if (isThinkingLevel(fm.reasoning)) return fm.reasoning;
  return { problem: `reasoning ${JSON.stringify(fm.reasoning)} must be one of ${THINKING_LEVELS.join(", ")}` };
}

/** `fallback_models: a/x, b/y` or a YAML list of `provider/id` (known models are checked at spawn). */
export function parseFallbackModels(fm: Record<string, unknown>): readonly string[] | undefined | Problem {
  if (!("fallback_models" in fm)) return undefined;
  const value = fm.fallback_models;
  const items = typeof value === "string" ? value.split(",") : Array.isArray(value) ? value : undefined;
  if (!items) return { problem: "fallback_models must be a comma-separated list or a YAML list of provider/id" };
  const names = items.map((item) => (typeof item === "string" ? item.trim() : item));
  const bad = names.find((name) => typeof name !== "string" || !parseModelRef(name));
  if (bad !== undefined)
    return { problem: `fallback_models holds ${JSON.stringify(bad)}, which is not written provider/id` };
  return [...new Set(names as string[])];
}

export function parseIsolation(fm: Record<string, unknown>): IsolationMode | undefined | Problem {
  if (!("isolation" in fm)) return undefined;
  const value = typeof fm.isolation === "string" ? fm.isolation.trim() : fm.isolation;
  if ((ISOLATION_MODES as readonly unknown[]).includes(value)) return value as IsolationMode;
  return { problem: `isolation ${JSON.stringify(fm.isolation)} must be ${ISOLATION_MODES.join(" or ")}` };
}

/** `runner:` names a runner of the settings (checked at spawn, where the settings are read). */
export function parseRunnerName(fm: Record<string, unknown>): string | undefined | Problem {
  if (!("runner" in fm)) return undefined;
  const value = typeof fm.runner === "string" ? fm.runner.trim() : fm.runner;
  if (typeof value === "string" && (value === LOCAL_RUNNER || RUNNER_NAME_PATTERN.test(value))) return value;
  return { problem: `runner ${JSON.stringify(fm.runner)} must be a runner name` };
}

export const TOOLS_EMPTY =
  "tools is empty: list tool names, write `tools: []` for no tools, or leave the field out for the parent's tools";

/** `tools: a, b` or a YAML list; absent = the parent's tools; `[]` = none. */
export function parseTools(fm: Record<string, unknown>): readonly string[] | "parent" | Problem {
  if (!("tools" in fm)) return "parent";
  if (fm.tools === null || (typeof fm.tools === "string" && fm.tools.trim() === "")) return { problem: TOOLS_EMPTY };
  return toolNameList(fm.tools, "tools");
}

/** A comma-separated string or a YAML list of names, without repeats. */
export function toolNameList(value: unknown, field: string): string[] | Problem {
  let names: unknown[];
  if (typeof value === "string") {
    names = value.split(",").map((name) => name.trim());
  } else if (Array.isArray(value)) {
    names = value.map((name) => (typeof name === "string" ? name.trim() : name));
  } else {
    return { problem: `${field} must be a comma-separated list (\`${field}: read, grep\`) or a YAML list` };
  }
  const bad = names.find((name) => typeof name !== "string" || name === "" || /\s/.test(name));
  if (bad !== undefined) return { problem: `${field} holds ${JSON.stringify(bad)}, which is not a tool name` };
  return [...new Set(names as string[])];
}

export function firstLine(text: string): string {
  return text.split("\n")[0]!.trim();
}
