import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CLAUDE_TOOL_NAMES, parseClaudeAgentDefinition } from "../../../../src/extension/roles/claude-agents.js";
import {
  claudeDefinitionDirs,
  claudeUserAgentsDir,
  discoverAgentDefinitions,
  loadRoleCatalog,
} from "../../../../src/extension/roles/definition-files.js";
import { bestAliasMatch, type ModelInfo } from "../../../../src/extension/roles/models.js";
import { definitionWarnings, lookupRole, RESERVED_ROLE_NAMES } from "../../../../src/extension/roles/roles.js";
import { type SpawnEnv, validateSpawn } from "../../../../src/extension/spawn/validate.js";

const FILE = "/home/me/.claude/agents/reviewer.md";
const parse = (content: string) => parseClaudeAgentDefinition(content, FILE, "user");
const doc = (frontmatter: string, body = "You review code.") => `---\n${frontmatter}\n---\n${body}\n`;
const MAPPED_ALL = ["read", "grep", "find", "ls", "bash", "edit", "write"];

describe("parseClaudeAgentDefinition: a Claude Code file loads as a role", () => {
  it("maps Claude Code's tool names to pi's and keeps the model alias for the spawn", () => {
    const parsed = parse(
      doc(
        "name: reviewer\ndescription: Reviews code.\ntools: Read, Grep, Glob, LS, Bash, Edit, MultiEdit, Write\nmodel: sonnet\ncolor: blue",
        "You are a reviewer.",
      ),
    );
    expect(parsed).toEqual({
      ok: true,
      definition: {
        name: "reviewer",
        description: "Reviews code.",
        tools: MAPPED_ALL,
        modelAlias: "sonnet",
        prompt: "You are a reviewer.",
        source: "user",
        filePath: FILE,
      },
    });
  });

  it("the mapping table is the documented one", () => {
    expect(CLAUDE_TOOL_NAMES).toEqual({
      Read: "read",
      Grep: "grep",
      Glob: "find",
      LS: "ls",
      Bash: "bash",
      Edit: "edit",
      MultiEdit: "edit",
      Write: "write",
    });
  });

  it("names unknown tools once, in one note, and loads the rest", () => {
    const parsed = parse(
      doc(
        "name: r\ndescription: d\ntools: Read, WebFetch, Task, mcp__jira__search, WebFetch, Bash(git diff:*, git log:*)",
      ),
    );
    expect(parsed).toMatchObject({
      ok: true,
      definition: {
        tools: ["read"],
        notes: [
          "unknown tools WebFetch, Task, mcp__jira__search, Bash(git diff:*, git log:*) left out (pi maps Read, Grep, Glob, LS, Bash, Edit, MultiEdit, Write)",
        ],
      },
    });
    expect(parse(doc("name: r\ndescription: d\ntools: [Glob, WebSearch]"))).toMatchObject({
      ok: true,
      definition: { tools: ["find"], notes: [expect.stringMatching(/^unknown tool WebSearch left out/)] },
    });
  });

  it.each<[string, string, Record<string, unknown>]>([
    ["no model", "", {}],
    ["inherit", "model: inherit", {}],
    ["an alias", "model: opus", { modelAlias: "opus" }],
    ["a bare model id", "model: claude-opus-4-1", { modelAlias: "claude-opus-4-1" }],
    ["a pi provider/id", "model: anthropic/claude-haiku-4-5", { model: "anthropic/claude-haiku-4-5" }],
  ])("model: %s", (_label, line, expected) => {
    const parsed = parse(doc(`name: r\ndescription: d\n${line}`));
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    const { model, modelAlias } = parsed.definition;
    expect({ ...(model && { model }), ...(modelAlias && { modelAlias }) }).toEqual(expected);
  });

  it("ignores presentation fields silently and names the Claude Code settings pi lacks", () => {
    const quiet = parse(doc("name: r\ndescription: d\ncolor: red"));
    expect(quiet.ok && quiet.definition.notes).toBeUndefined();
    const noted = parse(doc("name: r\ndescription: d\npermissionMode: plan\nskills: [a]\ncolor: red"));
    expect(noted).toMatchObject({
      ok: true,
      definition: { notes: ["permissionMode, skills: Claude Code settings pi does not have, ignored"] },
    });
  });

  it("maxTurns is the role's limits.max_turns (pi's own limits: wins); a bad one is refused with the key", () => {
    const turns = parse(doc("name: r\ndescription: d\nmaxTurns: 25"));
    expect(turns).toMatchObject({ ok: true, definition: { limits: { max_turns: 25 } } });
    expect(turns.ok && turns.definition.notes).toBeUndefined();
    const both = parse(doc("name: r\ndescription: d\nmaxTurns: 25\nlimits:\n  max_turns: 5\n  max_cost: 1"));
    expect(both).toMatchObject({ ok: true, definition: { limits: { max_turns: 5, max_cost: 1 } } });
    const bad = parse(doc("name: r\ndescription: d\nmaxTurns: lots"));
    expect(bad).toMatchObject({
      ok: false,
      rejected: { problem: 'maxTurns must be a positive whole number, not "lots"' },
    });
  });

  it("no tools = the parent's; `tools: []` = none; pi's reasoning and isolation work too", () => {
    expect(parse(doc("name: r\ndescription: d"))).toMatchObject({ ok: true, definition: { tools: "parent" } });
    expect(parse(doc("name: r\ndescription: d\ntools: []\nreasoning: high\nisolation: worktree"))).toMatchObject({
      ok: true,
      definition: { tools: [], reasoning: "high", isolation: "worktree" },
    });
  });

  it("takes disallowedTools out of the list, and refuses them without a list (pi cannot subtract from the parent's)", () => {
    expect(parse(doc("name: r\ndescription: d\ntools: Read, Edit, Bash\ndisallowedTools: Bash"))).toMatchObject({
      ok: true,
      definition: { tools: ["read", "edit"] },
    });
    expect(parse(doc("name: r\ndescription: d\ndisallowedTools: Bash"))).toMatchObject({
      ok: false,
      rejected: { problem: expect.stringMatching(/^disallowedTools needs a `tools:` list here/) },
    });
  });
});

