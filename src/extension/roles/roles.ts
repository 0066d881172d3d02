/**
 * Roles — the built-in ones and those users define in agent-definition files — and the tool
 * set a child gets.
 */
import type { TurnLimits } from "../../contracts/limits.js";
import type { ThinkingLevel } from "../../contracts/meta.js";
import type { IsolationMode } from "../../contracts/tree.js";
import type { VerifySpec } from "../../contracts/verify.js";
import { errorValue } from "../../lib/text.js";
import type { AgentDefinition, DefinitionSource, RejectedDefinition } from "./agent-definitions.js";
import type { DiscoveredDefinitions } from "./definition-set.js";

export type RoleSource = "builtin" | DefinitionSource;

export interface Role {
  name: string;
  /** One sentence a model can choose a role by. */
  description: string;
  /** Tool names, or "parent" for the parent's active tools (extension tools included). */
  tools: readonly string[] | "parent";
  /** Default reasoning, clamped silently to what the child's model supports; none = the parent's. */
  reasoning?: ThinkingLevel;
  /** A role that starts from a clean context (`fork_turns` must be `none`). */
  requiresForkNone: boolean;
  source: RoleSource;
  /** Default model (`provider/id`) of a user-defined role; none = the parent's. */
  model?: string;
  /** A Claude Code file's model name (`sonnet`, …), matched against the usable models at spawn. */
  modelAlias?: string;
  /** Text appended to the child's system prompt (a user-defined role's markdown body). */
  prompt?: string;
  /** The agent-definition file of a user-defined role. */
  filePath?: string;
  /** A user-defined role's default isolation (`isolation: worktree` in its file); spawn_agent's parameter wins. */
  isolation?: IsolationMode;
  /** A user-defined role's per-turn limits (`limits:` in its file); spawn_agent's keys win, settings' lose. */
  limits?: TurnLimits;
  /** A user-defined role's fallback models (`fallback_models:` in its file); spawn_agent's parameter wins. */
  fallbackModels?: readonly string[];
  /** A user-defined role's default runner (`runner:` in its file); spawn_agent's parameter wins. */
  runner?: string;
  /** A user-defined role's checks (`verify:` in its file); spawn_agent's parameter wins. */
  verify?: VerifySpec;
  /** What of its file was left out (a Claude Code tool pi lacks, …), told to the user at session start. */
  notes?: readonly string[];
}

const ROLES: readonly Role[] = [
  {
    name: "scout",
    description: "Cheap read-only search; needs fork_turns none.",
    tools: ["read", "grep", "find", "ls"],
    reasoning: "low",
    requiresForkNone: true,
    source: "builtin",
  },
  {
    name: "implementation",
    description: "Edits code, runs bash; cannot delegate.",
    tools: ["read", "write", "edit", "bash", "grep", "find", "ls"],
    reasoning: "medium",
    requiresForkNone: false,
    source: "builtin",
  },
  {
    name: "specialist",
    description: "Hard problems: your tools, high reasoning.",
    tools: "parent",
    reasoning: "high",
    requiresForkNone: false,
    source: "builtin",
  },
];

export const ROLE_NAMES: readonly string[] = ROLES.map((role) => role.name);
/** Names no agent-definition file may take: the built-ins, and `default` (a plain child). */
export const RESERVED_ROLE_NAMES: readonly string[] = [...ROLE_NAMES, "default"];

/** One entry of pi's tool registry, reduced to what tool inheritance needs. */
export interface RegistryTool {
  name: string;
  /** The extension file that registers the tool, loadable by a child with `-e`. */
  sourcePath?: string;
  builtin: boolean;
}

/**
 * Reads `pi.getAllTools()`. pi gives every tool a `sourceInfo`:
 * - built-in tools: `{ path: "<builtin:read>", source: "builtin", scope: "temporary", … }`
 *   on 0.73.1 (`builtin:read` on 1.x, so `source` is what tells them), present for all seven
 *   (read, bash, edit, write, grep, find, ls; 1.x adds an inactive `powershell`) even when inactive;
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

/** The roles a spawn may name: built-ins, then usable definitions, and why others were refused. */
export interface RoleCatalog {
  roles: Role[];
  rejected: RejectedDefinition[];
  /** Project definitions replacing user ones of the same name. */
  overrides: DiscoveredDefinitions["overrides"];
  /** Project folders (`.pi/agents/`, `.claude/agents/`) that exist but are not read (project agents are off), with their file stems. */
  ignoredProjects?: Array<{ dir: string; names: string[] }>;
}

