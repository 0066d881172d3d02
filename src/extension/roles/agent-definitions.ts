/**
 * User-defined roles: markdown files with YAML frontmatter, found in the pi agent dir's
 * `agents/` (`~/.pi/agent/agents/`, moved by PI_CODING_AGENT_DIR) and, only when the user
 * opts in with PI_SUBAGENTS_PROJECT_AGENTS=1, in the nearest `.pi/agents/` above the cwd.
 *
 *   ---
 *   name: reviewer
 *   description: Reviews a diff for bugs; read-only.
 *   tools: read, grep, find, ls        # or a YAML list; omit for the parent's tools, [] for none
 *   model: anthropic/claude-sonnet-4-5  # provider/id or `inherit` (the default)
 *   reasoning: high                     # a default, clamped to what the model supports
 *   isolation: worktree                 # a default: the child works in its own git worktree
 *   ---
 *   You are a code reviewer. …          (appended to the child's system prompt)
 *
 * `parseAgentDefinition` and `mergeDefinitions` are pure; `discoverAgentDefinitions` does the
 * file I/O. A file that breaks a rule is never half-used: it becomes a `RejectedDefinition`
 * whose problem is shown to the user at session start and in spawn_agent's errors.
 * docs/agents.md is the user's guide to the format and to every choice made here.
 */
import fs from "node:fs";
import path from "node:path";
import { getAgentDir, parseFrontmatter } from "@mariozechner/pi-coding-agent";
import { ENV } from "../../contracts/env.js";
import { THINKING_LEVELS, type ThinkingLevel } from "../../contracts/meta.js";
import { ISOLATION_MODES, type IsolationMode } from "../../contracts/tree.js";
import { errorText, isRecord } from "../../lib/values.js";
import { isThinkingLevel, parseModelRef } from "./models.js";
import { buildRoleCatalog, RESERVED_ROLE_NAMES, type RegistryTool, type RoleCatalog } from "./roles.js";

export type DefinitionSource = "user" | "project";

export interface AgentDefinition {
  name: string;
  description: string;
  /** Tool names for the child; "parent" when the file names none (the parent's tools). */
  tools: readonly string[] | "parent";
  /** Default model as `provider/id`; undefined = the parent's model (`inherit`). */
  model?: string;
  /** Default reasoning, clamped like a built-in role's; undefined = the parent's level. */
  reasoning?: ThinkingLevel;
  /** Default isolation; undefined = `none` (spawn_agent's `isolation` parameter wins either way). */
  isolation?: IsolationMode;
  /** The markdown body, appended to the child's system prompt ("" = nothing to add). */
  prompt: string;
  source: DefinitionSource;
  filePath: string;
}

export interface RejectedDefinition {
  filePath: string;
  source: DefinitionSource;
  /** The name the file declares, else its file name without `.md` (to match an agent_type). */
  name: string;
  problem: string;
}

export type ParsedDefinition = { ok: true; definition: AgentDefinition } | { ok: false; rejected: RejectedDefinition };

export const DEFINITION_FIELDS = ["name", "description", "tools", "model", "reasoning", "isolation"] as const;
/** lowercase letters, digits, `_` and `-` (Claude Code's `code-reviewer` style), a letter first. */
export const DEFINITION_NAME_PATTERN = /^[a-z][a-z0-9_-]{0,63}$/;
/** Larger files are refused: the body goes into every turn's system prompt. */
export const MAX_DEFINITION_BYTES = 64 * 1024;

/** Why a field (or the whole file) is refused. */
type Problem = { problem: string };
const isProblem = (value: unknown): value is Problem => isRecord(value) && typeof value.problem === "string";

