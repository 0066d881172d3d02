/**
 * The definitions found in the user's and the project's folders, combined into the roles a
 * session offers: which files are refused for a clash, which replace another (the parsing of
 * one file is agent-definitions.ts).
 */

import type { AgentDefinition, ParsedDefinition, RejectedDefinition } from "./agent-definitions.js";

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

/** Where definitions of one format come from, for one cwd and environment. */
export interface DefinitionDirs {
  user: string;
  /** The nearest project folder above the cwd, when the user opted in. */
  project?: string;
  /** That folder when it exists but project agents are off (so a hint can say why). */
  ignoredProject?: string;
}

export interface DiscoveredDefinitions extends DefinitionSet {
  dirs: DefinitionDirs;
  /** File names (without `.md`) in `dirs.ignoredProject`, which is not read further. */
  ignoredProjectNames: string[];
  /** Claude Code's folders, and the file names of its project folder when that is not read. */
  claude?: { dirs: DefinitionDirs; ignoredProjectNames: string[] };
}
