import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  MAX_DEFINITION_BYTES,
  type ParsedDefinition,
  parseAgentDefinition,
} from "../../../../src/extension/roles/agent-definitions.js";
import {
  definitionDirs,
  discoverAgentDefinitions,
  findProjectAgentsDir,
  loadRoleCatalog,
  projectAgentsEnabled,
  userAgentsDir,
} from "../../../../src/extension/roles/definition-files.js";
import { mergeDefinitions } from "../../../../src/extension/roles/definition-set.js";
import {
  describeAgentTypes,
  describeRegistry,
  lookupRole,
  RESERVED_ROLE_NAMES,
} from "../../../../src/extension/roles/roles.js";
import { REPO_ROOT } from "../../../support/pi-home.js";

const FILE = "/u/agents/reviewer.md";
const parse = (content: string, source: "user" | "project" = "user") => parseAgentDefinition(content, FILE, source);
const problem = (content: string) => {
  const parsed = parse(content);
  return parsed.ok ? "ok" : parsed.rejected.problem;
};
const doc = (frontmatter: string, body = "You review code.") => `---\n${frontmatter}\n---\n${body}\n`;

describe("parseAgentDefinition: files that work", () => {
  it("reads name, description, a comma list of tools, model, reasoning and the body", () => {
    expect(
      parse(
        doc(
          "name: reviewer\ndescription: Reviews a diff.\ntools: read, grep , find\nmodel: fake/deep\nreasoning: high",
          "\nYou review code.\n\nBe terse.\n",
        ),
      ),
    ).toEqual({
      ok: true,
      definition: {
        name: "reviewer",
        description: "Reviews a diff.",
        tools: ["read", "grep", "find"],
        model: "fake/deep",
        reasoning: "high",
        prompt: "You review code.\n\nBe terse.",
        source: "user",
        filePath: FILE,
      },
    });
  });

  it.each<[string, string, object]>([
    ["a YAML list of tools", "tools:\n  - read\n  - ls", { tools: ["read", "ls"] }],
    ["a flow list of tools, duplicates dropped", "tools: [read, read, bash]", { tools: ["read", "bash"] }],
    ["`tools: []`: no tools", "tools: []", { tools: [] }],
    ["no tools field: the parent's tools", "", { tools: "parent" }],
    ["`model: inherit`: the parent's model", "model: inherit", { tools: "parent" }],
    ["a model id holding slashes", "model: openrouter/openai/gpt-5", { model: "openrouter/openai/gpt-5" }],
    ["`reasoning: off` stays the word off (YAML 1.2)", "reasoning: off", { reasoning: "off" }],
    ["a name with digits, _ and -", "tools: [read]", { tools: ["read"] }],
  ])("%s", (_label, extra, expected) => {
    const parsed = parse(doc(`name: code-reviewer_2\ndescription: d\n${extra}`));
    expect(parsed.ok).toBe(true);
    if (parsed.ok) expect(parsed.definition).toMatchObject(expected);
    if (parsed.ok && extra.startsWith("model: inherit")) expect(parsed.definition).not.toHaveProperty("model");
  });

  it("accepts CRLF line ends, a byte-order mark, a folded description and an empty body", () => {
    const parsed = parse("\uFEFF---\r\nname: r\r\ndescription: >\r\n  Reviews\r\n  diffs.\r\n---\r\n");
    expect(parsed).toMatchObject({ ok: true, definition: { name: "r", description: "Reviews diffs.", prompt: "" } });
  });

  it("marks where the file came from", () => {
    expect(parse(doc("name: r\ndescription: d"), "project")).toMatchObject({
      ok: true,
      definition: { source: "project" },
    });
  });
});

describe("parseAgentDefinition: runner", () => {
  it("reads `runner:` as the role's default runner's name; a bad name refuses the file", () => {
    const parsed = parse(doc("name: boxed\ndescription: Runs boxed.\nrunner: box"));
    expect(parsed).toMatchObject({ ok: true, definition: { runner: "box" } });
    const bad = parse(doc("name: boxed\ndescription: Runs boxed.\nrunner: two words"));
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.rejected.problem).toBe('runner "two words" must be a runner name');
  });
});