/** Parses one file's text. Pure: no file system, no registry (tool names are checked at use). */
export function parseAgentDefinition(content: string, filePath: string, source: DefinitionSource): ParsedDefinition {
  const stem = path.basename(filePath).replace(/\.md$/i, "");
  const reject = (problem: string, name = stem): ParsedDefinition => ({
    ok: false,
    rejected: { filePath, source, name, problem },
  });
  const parsed = readFrontmatter(content);
  if (isProblem(parsed)) return reject(parsed.problem);
  const { fm, body } = parsed;
  // A missing or non-string name leaves the file name, which is what an agent_type would match.
  const declared = typeof fm.name === "string" && fm.name.trim() !== "" ? fm.name.trim() : stem;
  const name = checkFieldsAndName(fm);
  if (isProblem(name)) return reject(name.problem, declared);
  const settings = parseSettings(fm);
  if (isProblem(settings)) return reject(settings.problem, name);
  return { ok: true, definition: { name, ...settings, prompt: body.trim(), source, filePath } };
}

function readFrontmatter(content: string): { fm: Record<string, unknown>; body: string } | Problem {
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

/** Only the known fields, and a name that can be an agent_type. */
function checkFieldsAndName(fm: Record<string, unknown>): string | Problem {
  const unknown = Object.keys(fm).filter((key) => !(DEFINITION_FIELDS as readonly string[]).includes(key));
  if (unknown.length > 0) {
    const list = unknown.map((key) => `"${key}"`).join(", ");
    return {
      problem: `unknown field${unknown.length > 1 ? "s" : ""} ${list} (allowed: ${DEFINITION_FIELDS.join(", ")})`,
    };
  }
  if (fm.name === undefined || fm.name === null) return { problem: "missing `name:` in the frontmatter" };
  if (typeof fm.name !== "string" || !DEFINITION_NAME_PATTERN.test(fm.name)) {
    return {
      problem: `name ${JSON.stringify(fm.name)} must be 1-64 lowercase letters, digits, "_" or "-", starting with a letter`,
    };
  }
  return fm.name;
}

type Settings = Omit<AgentDefinition, "name" | "prompt" | "source" | "filePath">;

/** Every field but the name, in the order their problems are reported. */
function parseSettings(fm: Record<string, unknown>): Settings | Problem {
  if (fm.description === undefined || fm.description === null)
    return { problem: "missing `description:` in the frontmatter" };
  if (typeof fm.description !== "string" || fm.description.trim() === "")
    return { problem: "description must be a non-empty string" };
  const description = fm.description.replace(/\s+/g, " ").trim();
  const tools = parseTools(fm);
  if (isProblem(tools)) return tools;
  const model = parseModel(fm);
  if (isProblem(model)) return model;
  const reasoning = parseReasoning(fm);
  if (isProblem(reasoning)) return reasoning;
  const isolation = parseIsolation(fm);
  if (isProblem(isolation)) return isolation;
  return {
    description,
    tools,
    ...(model !== undefined && { model }),
    ...(reasoning !== undefined && { reasoning }),
    ...(isolation !== undefined && { isolation }),
  };
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

function parseReasoning(fm: Record<string, unknown>): ThinkingLevel | undefined | Problem {
  if (!("reasoning" in fm)) return undefined;
  if (isThinkingLevel(fm.reasoning)) return fm.reasoning;
  return { problem: `reasoning ${JSON.stringify(fm.reasoning)} must be one of ${THINKING_LEVELS.join(", ")}` };
}

function parseIsolation(fm: Record<string, unknown>): IsolationMode | undefined | Problem {
  if (!("isolation" in fm)) return undefined;
  const value = typeof fm.isolation === "string" ? fm.isolation.trim() : fm.isolation;
  if ((ISOLATION_MODES as readonly unknown[]).includes(value)) return value as IsolationMode;
  return { problem: `isolation ${JSON.stringify(fm.isolation)} must be ${ISOLATION_MODES.join(" or ")}` };
}

/** `tools: a, b` or a YAML list; absent = the parent's tools; `[]` = none. */
function parseTools(fm: Record<string, unknown>): readonly string[] | "parent" | Problem {
  if (!("tools" in fm)) return "parent";
  const value = fm.tools;
  const empty = {
    problem:
      "tools is empty: list tool names, write `tools: []` for no tools, or leave the field out for the parent's tools",
  };
  if (value === null) return empty;
  let names: unknown[];
  if (typeof value === "string") {
    if (value.trim() === "") return empty;
    names = value.split(",").map((name) => name.trim());
  } else if (Array.isArray(value)) {
    names = value.map((name) => (typeof name === "string" ? name.trim() : name));
  } else {
    return { problem: "tools must be a comma-separated list (`tools: read, grep`) or a YAML list" };
  }
  const bad = names.find((name) => typeof name !== "string" || name === "" || /\s/.test(name));
  if (bad !== undefined) return { problem: `tools holds ${JSON.stringify(bad)}, which is not a tool name` };
  return [...new Set(names as string[])];
}

export interface DefinitionSet {
  definitions: AgentDefinition[];
  rejected: RejectedDefinition[];
  /** Project definitions that replace a user definition of the same name (shown as a warning). */
  overrides: Array<{ project: AgentDefinition; user: AgentDefinition }>;
}

/**
 * Combines the parsed files. A name defined twice in one directory is ambiguous: every file
 * that defines it is rejected. A built-in role name (or `default`) is never redefined, so
 * `scout` always means what spawn_agent's description says. A project definition replaces a
 * user one of the same name (pi's subagent example and Claude Code do the same).
 * The result is sorted by name.
 */
export function mergeDefinitions(
  user: ParsedDefinition[],
  project: ParsedDefinition[],
  reservedNames: readonly string[],
): DefinitionSet {
  const rejected: RejectedDefinition[] = [];
  const byName = (parsed: ParsedDefinition[]): Map<string, AgentDefinition> => {
    const groups = new Map<string, AgentDefinition[]>();
    for (const entry of parsed) {
      if (!entry.ok) {
        rejected.push(entry.rejected);
        continue;
      }
      const def = entry.definition;
      if (reservedNames.includes(def.name)) {
        const problem =
          def.name === "default"
            ? 'name "default" is reserved for a plain child (spawn_agent without agent_type); choose another name'
            : `name "${def.name}" is a built-in agent_type, which cannot be redefined; choose another name`;
        rejected.push({ filePath: def.filePath, source: def.source, name: def.name, problem });
        continue;
      }
      groups.set(def.name, [...(groups.get(def.name) ?? []), def]);
    }
    const unique = new Map<string, AgentDefinition>();
    for (const [name, defs] of groups) {
      if (defs.length === 1) {
        unique.set(name, defs[0]!);
        continue;
      }
      for (const def of defs) {
        const others = defs.filter((other) => other !== def).map((other) => other.filePath);
        rejected.push({
          filePath: def.filePath,
          source: def.source,
          name,
          problem: `name "${name}" is also defined by ${others.join(", ")}; rename one of them`,
        });
      }
    }
    return unique;
  };
  const users = byName(user);
  const projects = byName(project);
  const overrides: DefinitionSet["overrides"] = [];
  const merged = new Map(users);
  for (const [name, def] of projects) {
    const shadowed = users.get(name);
    if (shadowed) overrides.push({ project: def, user: shadowed });
    merged.set(name, def);
  }
  const definitions = [...merged.values()].sort((a, b) => a.name.localeCompare(b.name));
  rejected.sort((a, b) => a.filePath.localeCompare(b.filePath));
  return { definitions, rejected, overrides };
}

/** Where definitions come from, for one cwd and environment. */
export interface DefinitionDirs {
  user: string;
  /** The nearest `.pi/agents/` above the cwd, when the user opted in. */
  project?: string;
  /** That directory when it exists but project agents are off (so a hint can say why). */
  ignoredProject?: string;
}

/** `<pi agent dir>/agents`: pi's own `getAgentDir()` honours PI_CODING_AGENT_DIR (and `~`). */
export function userAgentsDir(): string {
  return path.join(getAgentDir(), "agents");
}

export function projectAgentsEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  const value = env[ENV.projectAgents]?.trim().toLowerCase();
  return value === "1" || value === "true" || value === "yes";
}

/** The nearest `.pi/agents` directory in `cwd` or above it. */
export function findProjectAgentsDir(cwd: string): string | undefined {
  let dir = path.resolve(cwd);
  for (;;) {
    const candidate = path.join(dir, ".pi", "agents");
    if (isDirectory(candidate)) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

export function definitionDirs(cwd: string, env: NodeJS.ProcessEnv = process.env): DefinitionDirs {
  const user = userAgentsDir();
  const found = findProjectAgentsDir(cwd);
  // PI_CODING_AGENT_DIR=<project>/.pi makes both the same directory: read it once, as the user's.
  const project = found !== undefined && sameDirectory(found, user) ? undefined : found;
  if (project === undefined) return { user };
  return projectAgentsEnabled(env) ? { user, project } : { user, ignoredProject: project };
}

/** Reads every `*.md` file directly in `dir` (none when it does not exist), sorted by file name. */
export function readDefinitionDir(dir: string, source: DefinitionSource): ParsedDefinition[] {
  const names = markdownNames(dir);
  const parsed: ParsedDefinition[] = [];
  for (const name of names) {
    const filePath = path.join(dir, name);
    const stem = name.replace(/\.md$/i, "");
    const fail = (problem: string) => parsed.push({ ok: false, rejected: { filePath, source, name: stem, problem } });
    try {
      const stat = fs.statSync(filePath);
      if (!stat.isFile()) continue;
      if (stat.size > MAX_DEFINITION_BYTES) {
        fail(`the file is ${stat.size} bytes; agent definitions are limited to ${MAX_DEFINITION_BYTES} bytes`);
        continue;
      }
      parsed.push(parseAgentDefinition(fs.readFileSync(filePath, "utf8"), filePath, source));
    } catch (err) {
      fail(`cannot read the file: ${firstLine(errorText(err))}`);
    }
  }
  return parsed;
}

export interface DiscoveredDefinitions extends DefinitionSet {
  dirs: DefinitionDirs;
  /** File names (without `.md`) in `dirs.ignoredProject`, which is not read further. */
  ignoredProjectNames: string[];
}

/** Everything the agent-definition files of this cwd and environment say, right now. */
export function discoverAgentDefinitions(
  cwd: string,
  reservedNames: readonly string[] = RESERVED_ROLE_NAMES,
  env: NodeJS.ProcessEnv = process.env,
): DiscoveredDefinitions {
  const dirs = definitionDirs(cwd, env);
  const user = readDefinitionDir(dirs.user, "user");
  const project = dirs.project ? readDefinitionDir(dirs.project, "project") : [];
  const ignoredProjectNames = dirs.ignoredProject
    ? markdownNames(dirs.ignoredProject).map((name) => name.replace(/\.md$/i, ""))
    : [];
  return { ...mergeDefinitions(user, project, reservedNames), dirs, ignoredProjectNames };
}

/**
 * The roles a spawn may name right now: read on every call, so an edited file counts at the
 * next spawn_agent. `registry` (pi's tools) checks the files' tool names.
 */
export function loadRoleCatalog(
  cwd: string,
  registry?: readonly RegistryTool[],
  env: NodeJS.ProcessEnv = process.env,
): RoleCatalog {
  return buildRoleCatalog(discoverAgentDefinitions(cwd, RESERVED_ROLE_NAMES, env), registry);
}

/** `*.md` entries of `dir`, sorted; none when it cannot be read. */
function markdownNames(dir: string): string[] {
  try {
    return fs
      .readdirSync(dir)
      .filter((name) => name.toLowerCase().endsWith(".md"))
      .sort();
  } catch {
    return [];
  }
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function sameDirectory(a: string, b: string): boolean {
  try {
    return fs.realpathSync(a) === fs.realpathSync(b);
  } catch {
    return path.resolve(a) === path.resolve(b);
  }
}

function firstLine(text: string): string {
  return text.split("\n")[0]!.trim();
}
