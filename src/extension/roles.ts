/**
 * Built-in roles and the tool set a child gets (SPEC 3.3, seed report F-02).
 */
import type { ThinkingLevel } from "../contracts/meta.js";

export interface Role {
  name: string;
  /** One sentence a model can choose a role by. */
  description: string;
  /** Tool names, or "parent" for the parent's active tools (extension tools included). */
  tools: readonly string[] | "parent";
  /** Default reasoning; clamped silently to what the child's model supports. */
  reasoning: ThinkingLevel;
  /** A role that starts from a clean context (`fork_turns` must be `none`). */
  requiresForkNone: boolean;
}

const ROLES: readonly Role[] = [
  {
    name: "scout",
    description:
      "Cheap read-only recon (read, grep, find, ls; low reasoning) for finding files and facts; needs fork_turns `none`.",
    tools: ["read", "grep", "find", "ls"],
    reasoning: "low",
    requiresForkNone: true,
  },
  {
    name: "implementation",
    description:
      "Makes code changes with read, write, edit, bash, grep, find and ls at medium reasoning; no extension tools.",
    tools: ["read", "write", "edit", "bash", "grep", "find", "ls"],
    reasoning: "medium",
    requiresForkNone: false,
  },
  {
    name: "specialist",
    description: "Hard problems: the parent's own tools (extension tools included) at high reasoning.",
    tools: "parent",
    reasoning: "high",
    requiresForkNone: false,
  },
];

export const ROLE_NAMES: readonly string[] = ROLES.map((role) => role.name);

export function getRole(name: string): Role | undefined {
  return ROLES.find((role) => role.name === name);
}

/** One entry of pi's tool registry, reduced to what tool inheritance needs. */
export interface RegistryTool {
  name: string;
  /** The extension file that registers the tool, loadable by a child with `-e`. */
  sourcePath?: string;
  builtin: boolean;
}

/**
 * Reads `pi.getAllTools()`. pi 0.73 gives every tool a `sourceInfo`:
 * - built-in tools: `{ path: "<builtin:read>", source: "builtin", scope: "temporary", … }`,
 *   present for all seven (read, bash, edit, write, grep, find, ls) even when inactive;
 * - extension tools: the extension's `sourceInfo`, whose `path` is the extension's file
 *   (absolute for `-e` paths, which pi resolves; `source` is "cli", "local", a package, …);
 * - SDK custom tools and inline extension factories: synthetic `<sdk:name>` / `<inline…>`
 *   paths, which no child can load, so they get no `sourcePath`.
 */
export function describeRegistry(tools: ReadonlyArray<{ name: string; sourceInfo?: unknown }>): RegistryTool[] {
  return tools.map((tool) => {
    const info = (typeof tool.sourceInfo === "object" && tool.sourceInfo !== null ? tool.sourceInfo : {}) as {
      path?: unknown;
      source?: unknown;
    };
    const path = typeof info.path === "string" ? info.path : undefined;
    const builtin = info.source === "builtin" || (path?.startsWith("<builtin:") ?? false);
    const loadable = path !== undefined && path !== "" && !(path.startsWith("<") && path.endsWith(">"));
    return builtin || !loadable ? { name: tool.name, builtin } : { name: tool.name, sourcePath: path, builtin };
  });
}

export interface ChildToolsInput {
  /** undefined (or "default") for a plain child. */
  role: string | undefined;
  parentActiveTools: string[];
  /** pi's full registry (`describeRegistry(pi.getAllTools())`), inactive tools included. */
  allTools: RegistryTool[];
  /** This package's extension, which every child loads so it can delegate. */
  ownExtensionPath: string;
}

/**
 * The tools a child starts with (`--tools`) and the extensions it loads (`-e`).
 *
 * A role's list is resolved against the full registry, not the parent's active tools: pi
 * leaves grep/find/ls inactive by default, and intersecting with the active set left scouts
 * with `read` alone (F-02). A role child loads only this package's extension, so an
 * extension tool named like a built-in never reaches it; its own coordination tools stay
 * inactive because the role list omits them.
 *
 * A plain child and a specialist get the parent's active tools and load the extensions that
 * provide them. A parent tool the child could not have (an SDK or inline tool with no file,
 * or a name missing from the registry) is dropped rather than listed as active.
 */
export function resolveChildTools(input: ChildToolsInput): { tools: string[]; extensions: string[] } {
  const byName = new Map<string, RegistryTool>();
  for (const tool of input.allTools) if (!byName.has(tool.name)) byName.set(tool.name, tool);

  const roleName = input.role === undefined || input.role === "" || input.role === "default" ? undefined : input.role;
  const role = roleName === undefined ? undefined : getRole(roleName);
  if (roleName !== undefined && !role) throw new Error(`unknown agent_type: ${roleName}`);

  if (role && role.tools !== "parent") {
    const tools = role.tools.filter((name) => byName.has(name));
    return { tools, extensions: [input.ownExtensionPath] };
  }

  const tools: string[] = [];
  const extensions: string[] = [];
  for (const name of unique(input.parentActiveTools)) {
    const tool = byName.get(name);
    if (!tool) continue;
    if (tool.builtin) {
      tools.push(name);
    } else if (tool.sourcePath !== undefined) {
      tools.push(name);
      if (!extensions.includes(tool.sourcePath)) extensions.push(tool.sourcePath);
    }
  }
  if (!extensions.includes(input.ownExtensionPath)) extensions.push(input.ownExtensionPath);
  return { tools, extensions };
}

function unique(names: readonly string[]): string[] {
  return [...new Set(names)];
}
