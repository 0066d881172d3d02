import { describe, expect, it } from "vitest";
import type { AgentDefinition, RejectedDefinition } from "../../../../src/extension/roles/agent-definitions.js";
import type { DiscoveredDefinitions } from "../../../../src/extension/roles/definition-set.js";
import {
  BUILTIN_CATALOG,
  buildRoleCatalog,
  DESCRIBED_ROLES_CHARS,
  DESCRIBED_ROLES_MAX,
  definitionToolsProblem,
  definitionWarnings,
  describeAgentTypes,
  describeRegistry,
  lookupRole,
  type RegistryTool,
  ROLE_NAMES,
  type Role,
  resolveChildTools,
} from "../../../../src/extension/roles/roles.js";

/** A built-in role, read from the catalog spawn_agent uses. */
const builtinRole = (name: string): Role | undefined => BUILTIN_CATALOG.roles.find((role) => role.name === name);

const OWN = "/pkg/pi-subagent-tree/src/extension/index.ts";
const builtin = (name: string) => ({
  name,
  sourceInfo: { path: `<builtin:${name}>`, source: "builtin", scope: "temporary", origin: "top-level" },
});
const fromFile = (name: string, path: string) => ({
  name,
  sourceInfo: { path, source: "cli", scope: "temporary", origin: "top-level", baseDir: "/ext" },
});

// What pi 0.73.1's getAllTools() returned with `-e ./ext.ts` (checked by running pi), plus
// this package's tools, another extension and an SDK tool.
const RAW_REGISTRY = [
  ...["read", "bash", "edit", "write", "grep", "find", "ls"].map(builtin),
  fromFile("ast_grep_run", "/ext/ast-grep/index.ts"),
  fromFile("ast_grep_scan", "/ext/ast-grep/index.ts"),
  fromFile("spawn_agent", OWN),
  fromFile("wait_agent", OWN),
  fromFile("jira", "/ext/jira.ts"),
  { name: "sdk_tool", sourceInfo: { path: "<sdk:sdk_tool>", source: "sdk", scope: "temporary", origin: "top-level" } },
];
const REGISTRY = describeRegistry(RAW_REGISTRY);
// pi's default active set plus every active extension tool.
const PARENT_ACTIVE = [
  "read",
  "bash",
  "edit",
  "write",
  "ast_grep_run",
  "spawn_agent",
  "wait_agent",
  "jira",
  "sdk_tool",
];

describe("roles", () => {
  it("has the three built-in roles with actionable descriptions", () => {
    expect(ROLE_NAMES).toEqual(["scout", "implementation", "specialist"]);
    for (const name of ROLE_NAMES) expect(builtinRole(name)?.description).toMatch(/\.$/);
    expect(builtinRole("nonexistent")).toBeUndefined();
  });

  it.each([
    ["scout", ["read", "grep", "find", "ls"], "low", true],
    ["implementation", ["read", "write", "edit", "bash", "grep", "find", "ls"], "medium", false],
    ["specialist", "parent", "high", false],
  ])("%s", (name, tools, reasoning, requiresForkNone) => {
    expect(builtinRole(name)).toMatchObject({ name, tools, reasoning, requiresForkNone });
  });
});

describe("describeRegistry (getAllTools sourceInfo)", () => {
  it("marks built-ins, keeps extension files, drops unloadable synthetic sources", () => {
    expect(REGISTRY.slice(6, 9)).toEqual([
      { name: "ls", builtin: true },
      { name: "ast_grep_run", sourcePath: "/ext/ast-grep/index.ts", builtin: false },
      { name: "ast_grep_scan", sourcePath: "/ext/ast-grep/index.ts", builtin: false },
    ]);
    expect(REGISTRY.at(-1)).toEqual({ name: "sdk_tool", builtin: false });
  });

  it.each([
    ["no sourceInfo", { name: "x" }, { name: "x", builtin: false }],
    ["a non-object sourceInfo", { name: "x", sourceInfo: "weird" }, { name: "x", builtin: false }],
    ["builtin by path only", { name: "x", sourceInfo: { path: "<builtin:x>" } }, { name: "x", builtin: true }],
    [
      "a pi 1.x built-in (path builtin:read, no angle brackets)",
      { name: "read", sourceInfo: { path: "builtin:read", source: "builtin", scope: "temporary" } },
      { name: "read", builtin: true },
    ],
    [
      "an inline extension",
      { name: "x", sourceInfo: { path: "<inline>", source: "inline" } },
      { name: "x", builtin: false },
    ],
    [
      "a package extension",
      { name: "x", sourceInfo: { path: "/n/pkg/ext.ts", source: "npm:pkg" } },
      { name: "x", sourcePath: "/n/pkg/ext.ts", builtin: false },
    ],
  ])("%s", (_label, tool, expected) => {
    expect(describeRegistry([tool])).toEqual([expected]);
  });
});