describe("parseClaudeAgentDefinition: every problem of a file at once", () => {
  it("lists each broken field and what would have been left out, in one report", () => {
    const parsed = parse(doc("name: Code Reviewer\ntools: Read, WebFetch\nmodel: 3\ntool: Bash\npermissionMode: plan"));
    expect(parsed).toEqual({
      ok: false,
      rejected: {
        filePath: FILE,
        source: "user",
        name: "Code Reviewer",
        problem: [
          'unknown field "tool" (allowed: name, description, tools, disallowedTools, model, reasoning, isolation, limits, fallback_models, runner, verify, maxTurns, color, permissionMode, skills, mcpServers, hooks, memory, background)',
          'name "Code Reviewer" must be 1-64 lowercase letters, digits, "_" or "-", starting with a letter',
          "missing `description:` in the frontmatter",
          "model 3 must be sonnet, opus, haiku, inherit, a model id or provider/id",
          "unknown tool WebFetch left out (pi maps Read, Grep, Glob, LS, Bash, Edit, MultiEdit, Write)",
          "permissionMode: Claude Code settings pi does not have, ignored",
        ].join("; "),
      },
    });
  });

  it("an empty tools field and a file without frontmatter are refused like a pi file's", () => {
    expect(parse(doc("name: r\ndescription: d\ntools:"))).toMatchObject({
      ok: false,
      rejected: { problem: expect.stringMatching(/^tools is empty/) },
    });
    expect(parse("just text")).toMatchObject({ ok: false, rejected: { name: "reviewer" } });
  });
});

