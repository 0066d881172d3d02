/**
 * Reading agent-definition files (where they are: definition-dirs.ts): each folder's `*.md`
 * files parsed in pi's format or Claude Code's, merged by precedence into the roles a spawn may
 * name.
 */
import fs from "node:fs";
import path from "node:path";
import { errorText } from "../../lib/values.js";
import {
  type DefinitionSource,
  firstLine,
  MAX_DEFINITION_BYTES,
  type ParsedDefinition,
  parseAgentDefinition,
} from "./agent-definitions.js";
import { parseClaudeAgentDefinition } from "./claude-agents.js";
import { type DefinitionFormat, discoverDefinitions, markdownNames } from "./definition-dirs.js";
import type { DiscoveredDefinitions } from "./definition-set.js";
import { buildRoleCatalog, RESERVED_ROLE_NAMES, type RegistryTool, type RoleCatalog } from "./roles.js";

export {
  claudeDefinitionDirs,
  claudeUserAgentsDir,
  definitionDirs,
  findProjectAgentsDir,
  projectAgentsEnabled,
  userAgentsDir,
} from "./definition-dirs.js";

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

/** Everything the agent-definition files of this cwd and environment say, right now. */
export function discoverAgentDefinitions(
  cwd: string,
  reservedNames: readonly string[] = RESERVED_ROLE_NAMES,
  env: NodeJS.ProcessEnv = process.env,
): DiscoveredDefinitions {
  return discoverDefinitions(cwd, reservedNames, env, readDefinitionDir);
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
