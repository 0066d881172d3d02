/**
 * Where agent-definition files are, and reading them: pi's folders (the agent dir's `agents/`,
 * the project's `.pi/agents/`) and Claude Code's (`~/.claude/agents/`, the project's
 * `.claude/agents/`), with one trust rule for both kinds of project folder: read only when the
 * user opted in with PI_SUBAGENTS_PROJECT_AGENTS=1. Precedence, highest first: the project's
 * `.pi/agents`, the project's `.claude/agents`, the user's pi folder, `~/.claude/agents`
 * (docs/agents.md says why).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { getAgentDir } from "@mariozechner/pi-coding-agent";
import { ENV } from "../../contracts/env.js";
import { folderNames } from "../../lib/folder-names.js";
import { errorText } from "../../lib/values.js";
import {
  type DefinitionSource,
  firstLine,
  MAX_DEFINITION_BYTES,
  type ParsedDefinition,
  parseAgentDefinition,
} from "./agent-definitions.js";
import { parseClaudeAgentDefinition } from "./claude-agents.js";
import { type DefinitionDirs, type DiscoveredDefinitions, mergeDefinitions } from "./definition-set.js";
import { buildRoleCatalog, RESERVED_ROLE_NAMES, type RegistryTool, type RoleCatalog } from "./roles.js";

/** Which tool a folder's files were written for: pi's format, or Claude Code's (mapped). */
export type DefinitionFormat = "pi" | "claude";

/** `<pi agent dir>/agents`: pi's own `getAgentDir()` honours PI_CODING_AGENT_DIR (and `~`). */
export function userAgentsDir(): string {
  return path.join(getAgentDir(), "agents");
}

/** `~/.claude/agents`, where Claude Code keeps a user's own agents (HOME, as Claude Code reads it). */
export function claudeUserAgentsDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(env.HOME?.trim() || os.homedir(), ".claude", "agents");
}

export function projectAgentsEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  const value = env[ENV.projectAgents]?.trim().toLowerCase();
  return value === "1" || value === "true" || value === "yes";
}

/** The nearest `<folder>/agents` directory (`.pi` by default) in `cwd` or above it. */
export function findProjectAgentsDir(cwd: string, folder = ".pi"): string | undefined {
  let dir = path.resolve(cwd);
  for (;;) {
    const candidate = path.join(dir, folder, "agents");
    if (isDirectory(candidate)) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

export function definitionDirs(cwd: string, env: NodeJS.ProcessEnv = process.env): DefinitionDirs {
  return dirsOf(userAgentsDir(), findProjectAgentsDir(cwd), env);
}

export function claudeDefinitionDirs(cwd: string, env: NodeJS.ProcessEnv = process.env): DefinitionDirs {
  return dirsOf(claudeUserAgentsDir(env), findProjectAgentsDir(cwd, ".claude"), env);
}

function dirsOf(user: string, found: string | undefined, env: NodeJS.ProcessEnv): DefinitionDirs {
  // PI_CODING_AGENT_DIR=<project>/.pi, or a cwd under HOME without a `.claude/agents` of its own,
  // makes both the same directory: read it once, as the user's.
  const project = found !== undefined && sameDirectory(found, user) ? undefined : found;
  if (project === undefined) return { user };
  return projectAgentsEnabled(env) ? { user, project } : { user, ignoredProject: project };
}

/** Reads every `*.md` file directly in `dir` (none when it does not exist), sorted by file name. */
export function readDefinitionDir(
  dir: string,
  source: DefinitionSource,
  format: DefinitionFormat = "pi",
): ParsedDefinition[] {
  const parse = format === "claude" ? parseClaudeAgentDefinition : parseAgentDefinition;
  const parsed: ParsedDefinition[] = [];
  for (const name of markdownNames(dir)) {
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
      parsed.push(parse(fs.readFileSync(filePath, "utf8"), filePath, source));
    } catch (err) {
      fail(`cannot read the file: ${firstLine(errorText(err))}`);
    }
  }
  return parsed;
}

/**
 * One level's files (the user's, or the project's): a pi file shadows a Claude Code file of
 * the same name, refused or not, so a role someone adapted for pi is the one used and a
 * refusal of it is never covered up by the original it was adapted from.
 */
export function preferPiFiles(pi: ParsedDefinition[], claude: ParsedDefinition[]): ParsedDefinition[] {
  const nameOf = (entry: ParsedDefinition) => (entry.ok ? entry.definition.name : entry.rejected.name);
  const piNames = new Set(pi.map(nameOf));
  return [...pi, ...claude.filter((entry) => !piNames.has(nameOf(entry)))];
}

/** Everything the agent-definition files of this cwd and environment say, right now. */
export function discoverAgentDefinitions(
  cwd: string,
  reservedNames: readonly string[] = RESERVED_ROLE_NAMES,
  env: NodeJS.ProcessEnv = process.env,
): DiscoveredDefinitions {
  const dirs = definitionDirs(cwd, env);
  const claudeDirs = claudeDefinitionDirs(cwd, env);
  const read = (dir: string | undefined, source: DefinitionSource, format: DefinitionFormat) =>
    dir ? readDefinitionDir(dir, source, format) : [];
  const user = preferPiFiles(read(dirs.user, "user", "pi"), read(claudeDirs.user, "user", "claude"));
  const project = preferPiFiles(read(dirs.project, "project", "pi"), read(claudeDirs.project, "project", "claude"));
  return {
    ...mergeDefinitions(user, project, reservedNames),
    dirs,
    ignoredProjectNames: stemsIn(dirs.ignoredProject),
    claude: { dirs: claudeDirs, ignoredProjectNames: stemsIn(claudeDirs.ignoredProject) },
  };
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

function stemsIn(dir: string | undefined): string[] {
  return dir ? markdownNames(dir).map((name) => name.replace(/\.md$/i, "")) : [];
}

/** `*.md` entries of `dir`, sorted; none when it cannot be read. */
function markdownNames(dir: string): string[] {
  return folderNames(dir)
    .filter((name) => name.toLowerCase().endsWith(".md"))
    .sort();
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