describe("bestAliasMatch: the model a Claude Code alias stands for", () => {
  const m = (provider: string, id: string): ModelInfo => ({ provider, id, reasoning: true });
  const models = [
    m("anthropic", "claude-3-7-sonnet-20250219"),
    m("anthropic", "claude-sonnet-4-20250514"),
    m("anthropic", "claude-sonnet-4-5-20250929"),
    m("anthropic", "claude-sonnet-4-5"),
    m("anthropic", "claude-opus-4-1-20250805"),
    m("anthropic", "claude-opus-4-5"),
    m("anthropic", "claude-3-5-haiku-20241022"),
    m("anthropic", "claude-haiku-4-5-20251001"),
    m("openrouter", "anthropic/claude-sonnet-4.6"),
    m("openrouter", "anthropic/claude-opus-4.6"),
  ];
  const ref = (found: ModelInfo | undefined) => found && `${found.provider}/${found.id}`;

  it.each([
    ["sonnet", "anthropic", "anthropic/claude-sonnet-4-5"],
    ["opus", "anthropic", "anthropic/claude-opus-4-5"],
    ["haiku", "anthropic", "anthropic/claude-haiku-4-5-20251001"],
    ["SONNET", "anthropic", "anthropic/claude-sonnet-4-5"],
    ["sonnet", "openrouter", "openrouter/anthropic/claude-sonnet-4.6"],
    ["sonnet", "fake", "openrouter/anthropic/claude-sonnet-4.6"],
    ["claude-opus-4-1", "anthropic", "anthropic/claude-opus-4-1-20250805"],
  ])("%s with a parent on %s → %s", (alias, provider, expected) => {
    expect(ref(bestAliasMatch(alias, models, provider))).toBe(expected);
  });

  it("matches nothing when no usable id contains the alias", () => {
    expect(bestAliasMatch("opus", [m("openai", "gpt-5")], "openai")).toBeUndefined();
    expect(bestAliasMatch("sonnet", [], "anthropic")).toBeUndefined();
  });
});

describe("a Claude Code role at spawn", () => {
  const fast: ModelInfo = { provider: "fake", id: "fast", reasoning: true };
  const sonnet: ModelInfo = { provider: "fake", id: "claude-sonnet-4-5", reasoning: true };
  const catalogWith = (frontmatter: string) => {
    const parsed = parse(doc(frontmatter));
    if (!parsed.ok) throw new Error(parsed.rejected.problem);
    return {
      roles: [{ ...parsed.definition, requiresForkNone: false, source: "user" as const }],
      rejected: [],
      overrides: [],
    };
  };
  const env = (frontmatter: string, usable: ModelInfo[]): SpawnEnv => ({
    callerPath: "/root",
    parentModel: fast,
    parentReasoning: "medium",
    findModel: (r) => usable.find((model) => `${model.provider}/${model.id}` === r),
    usableModels: () => usable,
    findRole: (name) => lookupRole(catalogWith(frontmatter), name),
    pathExists: () => false,
    spawnCount: 0,
    maxDepth: 3,
    maxSpawns: 64,
  });
  const request = { task_name: "rev", message: "Review.", agent_type: "reviewer", fork_turns: "none" };

  it("an alias runs on its best usable match", () => {
    const result = validateSpawn(request, env("name: reviewer\ndescription: d\nmodel: sonnet", [fast, sonnet]));
    expect(result).toMatchObject({ ok: true, plan: { model: sonnet } });
    expect(result.ok && result.plan.modelNote).toBeUndefined();
  });

  it("an alias no usable model matches runs on the parent's model, with one line saying so", () => {
    const result = validateSpawn(request, env("name: reviewer\ndescription: d\nmodel: opus", [fast, sonnet]));
    expect(result).toMatchObject({
      ok: true,
      plan: {
        model: fast,
        modelNote: `model opus of agent definition ${FILE} matches no model you can use; the child runs on your model fake/fast`,
      },
    });
  });

  it("an explicit model in the call wins over the alias", () => {
    const result = validateSpawn(
      { ...request, model: "fake/fast" },
      env("name: reviewer\ndescription: d\nmodel: sonnet", [fast, sonnet]),
    );
    expect(result).toMatchObject({ ok: true, plan: { model: fast } });
    expect(result.ok && result.plan.modelNote).toBeUndefined();
  });
});

