/**
 * Where agent-definition files are: pi's folders (the agent dir's `agents/`, the project's
 * `.pi/agents/`) and Claude Code's (`~/.claude/agents/`, the project's `.claude/agents/`), with
 * one trust rule for both kinds of project folder: read only when the user opted in with
 * PI_SUBAGENTS_PROJECT_AGENTS=1. Precedence, highest first: the project's `.pi/agents`, the
 * project's `.claude/agents`, the user's pi folder, `~/.claude/agents` (docs/agents.md says
 * why). Reading and parsing the files is definition-files.ts, imported only when there are
 * files: pi evaluates every module the extension imports at load again in each child's pi.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { getAgentDir } from "@mariozechner/pi-coding-agent";
import { ENV } from "../../contracts/env.js";
import { folderNames } from "../../lib/folder-names.js";
import type { DefinitionSource, ParsedDefinition } from "./agent-definitions.js";
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

/** How one folder's files are read (definition-files.ts parses them). */
export type DefinitionReader = (dir: string, source: DefinitionSource, format: DefinitionFormat) => ParsedDefinition[];

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

/** Everything the agent-definition files of this cwd and environment say, right now, each folder read by `readDir`. */
export function discoverDefinitions(
  cwd: string,
  reservedNames: readonly string[],
  env: NodeJS.ProcessEnv,
  readDir: DefinitionReader,
): DiscoveredDefinitions {
  const dirs = definitionDirs(cwd, env);
  const claudeDirs = claudeDefinitionDirs(cwd, env);
  const read = (dir: string | undefined, source: DefinitionSource, format: DefinitionFormat) =>
    dir ? readDir(dir, source, format) : [];
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
 * The roles at a session's start, which spawn_agent's description lists: the files are parsed
 * (definition-files.ts imported) only when a folder holds one, which in most pi processes —
 * every child's among them — none does. The same catalog as loadRoleCatalog's either way.
 */
export async function sessionRoleCatalog(
  cwd: string,
  registry?: readonly RegistryTool[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<RoleCatalog> {
  const folders = [definitionDirs(cwd, env), claudeDefinitionDirs(cwd, env)].flatMap((dirs) => [
    dirs.user,
    dirs.project,
    dirs.ignoredProject,
  ]);
  if (folders.some((dir) => dir !== undefined && markdownNames(dir).length > 0))
    return (await import("./definition-files.js")).loadRoleCatalog(cwd, registry, env);
  // No file to read: every folder reads as empty, as readDefinitionDir reads a folder without one.
  return buildRoleCatalog(
    discoverDefinitions(cwd, RESERVED_ROLE_NAMES, env, () => []),
    registry,
  );
}

function stemsIn(dir: string | undefined): string[] {
  return dir ? markdownNames(dir).map((name) => name.replace(/\.md$/i, "")) : [];
}

/** `*.md` entries of `dir`, sorted; none when it cannot be read. */
export function markdownNames(dir: string): string[] {
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