describe("resolveChildTools", () => {
  const resolve = (
    role: string | Role | undefined,
    parentActiveTools = PARENT_ACTIVE,
    allTools: RegistryTool[] = REGISTRY,
  ) =>
    resolveChildTools({
      role: typeof role === "string" ? builtinRole(role) : role,
      parentActiveTools,
      allTools,
      ownExtensionPath: OWN,
    });

  it("gives a scout read, grep, find, ls although the parent has only read active", () => {
    expect(resolve("scout")).toEqual({ tools: ["read", "grep", "find", "ls"], extensions: [OWN] });
  });

  it("gives implementation its whole list, in role order, and no extension tools", () => {
    expect(resolve("implementation")).toEqual({
      tools: ["read", "write", "edit", "bash", "grep", "find", "ls"],
      extensions: [OWN],
    });
  });

  it("leaves out role tools missing from the registry (a parent started with a --tools allowlist)", () => {
    const narrow = describeRegistry([builtin("read"), builtin("bash"), fromFile("spawn_agent", OWN)]);
    expect(resolve("scout", ["read", "bash"], narrow)).toEqual({ tools: ["read"], extensions: [OWN] });
  });

  it("gives a plain child exactly the parent's loadable active tools and their extensions", () => {
    expect(resolve(undefined)).toEqual({
      tools: ["read", "bash", "edit", "write", "ast_grep_run", "spawn_agent", "wait_agent", "jira"],
      extensions: ["/ext/ast-grep/index.ts", OWN, "/ext/jira.ts"],
    });
  });

  it("gives a specialist the parent's tools like a plain child", () => {
    expect(resolve("specialist")).toEqual(resolve(undefined));
  });

  it("always loads this package's extension, once", () => {
    expect(resolve(undefined, ["read", "grep"])).toEqual({ tools: ["read", "grep"], extensions: [OWN] });
    expect(resolve(undefined, ["read", "read", "jira", "jira"])).toEqual({
      tools: ["read", "jira"],
      extensions: ["/ext/jira.ts", OWN],
    });
  });

  it("drops parent tools the registry does not know", () => {
    expect(resolve(undefined, ["read", "ghost"]).tools).toEqual(["read"]);
  });

  const userRole = (tools: Role["tools"]): Role => ({
    name: "reviewer",
    description: "Reviews.",
    tools,
    requiresForkNone: false,
    source: "user",
  });

  it("gives a user-defined role exactly its tools, extension tools with their extension files", () => {
    expect(resolve(userRole(["read", "grep", "jira", "ast_grep_scan"]))).toEqual({
      tools: ["read", "grep", "jira", "ast_grep_scan"],
      extensions: ["/ext/jira.ts", "/ext/ast-grep/index.ts", OWN],
    });
  });

  it("lets a user-defined role that names spawn_agent and wait_agent delegate (this package's extension, once)", () => {
    expect(resolve(userRole(["read", "spawn_agent", "wait_agent"]))).toEqual({
      tools: ["read", "spawn_agent", "wait_agent"],
      extensions: [OWN],
    });
  });

  it("gives a user-defined role with `tools: []` no tools, and one without tools the parent's", () => {
    expect(resolve(userRole([]))).toEqual({ tools: [], extensions: [OWN] });
    expect(resolve(userRole("parent"))).toEqual(resolve(undefined));
  });
});

const definition = (name: string, extra: Partial<AgentDefinition> = {}): AgentDefinition => ({
  name,
  description: `${name} does things.`,
  tools: "parent",
  prompt: "",
  source: "user",
  filePath: `/u/agents/${name}.md`,
  ...extra,
});
const found = (
  definitions: AgentDefinition[],
  rejected: RejectedDefinition[] = [],
  extra: Partial<DiscoveredDefinitions> = {},
): DiscoveredDefinitions => ({
  definitions,
  rejected,
  overrides: [],
  dirs: { user: "/u/agents" },
  ignoredProjectNames: [],
  ...extra,
});