describe("discovery of .claude/agents", () => {
  let root: string;
  let home: string;
  let project: string;
  const write = (file: string, content: string) => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
    return file;
  };
  const names = (found: ReturnType<typeof discoverAgentDefinitions>) =>
    found.definitions.map((d) => `${d.name}:${d.source}:${path.relative(root, d.filePath)}`);
  const on = { PI_SUBAGENTS_PROJECT_AGENTS: "1" };

  beforeEach(() => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "claude-defs-")));
    home = path.join(root, "home");
    project = path.join(root, "repo");
    fs.mkdirSync(path.join(project, "src"), { recursive: true });
    vi.stubEnv("PI_CODING_AGENT_DIR", path.join(root, "pi-agent"));
    vi.stubEnv("HOME", home);
    vi.stubEnv("PI_SUBAGENTS_PROJECT_AGENTS", "");
  });
  afterEach(() => {
    vi.unstubAllEnvs();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it("reads ~/.claude/agents as the user's, always", () => {
    expect(claudeUserAgentsDir()).toBe(path.join(home, ".claude", "agents"));
    write(path.join(home, ".claude", "agents", "reviewer.md"), doc("name: reviewer\ndescription: d\ntools: Read"));
    expect(names(discoverAgentDefinitions(project))).toEqual(["reviewer:user:home/.claude/agents/reviewer.md"]);
  });

  it("reads the project's .claude/agents only when project agents are on, and says why otherwise", () => {
    const dir = path.join(project, ".claude", "agents");
    write(path.join(dir, "helper.md"), doc("name: helper\ndescription: d"));
    const off = discoverAgentDefinitions(path.join(project, "src"));
    expect(off.definitions).toEqual([]);
    expect(off.claude).toEqual({
      dirs: { user: claudeUserAgentsDir(), ignoredProject: dir },
      ignoredProjectNames: ["helper"],
    });
    expect(lookupRole(loadRoleCatalog(project), "helper")).toEqual({
      ok: false,
      error: `unknown agent_type: helper — ${dir} defines project agents, which are off: the user can set PI_SUBAGENTS_PROJECT_AGENTS=1 to use them`,
    });
    expect(names(discoverAgentDefinitions(path.join(project, "src"), RESERVED_ROLE_NAMES, on))).toEqual([
      "helper:project:repo/.claude/agents/helper.md",
    ]);
  });

  it("a cwd under HOME without a .claude/agents of its own reads the home one once, as the user's", () => {
    const cwd = path.join(home, "code", "app");
    fs.mkdirSync(cwd, { recursive: true });
    fs.mkdirSync(path.join(home, ".claude", "agents"), { recursive: true });
    expect(claudeDefinitionDirs(cwd, { ...on, HOME: home })).toEqual({ user: path.join(home, ".claude", "agents") });
  });

  it("precedence: project .pi > project .claude > user pi > ~/.claude; a pi file shadows a Claude one silently", () => {
    const piUser = path.join(root, "pi-agent", "agents");
    const claudeUser = path.join(home, ".claude", "agents");
    const piProject = path.join(project, ".pi", "agents");
    const claudeProject = path.join(project, ".claude", "agents");
    for (const dir of [piUser, claudeUser]) write(path.join(dir, "a.md"), doc("name: a\ndescription: d"));
    write(path.join(claudeUser, "b.md"), doc("name: b\ndescription: d"));
    write(path.join(claudeProject, "b.md"), doc("name: b\ndescription: d"));
    for (const dir of [piProject, claudeProject]) write(path.join(dir, "c.md"), doc("name: c\ndescription: d"));
    // A refused pi file still shadows the Claude file it was adapted from: its refusal is what the user sees.
    write(path.join(piUser, "d.md"), doc("name: d\ndescription: d\ncolour: red"));
    write(path.join(claudeUser, "d.md"), doc("name: d\ndescription: d"));
    const found = discoverAgentDefinitions(project, RESERVED_ROLE_NAMES, on);
    expect(names(found)).toEqual([
      "a:user:pi-agent/agents/a.md",
      "b:project:repo/.claude/agents/b.md",
      "c:project:repo/.pi/agents/c.md",
    ]);
    expect(found.overrides.map((o) => path.relative(root, o.user.filePath))).toEqual(["home/.claude/agents/b.md"]);
    expect(found.rejected.map((r) => path.relative(root, r.filePath))).toEqual(["pi-agent/agents/d.md"]);
  });

  it("a loaded file's notes are told at session start, one line per file", () => {
    const file = write(
      path.join(home, ".claude", "agents", "r.md"),
      doc("name: r\ndescription: d\ntools: Read, WebFetch\ncolor: red"),
    );
    expect(definitionWarnings(loadRoleCatalog(project))).toEqual([
      `pi-subagent-tree: agent definition ${file}: unknown tool WebFetch left out (pi maps Read, Grep, Glob, LS, Bash, Edit, MultiEdit, Write)`,
    ]);
  });
});
