/**
 * Agent files written for Claude Code (`.claude/agents/*.md`), read as roles:
 *
 *   ---
 *   name: reviewer
 *   description: Reviews code.
 *   tools: Read, Grep, Glob, Bash     # Claude Code's names, mapped to pi's
 *   model: sonnet                     # an alias, resolved to a usable model at spawn
 *   color: blue                       # presentation only: ignored
 *   ---
 *
 * The same file then works in both tools. What pi cannot honour is named once in the file's
 * notes (shown at session start) while the rest loads; a file that is wrong in itself (no
 * name, a bad value, a misspelt field) is refused with all its problems at once, as a pi
 * file is. docs/agents.md ("Claude Code agent files") is the user's guide.
 */
import { parseLimits, type TurnLimits } from "../../contracts/limits.js";
import {
  type AgentDefinition,
  checkKnownFields,
  checkName,
  DEFINITION_FIELDS,
  type DefinitionSource,
  declaredName,
  fileStem,
  isProblem,
  type ParsedDefinition,
  type Problem,
  parseDescription,
  parseLimitsField,
  parseSharedFields,
  problemList,
  readFrontmatter,
  rejectDefinition,
  TOOLS_EMPTY,
} from "./agent-definitions.js";
import { parseModelRef } from "./models.js";

/** Claude Code's tool names and pi's tools that do the same work. */
export const CLAUDE_TOOL_NAMES: Readonly<Record<string, string>> = {
  Read: "read",
  Grep: "grep",
  Glob: "find",
  LS: "ls",
  Bash: "bash",
  Edit: "edit",
  MultiEdit: "edit",
  Write: "write",
};

/** Fields that only change how Claude Code shows the agent: ignored without a word. */
export const CLAUDE_PRESENTATION_FIELDS = ["color"] as const;

/**
 * Claude Code settings pi has no counterpart for: ignored, and named in the file's notes so
 * the user knows (a child here runs its tools without asking, whatever `permissionMode` says).
 */
export const CLAUDE_UNSUPPORTED_FIELDS = [
  "permissionMode",
  "skills",
  "mcpServers",
  "hooks",
  "memory",
  "background",
] as const;

/**
 * Every field a Claude Code file may hold here: pi's own (`DEFINITION_FIELDS`, so a field pi
 * files learn works here too), with `disallowedTools` beside `tools`, then Claude Code's
 * `maxTurns` and the fields it has that are ignored.
 */
export const CLAUDE_FIELDS: readonly string[] = [
  ...DEFINITION_FIELDS.flatMap((field) => (field === "tools" ? [field, "disallowedTools"] : [field])),
  "maxTurns",
  ...CLAUDE_PRESENTATION_FIELDS,
  ...CLAUDE_UNSUPPORTED_FIELDS,
];

/** Parses one Claude Code file's text into a role. Pure, like `parseAgentDefinition`. */
export function parseClaudeAgentDefinition(
  content: string,
  filePath: string,
  source: DefinitionSource,
): ParsedDefinition {
  const parsed = readFrontmatter(content);
  if (isProblem(parsed)) return rejectDefinition(filePath, source, fileStem(filePath), [parsed.problem]);
  const { fm, body } = parsed;
  const { problems, take } = problemList();
  const notes: string[] = [];
  take(checkKnownFields(fm, CLAUDE_FIELDS));
  const name = take(checkName(fm));
  const description = take(parseDescription(fm));
  const tools = take(claudeTools(fm, notes));
  const model = take(claudeModel(fm));
  const shared = parseSharedFields(fm, take, claudeLimits);
  const unsupported = CLAUDE_UNSUPPORTED_FIELDS.filter((field) => field in fm);
  if (unsupported.length > 0) notes.push(`${unsupported.join(", ")}: Claude Code settings pi does not have, ignored`);
  if (problems.length > 0) {
    return rejectDefinition(filePath, source, name ?? declaredName(fm, filePath), [...problems, ...notes]);
  }
  const definition: AgentDefinition = {
    name: name!,
    description: description!,
    tools: tools!,
    ...model,
    ...shared,
    prompt: body.trim(),
    source,
    filePath,
    ...(notes.length > 0 && { notes }),
  };
  return { ok: true, definition };
}