describe("parseAgentDefinition: isolation", () => {
  it("reads `isolation: worktree` as the role's default; `none` and no field mean none", () => {
    const isolation = (value: string | undefined) => {
      const parsed = parse(
        doc(`name: writer\ndescription: Writes code.${value === undefined ? "" : `\nisolation: ${value}`}`),
      );
      if (!parsed.ok) throw new Error(parsed.rejected.problem);
      return parsed.definition.isolation;
    };
    expect(isolation("worktree")).toBe("worktree");
    expect(isolation(" worktree ")).toBe("worktree");
    expect(isolation("none")).toBe("none");
    expect(isolation(undefined)).toBeUndefined();
  });

  it("the role built from it carries the default, and spawn_agent's agent_type text says so", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "psa-defs-"));
    try {
      fs.mkdirSync(path.join(dir, "agents"));
      fs.writeFileSync(
        path.join(dir, "agents", "writer.md"),
        doc("name: writer\ndescription: Writes code.\nisolation: worktree"),
      );
      vi.stubEnv("PI_CODING_AGENT_DIR", dir);
      vi.stubEnv("HOME", dir);
      const catalog = loadRoleCatalog(dir);
      const found = lookupRole(catalog, "writer");
      expect(found.ok && found.role.isolation).toBe("worktree");
      expect(describeAgentTypes(catalog)).toContain("`writer` (user, in its own git worktree: Writes code.)");
    } finally {
      vi.unstubAllEnvs();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("parseAgentDefinition: limits", () => {
  it("reads a `limits:` block (block or flow YAML) as the role's per-turn limits", () => {
    const block = parse(doc("name: capped\ndescription: Capped.\nlimits:\n  max_turns: 40\n  max_cost: 2.5"));
    expect(block.ok && block.definition.limits).toEqual({ max_turns: 40, max_cost: 2.5 });
    const flow = parse(doc("name: capped\ndescription: Capped.\nlimits: { time_limit: 600, grace_seconds: 30 }"));
    expect(flow.ok && flow.definition.limits).toEqual({ time_limit: 600, grace_seconds: 30 });
  });

  it("a bad `limits:` block is reported with the key, together with the file's other problems", () => {
    const parsed = parse(
      doc("name: capped\ndescription: Capped.\nreasoning: loud\nlimits:\n  max_turns: 0\n  speed: 3"),
    );
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.rejected.filePath).toBe(FILE);
    expect(parsed.rejected.problem).toContain("limits.max_turns must be a positive whole number, not 0");
    expect(parsed.rejected.problem).toContain('limits: unknown key "speed"');
    expect(parsed.rejected.problem).toMatch(/reasoning/);
  });
});

describe("the documented examples", () => {
  it.each(["README.md", "docs/agents.md"])("the first markdown example in %s is a valid definition", (doc) => {
    const example = /```markdown\n([\s\S]*?)```/.exec(fs.readFileSync(path.join(REPO_ROOT, doc), "utf8"))?.[1];
    expect(example).toBeDefined();
    expect(parse(example!)).toMatchObject({
      ok: true,
      definition: {
        name: "reviewer",
        tools: ["read", "grep", "find", "ls"],
        reasoning: "high",
      },
    });
    // `model: inherit`: the example works on first use, whatever models the reader has.
    expect(parse(example!).ok && parse(example!)).not.toHaveProperty("definition.model");
  });
});

describe("parseAgentDefinition: files that are refused, with the reason", () => {
  it.each<[string, string, string | RegExp]>([
    ["no frontmatter", "You review code.\n", /^no frontmatter: the file must start with a `---` line/],
    ["an unclosed frontmatter", "---\nname: r\ndescription: d\n", /^no frontmatter/],
    ["frontmatter not at the top", "\n---\nname: r\n---\n", /^no frontmatter/],
    ["invalid YAML", doc("name: r\ndescription: [unclosed"), /^the frontmatter is not valid YAML: /],
    ["a key given twice", doc("name: r\nname: s\ndescription: d"), /^the frontmatter is not valid YAML: .*unique/i],
    ["a list instead of keys", doc("- name\n- description"), "the frontmatter must be `key: value` lines"],
    [
      "an empty frontmatter (every problem at once)",
      "---\n---\nbody",
      "missing `name:` in the frontmatter; missing `description:` in the frontmatter",
    ],
    ["no name", doc("description: d"), "missing `name:` in the frontmatter"],
    [
      "a name in capitals",
      doc("name: Reviewer\ndescription: d"),
      'name "Reviewer" must be 1-64 lowercase letters, digits, "_" or "-", starting with a letter',
    ],
    ["a name with a space", doc("name: code reviewer\ndescription: d"), /^name "code reviewer" must be/],
    ["a name starting with a digit", doc("name: 2nd\ndescription: d"), /^name "2nd" must be/],
    ["a name that is a number", doc("name: 7\ndescription: d"), /^name 7 must be/],
    ["a name of 65 characters", doc(`name: ${"a".repeat(65)}\ndescription: d`), /must be 1-64 lowercase/],
    ["no description", doc("name: r"), "missing `description:` in the frontmatter"],
    ["a blank description", doc('name: r\ndescription: "  "'), "description must be a non-empty string"],
    ["a description that is a list", doc("name: r\ndescription: [a]"), "description must be a non-empty string"],
    [
      "an unknown field (a typo of tools)",
      doc("name: r\ndescription: d\ntool: read"),
      'unknown field "tool" (allowed: name, description, tools, model, reasoning, isolation, limits, fallback_models, runner, verify)',
    ],
    [
      "several unknown fields",
      doc("name: r\ndescription: d\ncolor: blue\nreasoning_effort: high"),
      'unknown fields "color", "reasoning_effort" (allowed: name, description, tools, model, reasoning, isolation, limits, fallback_models, runner, verify)',
    ],
    [
      "`tools:` with no value",
      doc("name: r\ndescription: d\ntools:"),
      /^tools is empty: list tool names, write `tools: \[\]` for no tools, or leave the field out/,
    ],
    ['`tools: ""`', doc('name: r\ndescription: d\ntools: ""'), /^tools is empty/],
    [
      "tools as a mapping",
      doc("name: r\ndescription: d\ntools:\n  read: true"),
      "tools must be a comma-separated list (`tools: read, grep`) or a YAML list",
    ],
    [
      "a number among the tools",
      doc("name: r\ndescription: d\ntools: [read, 5]"),
      "tools holds 5, which is not a tool name",
    ],
    [
      "an empty name in a comma list",
      doc("name: r\ndescription: d\ntools: read,,grep"),
      'tools holds "", which is not a tool name',
    ],
    [
      "a model without provider",
      doc("name: r\ndescription: d\nmodel: claude-haiku-4-5"),
      'model "claude-haiku-4-5" must be written provider/id (as list_models shows it) or `inherit`',
    ],
    ["a model that is a number", doc("name: r\ndescription: d\nmodel: 4"), /^model 4 must be written provider\/id/],
    [
      "an unknown reasoning level",
      doc("name: r\ndescription: d\nreasoning: maximum"),
      'reasoning "maximum" must be one of off, minimal, low, medium, high, xhigh, max',
    ],
    ["reasoning in capitals", doc("name: r\ndescription: d\nreasoning: High"), /^reasoning "High" must be one of/],
    [
      "an unknown isolation",
      doc("name: r\ndescription: d\nisolation: container"),
      'isolation "container" must be none or worktree',
    ],
    [
      "isolation as a boolean",
      doc("name: r\ndescription: d\nisolation: true"),
      "isolation true must be none or worktree",
    ],
  ])("%s", (_label, content, expected) => {
    if (typeof expected === "string") expect(problem(content)).toBe(expected);
    else expect(problem(content)).toMatch(expected);
  });

  it("names a refused file by its declared name, else by its file name", () => {
    const rejectedName = (content: string) =>
      (parse(content) as Extract<ParsedDefinition, { ok: false }>).rejected.name;
    expect(rejectedName(doc("name: auditor\ndescription: d\ncolour: red"))).toBe("auditor");
    expect(rejectedName("no frontmatter at all")).toBe("reviewer");
    expect(rejectedName(doc("name: Bad Name\ndescription: d"))).toBe("Bad Name");
  });
});

describe("mergeDefinitions", () => {
  const ok = (name: string, source: "user" | "project", file = `${name}.md`): ParsedDefinition => ({
    ok: true,
    definition: { name, description: "d", tools: "parent", prompt: "", source, filePath: `/${source}/${file}` },
  });

  it("sorts by name, keeps refused files, and lets a project definition replace a user one", () => {
    const bad: ParsedDefinition = {
      ok: false,
      rejected: { filePath: "/user/bad.md", source: "user", name: "bad", problem: "p" },
    };
    const set = mergeDefinitions(
      [ok("zeta", "user"), ok("alpha", "user"), bad],
      [ok("alpha", "project")],
      RESERVED_ROLE_NAMES,
    );
    expect(set.definitions.map((d) => `${d.name}@${d.filePath}`)).toEqual([
      "alpha@/project/alpha.md",
      "zeta@/user/zeta.md",
    ]);
    expect(set.rejected).toEqual([bad.rejected]);
    expect(set.overrides).toEqual([
      {
        project: (ok("alpha", "project") as { definition: unknown }).definition,
        user: (ok("alpha", "user") as { definition: unknown }).definition,
      },
    ]);
  });

  it("refuses every file of a name defined twice in one directory", () => {
    const set = mergeDefinitions(
      [ok("dup", "user", "a.md"), ok("dup", "user", "b.md"), ok("solo", "user")],
      [],
      RESERVED_ROLE_NAMES,
    );
    expect(set.definitions.map((d) => d.name)).toEqual(["solo"]);
    expect(set.rejected).toEqual([
      {
        filePath: "/user/a.md",
        source: "user",
        name: "dup",
        problem: 'name "dup" is also defined by /user/b.md; rename one of them',
      },
      {
        filePath: "/user/b.md",
        source: "user",
        name: "dup",
        problem: 'name "dup" is also defined by /user/a.md; rename one of them',
      },
    ]);
  });

  it("never lets a file redefine a built-in role or `default`", () => {
    const set = mergeDefinitions(
      [ok("scout", "user")],
      [ok("default", "project"), ok("specialist", "project")],
      RESERVED_ROLE_NAMES,
    );
    expect(set.definitions).toEqual([]);
    expect(set.rejected.map((r) => r.problem)).toEqual([
      'name "default" is reserved for a plain child (spawn_agent without agent_type); choose another name',
      'name "specialist" is a built-in agent_type, which cannot be redefined; choose another name',
      'name "scout" is a built-in agent_type, which cannot be redefined; choose another name',
    ]);
  });
});

describe("discovery on disk", () => {
  let root: string;
  let agentDir: string;
  let project: string;

  beforeEach(() => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agent-defs-")));
    agentDir = path.join(root, "pi-agent");
    project = path.join(root, "repo");
    fs.mkdirSync(path.join(agentDir, "agents"), { recursive: true });
    fs.mkdirSync(path.join(project, ".pi", "agents"), { recursive: true });
    fs.mkdirSync(path.join(project, "src", "deep"), { recursive: true });
    vi.stubEnv("PI_CODING_AGENT_DIR", agentDir);
    // ~/.claude/agents is read too: a home of the test's own keeps the developer's out.
    vi.stubEnv("HOME", path.join(root, "home"));
    vi.stubEnv("PI_SUBAGENTS_PROJECT_AGENTS", "");
  });
  afterEach(() => {
    vi.unstubAllEnvs();
    fs.rmSync(root, { recursive: true, force: true });
  });

  const write = (file: string, content: string) => fs.writeFileSync(file, content);
  const userFile = (name: string) => path.join(agentDir, "agents", name);
  const projectFile = (name: string) => path.join(project, ".pi", "agents", name);

  it("the user directory is the pi agent dir's agents/ (PI_CODING_AGENT_DIR moves it)", () => {
    expect(userAgentsDir()).toBe(path.join(agentDir, "agents"));
  });

  it("finds the nearest .pi/agents in the cwd or above it", () => {
    expect(findProjectAgentsDir(path.join(project, "src", "deep"))).toBe(path.join(project, ".pi", "agents"));
    fs.mkdirSync(path.join(project, "src", ".pi", "agents"), { recursive: true });
    expect(findProjectAgentsDir(path.join(project, "src", "deep"))).toBe(path.join(project, "src", ".pi", "agents"));
    expect(findProjectAgentsDir(agentDir)).toBeUndefined();
  });

  it.each([
    ["1", true],
    ["true", true],
    ["YES", true],
    ["0", false],
    ["", false],
    [undefined, false],
  ])("PI_SUBAGENTS_PROJECT_AGENTS=%s → project agents %s", (value, enabled) => {
    expect(projectAgentsEnabled(value === undefined ? {} : { PI_SUBAGENTS_PROJECT_AGENTS: value })).toBe(enabled);
  });

  it("reads project definitions only when the user opted in", () => {
    write(projectFile("auditor.md"), doc("name: auditor\ndescription: Audits."));
    write(userFile("reviewer.md"), doc("name: reviewer\ndescription: Reviews."));
    const off = discoverAgentDefinitions(project);
    expect(off.definitions.map((d) => d.name)).toEqual(["reviewer"]);
    expect(off.dirs).toEqual({
      user: path.join(agentDir, "agents"),
      ignoredProject: path.join(project, ".pi", "agents"),
    });
    expect(off.ignoredProjectNames).toEqual(["auditor"]);

    const on = discoverAgentDefinitions(project, RESERVED_ROLE_NAMES, { PI_SUBAGENTS_PROJECT_AGENTS: "1" });
    expect(on.definitions.map((d) => `${d.name}:${d.source}`)).toEqual(["auditor:project", "reviewer:user"]);
    expect(on.dirs.project).toBe(path.join(project, ".pi", "agents"));
  });

  it("reads *.md files only, refuses oversized and unreadable ones, and is empty without a directory", () => {
    write(userFile("notes.txt"), "not a definition");
    fs.mkdirSync(userFile("folder.md"));
    write(userFile("big.md"), doc("name: big\ndescription: d", "x".repeat(MAX_DEFINITION_BYTES)));
    write(userFile("ok.md"), doc("name: ok\ndescription: d"));
    fs.symlinkSync(path.join(root, "missing-target.md"), userFile("dangling.md"));
    const found = discoverAgentDefinitions(root);
    expect(found.definitions.map((d) => d.name)).toEqual(["ok"]);
    expect(found.rejected.map((r) => [path.basename(r.filePath), r.problem])).toEqual([
      ["big.md", expect.stringMatching(/^the file is \d+ bytes; agent definitions are limited to 65536 bytes$/)],
      ["dangling.md", expect.stringMatching(/^cannot read the file: ENOENT/)],
    ]);
    fs.rmSync(path.join(agentDir, "agents"), { recursive: true });
    expect(discoverAgentDefinitions(root)).toMatchObject({ definitions: [], rejected: [] });
  });

  it("reads a directory that is both the user's and the project's once, as the user's", () => {
    vi.stubEnv("PI_CODING_AGENT_DIR", path.join(project, ".pi"));
    expect(definitionDirs(project, { PI_SUBAGENTS_PROJECT_AGENTS: "1" })).toEqual({
      user: path.join(project, ".pi", "agents"),
    });
  });

  it("loadRoleCatalog checks tool names against the registry and lookupRole explains a refusal", () => {
    write(userFile("reviewer.md"), doc("name: reviewer\ndescription: Reviews.\ntools: read, Grep"));
    const registry = describeRegistry(
      ["read", "grep"].map((name) => ({ name, sourceInfo: { path: `<builtin:${name}>`, source: "builtin" } })),
    );
    const catalog = loadRoleCatalog(root, registry);
    expect(lookupRole(catalog, "reviewer")).toEqual({
      ok: false,
      error: `unknown agent_type: reviewer — agent definition ${userFile("reviewer.md")} was rejected: unknown tool Grep (pi's tools here: grep, read)`,
    });
  });
});