export const BUILTIN_CATALOG: RoleCatalog = { roles: [...ROLES], rejected: [], overrides: [] };

function roleFromDefinition(def: AgentDefinition): Role {
  return {
    name: def.name,
    description: def.description,
    tools: def.tools,
    ...(def.reasoning !== undefined && { reasoning: def.reasoning }),
    requiresForkNone: false,
    source: def.source,
    ...(def.model !== undefined && { model: def.model }),
    ...(def.modelAlias !== undefined && { modelAlias: def.modelAlias }),
    ...(def.prompt !== "" && { prompt: def.prompt }),
    filePath: def.filePath,
    ...(def.isolation !== undefined && { isolation: def.isolation }),
    ...(def.limits !== undefined && { limits: def.limits }),
    ...(def.fallbackModels !== undefined && { fallbackModels: def.fallbackModels }),
    ...(def.runner !== undefined && { runner: def.runner }),
    ...(def.verify !== undefined && { verify: def.verify }),
    ...(def.notes !== undefined && def.notes.length > 0 && { notes: def.notes }),
  };
}

/**
 * Why a definition's tools cannot be given to a child, checked against pi's full registry
 * (inactive tools included): names pi does not know, and tools no child can load (an SDK or
 * inline tool has no extension file).
 */
export function definitionToolsProblem(
  tools: AgentDefinition["tools"],
  registry: readonly RegistryTool[],
): string | undefined {
  if (tools === "parent") return undefined;
  const byName = new Map(registry.map((tool) => [tool.name, tool]));
  const unknown = tools.filter((name) => !byName.has(name));
  if (unknown.length > 0) {
    const known = [...new Set(registry.map((tool) => tool.name))].sort().join(", ");
    return `unknown tool${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")} (pi's tools here: ${known})`;
  }
  const unloadable = tools.filter((name) => {
    const tool = byName.get(name)!;
    return !tool.builtin && tool.sourcePath === undefined;
  });
  if (unloadable.length > 0) {
    const [noun, verb] = unloadable.length > 1 ? ["tools", "come"] : ["tool", "comes"];
    return `${noun} ${unloadable.join(", ")} ${verb} from no extension file a child can load`;
  }
  return undefined;
}

/**
 * Built-ins plus the discovered definitions. With a registry (pi's `getAllTools()`, complete
 * once every extension has loaded) a definition naming a tool the child could not get is
 * rejected; without one (at extension load) tool names are checked later, at spawn.
 */
export function buildRoleCatalog(found: DiscoveredDefinitions, registry?: readonly RegistryTool[]): RoleCatalog {
  const rejected = [...found.rejected];
  const roles: Role[] = [...ROLES];
  for (const def of found.definitions) {
    const problem = registry ? definitionToolsProblem(def.tools, registry) : undefined;
    if (problem) {
      // Every problem of the file at once: what was left out of it as well as why it is refused.
      const all = [problem, ...(def.notes ?? [])].join("; ");
      rejected.push({ filePath: def.filePath, source: def.source, name: def.name, problem: all });
    } else roles.push(roleFromDefinition(def));
  }
  const ignored = [
    { dir: found.dirs.ignoredProject, names: found.ignoredProjectNames },
    { dir: found.claude?.dirs.ignoredProject, names: found.claude?.ignoredProjectNames ?? [] },
  ].filter((entry): entry is { dir: string; names: string[] } => entry.dir !== undefined);
  return {
    roles,
    rejected,
    overrides: found.overrides,
    ...(ignored.length > 0 && { ignoredProjects: ignored }),
  };
}

export type RoleLookup = { ok: true; role: Role } | { ok: false; error: string };

/**
 * The role an `agent_type` names. An unknown name gets `unknown agent_type: <name>`,
 * followed by the reason when a definition file of that name was refused — a bad file must
 * not look like a typo in the call.
 */
export function lookupRole(catalog: RoleCatalog, name: string): RoleLookup {
  const role = catalog.roles.find((candidate) => candidate.name === name);
  if (role) return { ok: true, role };
  const reasons = catalog.rejected
    .filter((entry) => entry.name === name)
    .map((entry) => `agent definition ${entry.filePath} was rejected: ${entry.problem}`);
  for (const ignored of catalog.ignoredProjects ?? []) {
    if (!ignored.names.includes(name)) continue;
    reasons.push(
      `${ignored.dir} defines project agents, which are off: the user can set PI_SUBAGENTS_PROJECT_AGENTS=1 to use them`,
    );
  }
  const quoted = errorValue(name);
  return {
    ok: false,
    error:
      reasons.length > 0 ? `unknown agent_type: ${quoted} — ${reasons.join("; ")}` : `unknown agent_type: ${quoted}`,
  };
}