/**
 * pi's `limits:` with Claude Code's `maxTurns` (the agentic turns a subagent may take) as its
 * `max_turns`, unless `limits:` sets that itself.
 */
function claudeLimits(fm: Record<string, unknown>): TurnLimits | undefined | Problem {
  const limits = parseLimitsField(fm);
  if (!("maxTurns" in fm) || isProblem(limits)) return limits;
  const turns = parseLimits({ max_turns: fm.maxTurns }, "maxTurns").limits.max_turns;
  if (turns === undefined)
    return { problem: `maxTurns must be a positive whole number, not ${JSON.stringify(fm.maxTurns)}` };
  return { max_turns: turns, ...limits };
}

/**
 * Claude Code's tool names mapped to pi's; a name with no pi tool (WebFetch, Task, an MCP
 * tool, a `Bash(git:*)` permission pattern that pi could not enforce) is left out and named
 * in the notes. `disallowedTools` is taken out of the list.
 */
function claudeTools(fm: Record<string, unknown>, notes: string[]): readonly string[] | "parent" | Problem {
  if ("tools" in fm && (fm.tools === null || (typeof fm.tools === "string" && fm.tools.trim() === ""))) {
    return { problem: TOOLS_EMPTY };
  }
  const allowed = "tools" in fm ? claudeToolNames(fm.tools, "tools") : "parent";
  if (isProblem(allowed)) return allowed;
  const denied = "disallowedTools" in fm ? claudeToolNames(fm.disallowedTools, "disallowedTools") : [];
  if (isProblem(denied)) return denied;
  if (allowed === "parent" && denied.length > 0) {
    return {
      problem:
        "disallowedTools needs a `tools:` list here: pi cannot take tools out of the parent's set, so list the tools the role may use",
    };
  }
  const unknown = [...new Set([...(allowed === "parent" ? [] : allowed), ...denied])].filter(
    (tool) => !(tool in CLAUDE_TOOL_NAMES),
  );
  if (unknown.length > 0) {
    notes.push(
      `unknown tool${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")} left out (pi maps ${Object.keys(CLAUDE_TOOL_NAMES).join(", ")})`,
    );
  }
  if (allowed === "parent") return "parent";
  const deniedPi = new Set(denied.map((tool) => CLAUDE_TOOL_NAMES[tool]));
  const mapped = allowed.flatMap((tool) => CLAUDE_TOOL_NAMES[tool] ?? []).filter((tool) => !deniedPi.has(tool));
  return [...new Set(mapped)];
}

/** `Read, Grep` or a YAML list, split at commas outside parentheses (`Bash(git add:*, git commit:*)`). */
function claudeToolNames(value: unknown, field: string): string[] | Problem {
  if (value === null) return [];
  const names = Array.isArray(value)
    ? value.map((item) => (typeof item === "string" ? item.trim() : item))
    : typeof value === "string"
      ? (value.match(/(?:[^,(]|\([^)]*\))+/g) ?? []).map((name) => name.trim())
      : undefined;
  if (names === undefined)
    return { problem: `${field} must be a comma-separated list (\`${field}: Read, Grep\`) or a YAML list` };
  const bad = names.find((name) => typeof name !== "string");
  if (bad !== undefined) return { problem: `${field} holds ${JSON.stringify(bad)}, which is not a tool name` };
  return [...new Set((names as string[]).filter((name) => name !== ""))];
}

/**
 * `inherit` (or no field): the parent's model. `provider/id`: that model, as in a pi file.
 * Anything else (`sonnet`, `opus`, `haiku`, a bare id like `claude-opus-4-1`) is an alias
 * resolved against the usable models at each spawn (models.ts `bestAliasMatch`).
 */
function claudeModel(fm: Record<string, unknown>): Pick<AgentDefinition, "model" | "modelAlias"> | Problem {
  if (!("model" in fm)) return {};
  const value = typeof fm.model === "string" ? fm.model.trim() : fm.model;
  if (typeof value !== "string" || value === "" || /\s/.test(value)) {
    return {
      problem: `model ${JSON.stringify(fm.model)} must be sonnet, opus, haiku, inherit, a model id or provider/id`,
    };
  }
  if (value === "inherit") return {};
  return value.includes("/") && parseModelRef(value) ? { model: value } : { modelAlias: value };
}