describe("definitionToolsProblem (against pi's full registry)", () => {
  it.each<[string, AgentDefinition["tools"], string | undefined]>([
    ["the parent's tools", "parent", undefined],
    ["no tools", [], undefined],
    ["inactive built-ins and extension tools", ["grep", "ls", "jira", "spawn_agent"], undefined],
    [
      "one unknown tool",
      ["read", "Read"],
      "unknown tool Read (pi's tools here: ast_grep_run, ast_grep_scan, bash, edit, find, grep, jira, ls, read, sdk_tool, spawn_agent, wait_agent, write)",
    ],
    [
      "several unknown tools",
      ["web", "read", "mcp"],
      expect.stringMatching(/^unknown tools web, mcp \(pi's tools here: /) as unknown as string,
    ],
    ["an SDK tool no child can load", ["sdk_tool"], "tool sdk_tool comes from no extension file a child can load"],
  ])("%s", (_label, tools, expected) => {
    expect(definitionToolsProblem(tools, REGISTRY)).toEqual(expected);
  });
});

describe("buildRoleCatalog and lookupRole", () => {
  it("adds usable definitions after the built-ins and refuses one with an unknown tool", () => {
    const catalog = buildRoleCatalog(
      found([definition("reviewer", { tools: ["read", "grep"] }), definition("web", { tools: ["browse"] })]),
      REGISTRY,
    );
    expect(catalog.roles.map((role) => `${role.name}:${role.source}`)).toEqual([
      "scout:builtin",
      "implementation:builtin",
      "specialist:builtin",
      "reviewer:user",
    ]);
    expect(catalog.rejected).toEqual([
      {
        filePath: "/u/agents/web.md",
        source: "user",
        name: "web",
        problem: expect.stringMatching(/^unknown tool browse \(pi's tools here: /),
      },
    ]);
    expect(lookupRole(catalog, "web")).toEqual({
      ok: false,
      error: expect.stringMatching(
        /^unknown agent_type: web — agent definition \/u\/agents\/web\.md was rejected: unknown tool browse \(/,
      ),
    });
  });

  it("checks tool names only once a registry is given", () => {
    expect(buildRoleCatalog(found([definition("web", { tools: ["browse"] })])).roles.at(-1)?.name).toBe("web");
  });

  it("turns a definition into a role: its model, reasoning, prompt and file", () => {
    const catalog = buildRoleCatalog(
      found([
        definition("reviewer", {
          model: "fake/deep",
          reasoning: "high",
          prompt: "Review.",
          source: "project",
          filePath: "/p/.pi/agents/r.md",
        }),
      ]),
      REGISTRY,
    );
    expect(lookupRole(catalog, "reviewer")).toEqual({
      ok: true,
      role: {
        name: "reviewer",
        description: "reviewer does things.",
        tools: "parent",
        model: "fake/deep",
        reasoning: "high",
        prompt: "Review.",
        requiresForkNone: false,
        source: "project",
        filePath: "/p/.pi/agents/r.md",
      },
    });
  });

  it("keeps the message exact (`unknown agent_type: <name>`) for a name no file mentions", () => {
    const catalog = buildRoleCatalog(
      found(
        [],
        [
          {
            filePath: "/u/agents/other.md",
            source: "user",
            name: "other",
            problem: "missing `name:` in the frontmatter",
          },
        ],
      ),
    );
    expect(lookupRole(catalog, "wizard")).toEqual({ ok: false, error: "unknown agent_type: wizard" });
    expect(lookupRole(BUILTIN_CATALOG, "scout")).toEqual({ ok: true, role: builtinRole("scout") });
  });

  it("says why every file of that name was refused", () => {
    const catalog = buildRoleCatalog(
      found(
        [],
        [
          {
            filePath: "/u/agents/a.md",
            source: "user",
            name: "dup",
            problem: 'name "dup" is also defined by /u/agents/b.md; rename one of them',
          },
          {
            filePath: "/u/agents/b.md",
            source: "user",
            name: "dup",
            problem: 'name "dup" is also defined by /u/agents/a.md; rename one of them',
          },
        ],
      ),
    );
    expect(lookupRole(catalog, "dup")).toEqual({
      ok: false,
      error:
        'unknown agent_type: dup — agent definition /u/agents/a.md was rejected: name "dup" is also defined by /u/agents/b.md; rename one of them; agent definition /u/agents/b.md was rejected: name "dup" is also defined by /u/agents/a.md; rename one of them',
    });
  });

  it("points at project agents that are off when a file of that name sits in .pi/agents", () => {
    const catalog = buildRoleCatalog(
      found([], [], { dirs: { user: "/u/agents", ignoredProject: "/p/.pi/agents" }, ignoredProjectNames: ["auditor"] }),
    );
    expect(lookupRole(catalog, "auditor")).toEqual({
      ok: false,
      error:
        "unknown agent_type: auditor — /p/.pi/agents defines project agents, which are off: the user can set PI_SUBAGENTS_PROJECT_AGENTS=1 to use them",
    });
    expect(lookupRole(catalog, "other")).toEqual({ ok: false, error: "unknown agent_type: other" });
  });
});

describe("describeAgentTypes (spawn_agent's agent_type text)", () => {
  it("lists only the built-ins when there are no definition files", () => {
    const text = describeAgentTypes(BUILTIN_CATALOG);
    for (const name of ROLE_NAMES) expect(text).toContain(`\`${name}\` (${builtinRole(name)!.description})`);
    expect(text).not.toContain("agent files");
    expect(text).toContain("Omit for a plain child");
  });

  it("lists defined roles with their source and refused files with their problem", () => {
    const catalog = buildRoleCatalog(
      found(
        [definition("reviewer", { description: "Reviews diffs." })],
        [{ filePath: "/u/agents/bad.md", source: "user", name: "bad", problem: "missing `name:` in the frontmatter" }],
      ),
    );
    const text = describeAgentTypes(catalog);
    expect(text).toContain("Defined by the user's agent files: `reviewer` (user: Reviews diffs.).");
    expect(text).toContain("/u/agents/bad.md: missing `name:` in the frontmatter");
  });

  it("describes at most DESCRIBED_ROLES_MAX roles and names the rest", () => {
    const many = Array.from({ length: DESCRIBED_ROLES_MAX + 3 }, (_, i) =>
      definition(`role${String(i).padStart(2, "0")}`, { description: "short" }),
    );
    const text = describeAgentTypes(buildRoleCatalog(found(many)));
    expect(text).toContain(
      `\`role${DESCRIBED_ROLES_MAX - 1}\` (user: short); also \`role${DESCRIBED_ROLES_MAX}\`, \`role${DESCRIBED_ROLES_MAX + 1}\`, \`role${DESCRIBED_ROLES_MAX + 2}\`.`,
    );
  });

  it("cuts long descriptions and keeps the described entries within DESCRIBED_ROLES_CHARS, naming the rest", () => {
    const many = Array.from({ length: 30 }, (_, i) =>
      definition(`role${String(i).padStart(2, "0")}`, { description: "x".repeat(500) }),
    );
    const text = describeAgentTypes(buildRoleCatalog(found(many)));
    const entry = `\`role00\` (user: ${"x".repeat(199)}…)`;
    expect(text).toContain(entry);
    const fit = Math.floor(DESCRIBED_ROLES_CHARS / entry.length);
    expect(text).toContain(`\`role${String(fit - 1).padStart(2, "0")}\` (user: `);
    expect(text).not.toContain(`\`role${String(fit).padStart(2, "0")}\` (user: `);
    expect(text).toContain(`; also \`role${String(fit).padStart(2, "0")}\`, `);
    expect(text).toContain("`role29`.");
    const userPart = text.slice(text.indexOf("Defined by the user's agent files"));
    expect(userPart.length).toBeLessThan(DESCRIBED_ROLES_CHARS + 30 * 12);
  });
});

describe("definitionWarnings (shown at session start)", () => {
  it("one line per refused file and per project definition replacing a user one", () => {
    const user = definition("reviewer");
    const project = definition("reviewer", { source: "project", filePath: "/p/.pi/agents/reviewer.md" });
    const catalog = buildRoleCatalog(
      found(
        [project],
        [{ filePath: "/u/agents/bad.md", source: "user", name: "bad", problem: "missing `name:` in the frontmatter" }],
        {
          overrides: [{ project, user }],
        },
      ),
    );
    expect(definitionWarnings(catalog)).toEqual([
      "pi-subagent-tree: agent definition /u/agents/bad.md is not used: missing `name:` in the frontmatter",
      "pi-subagent-tree: project agent reviewer (/p/.pi/agents/reviewer.md) replaces the user's /u/agents/reviewer.md",
    ]);
    expect(definitionWarnings(BUILTIN_CATALOG)).toEqual([]);
  });
});