/** Roles described in spawn_agent's `agent_type` text; more are listed by name only. */
export const DESCRIBED_ROLES_MAX = 40;
/** Each defined role's description is cut to this many characters there. */
export const ROLE_DESCRIPTION_CHARS = 200;
/**
 * The described roles' entries together stay within this many characters (the roles past it
 * are listed by name): the tool schema is sent with every request, and the nine tools with
 * the built-in roles take under 5 000 characters.
 */
export const DESCRIBED_ROLES_CHARS = 2500;
/** Refused definition files listed there. */
export const LISTED_REJECTIONS_MAX = 5;

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The `agent_type` parameter's description: every role a model may choose, and bad files. */
export function describeAgentTypes(catalog: RoleCatalog): string {
  const builtin = catalog.roles.filter((role) => role.source === "builtin");
  const defined = catalog.roles.filter((role) => role.source !== "builtin");
  const parts = [`${builtin.map((role) => `\`${role.name}\` (${role.description})`).join("; ")}.`];
  if (defined.length > 0) {
    const described: string[] = [];
    let describedChars = 0;
    for (const role of defined) {
      const entry = `\`${role.name}\` (${role.source}${role.isolation === "worktree" ? ", in its own git worktree" : ""}: ${cut(role.description, ROLE_DESCRIPTION_CHARS)})`;
      if (described.length === DESCRIBED_ROLES_MAX || describedChars + entry.length > DESCRIBED_ROLES_CHARS) break;
      described.push(entry);
      describedChars += entry.length;
    }
    const rest = defined.slice(described.length).map((role) => `\`${role.name}\``);
    parts.push(
      `Defined by the user's agent files: ${described.join("; ")}${rest.length > 0 ? `; also ${rest.join(", ")}` : ""}.`,
    );
  }
  parts.push("Omit for a plain child like you.");
  if (catalog.rejected.length > 0) {
    const listed = catalog.rejected
      .slice(0, LISTED_REJECTIONS_MAX)
      .map((entry) => `${entry.filePath}: ${cut(entry.problem, ROLE_DESCRIPTION_CHARS)}`);
    const more = catalog.rejected.length - listed.length;
    parts.push(
      `Agent definition files that were refused (tell the user if they ask for these roles): ${listed.join("; ")}${more > 0 ? `; and ${more} more` : ""}.`,
    );
  }
  return parts.join(" ");
}

/** What the user should know about their agent-definition files (session start): one line each. */
export function definitionWarnings(catalog: RoleCatalog): string[] {
  return [
    ...catalog.rejected.map(
      (entry) => `pi-subagent-tree: agent definition ${entry.filePath} is not used: ${entry.problem}`,
    ),
    ...catalog.overrides.map(
      ({ project, user }) =>
        `pi-subagent-tree: project agent ${project.name} (${project.filePath}) replaces the user's ${user.filePath}`,
    ),
    ...catalog.roles.flatMap((role) =>
      role.notes ? [`pi-subagent-tree: agent definition ${role.filePath}: ${role.notes.join("; ")}`] : [],
    ),
  ];
}

export interface ChildToolsInput {
  /** undefined for a plain child. */
  role: Role | undefined;
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
 * with `read` alone. A built-in role child loads only this package's extension, so an
 * extension tool named like a built-in never reaches it; its own coordination tools stay
 * inactive because the role list omits them.
 *
 * A user-defined role gets exactly the tools its file names (checked against the registry
 * when the spawn was validated), extension tools included, with the extensions providing
 * them; naming spawn_agent and wait_agent lets it delegate.
 *
 * A plain child, a specialist and a user-defined role without `tools:` get the parent's
 * active tools and load the extensions that provide them. A parent tool the child could not
 * have (an SDK or inline tool with no file, or a name missing from the registry) is dropped
 * rather than listed as active.
 */
export function resolveChildTools(input: ChildToolsInput): { tools: string[]; extensions: string[] } {
  const byName = new Map<string, RegistryTool>();
  for (const tool of input.allTools) if (!byName.has(tool.name)) byName.set(tool.name, tool);
  const role = input.role;

  if (role && role.tools !== "parent" && role.source === "builtin") {
    const tools = role.tools.filter((name) => byName.has(name));
    return { tools, extensions: [input.ownExtensionPath] };
  }

  const tools: string[] = [];
  const extensions: string[] = [];
  const wanted = role && role.tools !== "parent" ? role.tools : input.parentActiveTools;
  for (const name of unique(wanted)) {
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
