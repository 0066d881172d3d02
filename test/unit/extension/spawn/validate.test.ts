import { describe, expect, it } from "vitest";
import type { ModelInfo } from "../../../../src/extension/roles/models.js";
import { BUILTIN_CATALOG, lookupRole, type Role, type RoleCatalog } from "../../../../src/extension/roles/roles.js";
import {
  noRepositoryError,
  parseFork,
  type SpawnEnv,
  type SpawnRequest,
  validateSpawn,
} from "../../../../src/extension/spawn/validate.js";

/** A built-in role, read from the catalog spawn_agent uses. */
const builtinRole = (name: string): Role | undefined => BUILTIN_CATALOG.roles.find((role) => role.name === name);

const fast: ModelInfo = { provider: "fake", id: "fast", reasoning: true };
// Like DeepSeek V4 Flash: only high and xhigh (sent as max).
const deep: ModelInfo = {
  provider: "fake",
  id: "deep",
  reasoning: true,
  thinkingLevelMap: { minimal: null, low: null, medium: null, high: "high", xhigh: "max" },
};
const dumb: ModelInfo = { provider: "fake", id: "dumb", reasoning: false };
const MODELS = new Map([fast, deep, dumb].map((m) => [`${m.provider}/${m.id}`, m]));

function env(overrides: Partial<SpawnEnv> = {}): SpawnEnv {
  return {
    callerPath: "/root",
    parentModel: fast,
    parentReasoning: "medium",
    findModel: (ref) => MODELS.get(ref),
    pathExists: (path) => path === "/root/taken",
    spawnCount: 0,
    maxDepth: 3,
    maxSpawns: 64,
    ...overrides,
  };
}

const base: SpawnRequest = { task_name: "worker", message: "do it" };
const error = (req: SpawnRequest, e: SpawnEnv = env()) => {
  const result = validateSpawn(req, e);
  return result.ok ? "ok" : result.error;
};

const FULL_FORK =
  "Full-history forked agents inherit the parent agent type; omit agent_type, or spawn without a full-history fork.";
const NAME = "agent_name must use only lowercase letters, digits, and underscores";
const BAD_FORK = 'fork_turns must be "none", "all", or a positive integer';

describe("validateSpawn: one row per numbered rule, exact messages", () => {
  it.each<[string, SpawnRequest, string, SpawnEnv?]>([
    ["1 task_name with a hyphen", { ...base, task_name: "bad-name" }, NAME],
    ["1 task_name missing", { message: "x" }, NAME],
    ["1 task_name not a string", { ...base, task_name: 7 }, NAME],
    ["1 task_name empty", { ...base, task_name: "" }, NAME],
    ["1 task_name a path", { ...base, task_name: "../x" }, NAME],
    ["2 scout with the default fork", { ...base, agent_type: "scout" }, "scout agents require fork_turns `none`"],
    ["2 scout with fork 3", { ...base, agent_type: "scout", fork_turns: 3 }, "scout agents require fork_turns `none`"],
    ["3 a role with fork all", { ...base, agent_type: "implementation", fork_turns: "all" }, FULL_FORK],
    ["3 a role with the default fork", { ...base, agent_type: "specialist" }, FULL_FORK],
    ["4 unknown agent_type", { ...base, agent_type: "wizard", fork_turns: "none" }, "unknown agent_type: wizard"],
    ["5 unknown model", { ...base, model: "fake/nope" }, "unknown model: fake/nope"],
    ["5 a model that is not a string", { ...base, model: 5 }, "unknown model: 5"],
    ["6 unknown reasoning_effort", { ...base, reasoning_effort: "maximum" }, "unknown reasoning_effort: maximum"],
    [
      "7 pi 1.x's max on a model that does not map it",
      { ...base, reasoning_effort: "max" },
      "reasoning_effort max is not supported by fake/fast",
    ],
    ["6 reasoning_effort in capitals", { ...base, reasoning_effort: "High" }, "unknown reasoning_effort: High"],
    [
      "7 unsupported explicit level",
      { ...base, model: "fake/deep", reasoning_effort: "low" },
      "reasoning_effort low is not supported by fake/deep",
    ],
    [
      "7 xhigh on a model without it",
      { ...base, reasoning_effort: "xhigh" },
      "reasoning_effort xhigh is not supported by fake/fast",
    ],
    [
      "7 any level but off on a non-reasoning model",
      { ...base, model: "fake/dumb", reasoning_effort: "minimal" },
      "reasoning_effort minimal is not supported by fake/dumb",
    ],
    ["8 fork_turns 0", { ...base, fork_turns: 0 }, BAD_FORK],
    ["8 fork_turns negative", { ...base, fork_turns: -2 }, BAD_FORK],
    ["8 fork_turns a fraction", { ...base, fork_turns: 1.5 }, BAD_FORK],
    ["8 fork_turns a word", { ...base, fork_turns: "some" }, BAD_FORK],
    ["8 fork_turns a boolean", { ...base, fork_turns: true }, BAD_FORK],
    ["message missing", { task_name: "worker" }, "message must be a non-empty string"],
    ["message blank", { ...base, message: "  \n" }, "message must be a non-empty string"],
    ["message not a string", { ...base, message: ["do it"] }, "message must be a non-empty string"],
    ["9 the path exists", { ...base, task_name: "taken" }, "agent task path already exists: /root/taken"],
    [
      "10 too deep",
      base,
      "agent depth limit reached: /root/a/b/c/worker would be 4 levels below the root (limit 3)",
      env({ callerPath: "/root/a/b/c" }),
    ],
    ["11 spawn cap", base, "spawn limit reached: this tree has spawned 64 agents (limit 64)", env({ spawnCount: 64 })],
  ])("%s", (_label, req, message, e) => {
    expect(error(req, e)).toBe(message);
  });
});

describe("validateSpawn: order", () => {
  it.each<[string, SpawnRequest, string]>([
    ["a bad name beats everything", { task_name: "X", agent_type: "scout", model: "nope", fork_turns: "bad" }, NAME],
    [
      "scout fork (2) beats full-history (3)",
      { ...base, agent_type: "scout", fork_turns: "all" },
      "scout agents require fork_turns `none`",
    ],
    [
      "scout with an invalid fork gets rule 2, not rule 8",
      { ...base, agent_type: "scout", fork_turns: "bad" },
      "scout agents require fork_turns `none`",
    ],
    [
      "unknown agent_type with the default fork gets rule 3 (the fork is reported first)",
      { ...base, agent_type: "nonexistent_role" },
      FULL_FORK,
    ],
    [
      "unknown agent_type with an invalid fork gets rule 4 before 8",
      { ...base, agent_type: "wizard", fork_turns: "bad" },
      "unknown agent_type: wizard",
    ],
    [
      "unknown agent_type (4) beats unknown model (5)",
      { ...base, agent_type: "wizard", fork_turns: "none", model: "x/y" },
      "unknown agent_type: wizard",
    ],
    [
      "unknown model (5) beats unknown reasoning (6)",
      { ...base, model: "x/y", reasoning_effort: "max" },
      "unknown model: x/y",
    ],
    [
      "unknown reasoning (6) beats a bad fork (8)",
      { ...base, reasoning_effort: "maximum", fork_turns: 0 },
      "unknown reasoning_effort: maximum",
    ],
    [
      "unsupported reasoning (7) beats a bad fork (8)",
      { ...base, reasoning_effort: "xhigh", fork_turns: 0 },
      "reasoning_effort xhigh is not supported by fake/fast",
    ],
    ["a bad fork (8) beats a missing message", { task_name: "worker", fork_turns: 0 }, BAD_FORK],
    ["a missing message beats an existing path (9)", { task_name: "taken" }, "message must be a non-empty string"],
  ])("%s", (_label, req, message) => {
    expect(error(req)).toBe(message);
  });

  it("checks the path (9) before depth (10) before the cap (11)", () => {
    const crowded = env({ callerPath: "/root/a/b/c", pathExists: () => true, spawnCount: 99 });
    expect(error(base, crowded)).toBe("agent task path already exists: /root/a/b/c/worker");
    expect(error(base, { ...crowded, pathExists: () => false })).toMatch(/^agent depth limit reached/);
    expect(error(base, { ...crowded, pathExists: () => false, callerPath: "/root" })).toMatch(
      /^spawn limit reached: this tree has spawned 99 agents/,
    );
  });

  it("checks the explicit level against the EFFECTIVE model", () => {
    expect(error({ ...base, reasoning_effort: "low" }, env({ parentModel: deep }))).toBe(
      "reasoning_effort low is not supported by fake/deep",
    );
    expect(error({ ...base, model: "fake/fast", reasoning_effort: "low" }, env({ parentModel: deep }))).toBe("ok");
  });
});

describe("validateSpawn: limits at their boundaries", () => {
  it.each([
    ["/root/a/b", "ok"],
    ["/root/a/b/c", "agent depth limit reached: /root/a/b/c/worker would be 4 levels below the root (limit 3)"],
  ])("depth from caller %s", (callerPath, expected) => {
    expect(error(base, env({ callerPath }))).toBe(expected);
  });

  it.each([
    [63, 64, "ok"],
    [64, 64, "spawn limit reached: this tree has spawned 64 agents (limit 64)"],
    [0, 0, "spawn limit reached: this tree has spawned 0 agents (limit 0)"],
  ])("spawnCount %i with limit %i", (spawnCount, maxSpawns, expected) => {
    expect(error(base, env({ spawnCount, maxSpawns }))).toBe(expected);
  });

  it("a depth limit of 1 admits only children of the root", () => {
    expect(error(base, env({ maxDepth: 1 }))).toBe("ok");
    expect(error(base, env({ maxDepth: 1, callerPath: "/root/a" }))).toBe(
      "agent depth limit reached: /root/a/worker would be 2 levels below the root (limit 1)",
    );
  });
});

describe("parseFork", () => {
  it.each([
    [undefined, { kind: "all" }],
    [null, { kind: "all" }],
    ["", { kind: "all" }],
    ["none", { kind: "none" }],
    ["all", { kind: "all" }],
    [" none ", { kind: "none" }],
    [1, { kind: "recent", turns: 1 }],
    [250, { kind: "recent", turns: 250 }],
    ["3", { kind: "recent", turns: 3 }],
    ["007", { kind: "recent", turns: 7 }],
    [0, undefined],
    ["0", undefined],
    [-1, undefined],
    ["-1", undefined],
    [2.5, undefined],
    ["2.5", undefined],
    ["1e3", undefined],
    [Number.NaN, undefined],
    [Number.POSITIVE_INFINITY, undefined],
    ["99999999999999999999", undefined],
    ["None", undefined],
    [true, undefined],
    [{}, undefined],
  ])("%j → %j", (value, expected) => {
    expect(parseFork(value)).toEqual(expected);
  });

  it("a fork of N turns is not full-history, even when N exceeds the history (rule 3 only for `all`)", () => {
    expect(error({ ...base, agent_type: "implementation", fork_turns: 1000 })).toBe("ok");
    expect(error({ ...base, agent_type: "implementation", fork_turns: "12" })).toBe("ok");
  });
});

describe("validateSpawn: plans", () => {
  const plan = (req: SpawnRequest, e: SpawnEnv = env()) => {
    const result = validateSpawn(req, e);
    if (!result.ok) throw new Error(result.error);
    return result.plan;
  };

  it("a plain child inherits the parent's model and reasoning, with the default full fork", () => {
    expect(plan(base)).toEqual({
      taskName: "worker",
      path: "/root/worker",
      role: "default",
      model: fast,
      reasoning: "medium",
      reasoningSource: "parent",
      fork: { kind: "all" },
      message: "do it",
      isolation: "none",
      limits: {},
    });
  });

  it("a scout below a nested caller gets its role level and a clean context", () => {
    expect(
      plan(
        { task_name: "scout_1", message: "look", agent_type: "scout", fork_turns: "none" },
        env({ callerPath: "/root/mid" }),
      ),
    ).toEqual({
      taskName: "scout_1",
      path: "/root/mid/scout_1",
      role: "scout",
      roleInfo: builtinRole("scout"),
      model: fast,
      reasoning: "low",
      reasoningSource: "role",
      fork: { kind: "none" },
      message: "look",
      isolation: "none",
      limits: {},
    });
  });

  it("explicit low on a high/xhigh-only model errors, a scout there is clamped to high silently", () => {
    expect(
      error({ ...base, model: "fake/deep", reasoning_effort: "low", fork_turns: "none", agent_type: "scout" }),
    ).toBe("reasoning_effort low is not supported by fake/deep");
    expect(plan({ ...base, model: "fake/deep", agent_type: "scout", fork_turns: "none" })).toMatchObject({
      model: deep,
      reasoning: "high",
      reasoningSource: "role",
    });
  });

  it.each<[string, SpawnRequest, Partial<SpawnEnv>, object]>([
    [
      "explicit level, kept as given",
      { ...base, reasoning_effort: "minimal" },
      {},
      { reasoning: "minimal", reasoningSource: "explicit" },
    ],
    [
      "explicit off on a non-reasoning model",
      { ...base, model: "fake/dumb", reasoning_effort: "off" },
      {},
      { model: dumb, reasoning: "off" },
    ],
    [
      "parent level clamped to the child's model",
      { ...base, model: "fake/deep" },
      { parentReasoning: "medium" },
      { reasoning: "high", reasoningSource: "parent" },
    ],
    [
      "parent level on a non-reasoning model",
      { ...base, model: "fake/dumb" },
      { parentReasoning: "high" },
      { reasoning: "off", reasoningSource: "parent" },
    ],
    [
      "specialist high clamped down on a non-reasoning model",
      { ...base, model: "fake/dumb", agent_type: "specialist", fork_turns: 2 },
      {},
      { role: "specialist", reasoning: "off", reasoningSource: "role", fork: { kind: "recent", turns: 2 } },
    ],
    [
      "implementation with a clean context",
      { ...base, agent_type: "implementation", fork_turns: "none" },
      {},
      { role: "implementation", reasoning: "medium" },
    ],
    [
      "empty strings count as absent",
      { ...base, agent_type: "", model: "", reasoning_effort: "", fork_turns: "" },
      { parentModel: deep, parentReasoning: "xhigh" },
      { role: "default", model: deep, reasoning: "xhigh", fork: { kind: "all" } },
    ],
    ["the message is kept verbatim", { ...base, message: "  spaced\n" }, {}, { message: "  spaced\n" }],
  ])("%s", (_label, req, overrides, expected) => {
    expect(plan(req, env(overrides))).toMatchObject(expected);
  });
});

describe("validateSpawn: user-defined roles (agent-definition files)", () => {
  const reviewer: Role = {
    name: "reviewer",
    description: "Reviews.",
    tools: ["read"],
    requiresForkNone: false,
    source: "user",
    filePath: "/u/agents/reviewer.md",
  };
  const catalog: RoleCatalog = {
    ...BUILTIN_CATALOG,
    roles: [
      ...BUILTIN_CATALOG.roles,
      reviewer,
      { ...reviewer, name: "deep_thinker", model: "fake/deep", reasoning: "low" },
      { ...reviewer, name: "ghost_model", model: "fake/gone" },
      { ...reviewer, name: "terse", reasoning: "minimal", source: "project" },
    ],
    rejected: [
      {
        filePath: "/u/agents/broken.md",
        source: "user",
        name: "broken",
        problem: 'unknown field "colour" (allowed: name, description, tools, model, reasoning)',
      },
    ],
  };
  const withRoles = env({ findRole: (name) => lookupRole(catalog, name) });
  const req = (agent_type: string, extra: SpawnRequest = {}): SpawnRequest => ({
    ...base,
    agent_type,
    fork_turns: "none",
    ...extra,
  });
  const plan = (r: SpawnRequest) => {
    const result = validateSpawn(r, withRoles);
    if (!result.ok) throw new Error(result.error);
    return result.plan;
  };

  it("rule 3 applies to them: a full-history fork is refused before the role is looked up", () => {
    expect(error({ ...base, agent_type: "reviewer" }, withRoles)).toBe(FULL_FORK);
    expect(error({ ...base, agent_type: "broken", fork_turns: "all" }, withRoles)).toBe(FULL_FORK);
  });

  it("a refused file says why after `unknown agent_type: <name>` (rule 4)", () => {
    expect(error(req("broken"), withRoles)).toBe(
      'unknown agent_type: broken — agent definition /u/agents/broken.md was rejected: unknown field "colour" (allowed: name, description, tools, model, reasoning)',
    );
    expect(error(req("wizard"), withRoles)).toBe("unknown agent_type: wizard");
  });

  it("the role's model is checked like an explicit one (rule 5), unless the call names a model", () => {
    expect(error(req("ghost_model"), withRoles)).toBe(
      "unknown model: fake/gone — named by agent definition /u/agents/reviewer.md; no model is available",
    );
    const listing = env({
      findRole: (name) => lookupRole(catalog, name),
      availableModels: () => ["fake/fast", "fake/deep"],
    });
    expect(error(req("ghost_model"), listing)).toBe(
      "unknown model: fake/gone — named by agent definition /u/agents/reviewer.md; models you can use: fake/fast, fake/deep",
    );
    const many = env({
      findRole: (name) => lookupRole(catalog, name),
      availableModels: () => Array.from({ length: 14 }, (_, i) => `p/m${i}`),
    });
    expect(error(req("ghost_model"), many)).toMatch(
      /; models you can use: p\/m0, .*, p\/m9, … \(4 more: list_models\)$/,
    );
    expect(plan(req("ghost_model", { model: "fake/fast" })).model).toBe(fast);
  });

  it("the role's model and reasoning are defaults; reasoning is clamped to the model silently", () => {
    expect(plan(req("deep_thinker"))).toMatchObject({
      role: "deep_thinker",
      roleInfo: { source: "user" },
      model: deep,
      reasoning: "high",
      reasoningSource: "role",
    });
    expect(plan(req("terse"))).toMatchObject({
      model: fast,
      reasoning: "minimal",
      reasoningSource: "role",
      roleInfo: { source: "project" },
    });
    expect(error(req("deep_thinker", { reasoning_effort: "low" }), withRoles)).toBe(
      "reasoning_effort low is not supported by fake/deep",
    );
  });

  it("a role without reasoning or model takes the parent's", () => {
    expect(plan(req("reviewer"))).toMatchObject({
      model: fast,
      reasoning: "medium",
      reasoningSource: "parent",
      roleInfo: reviewer,
    });
    expect(plan(req("reviewer", { fork_turns: 2 })).fork).toEqual({ kind: "recent", turns: 2 });
  });
});

describe("validateSpawn: values in errors are bounded, task_name has a maximum length", () => {
  const huge = "x".repeat(5_000_000);
  /** The longest a message quoting one value can be: its fixed text, 200 chars and `…`. */
  const bounded = (message: string, prefix: string) => {
    expect(message.startsWith(prefix)).toBe(true);
    expect(message.length).toBeLessThanOrEqual(prefix.length + 201);
    expect(message.endsWith("…")).toBe(true);
  };

  it("a 5 MB agent_type, model or reasoning_effort comes back as 200 chars and …", () => {
    bounded(error({ ...base, agent_type: huge, fork_turns: "none" }), "unknown agent_type: ");
    bounded(error({ ...base, model: huge }), "unknown model: ");
    bounded(error({ ...base, reasoning_effort: huge }), "unknown reasoning_effort: ");
    // Not a string: its JSON is bounded the same way.
    bounded(error({ ...base, model: { a: huge } }), "unknown model: ");
  });

  it("a cut name never matches a role: 200 chars of a real role's name plus more is still unknown", () => {
    const roles: RoleCatalog = {
      ...BUILTIN_CATALOG,
      roles: [...BUILTIN_CATALOG.roles, { ...builtinRole("scout")!, name: "a".repeat(200), source: "user" }],
    };
    const findRole = (name: string) => lookupRole(roles, name);
    expect(error({ ...base, agent_type: "a".repeat(201), fork_turns: "none" }, env({ findRole }))).toBe(
      `unknown agent_type: ${"a".repeat(200)}…`,
    );
  });

  it("a task_name of valid characters longer than 64 gets its own message, with its length", () => {
    expect(error({ ...base, task_name: "a".repeat(64) })).toBe("ok");
    expect(error({ ...base, task_name: "a".repeat(65) })).toBe(
      "task_name must be at most 64 characters (this one has 65)",
    );
    expect(error({ ...base, task_name: "a".repeat(5_000_000) })).toBe(
      "task_name must be at most 64 characters (this one has 5000000)",
    );
  });

  it("the length is checked right after rule 1: bad characters say rule 1, a long name comes before rules 2–11", () => {
    expect(error({ ...base, task_name: `A${"a".repeat(100)}` })).toBe(NAME);
    expect(error({ ...base, task_name: "a".repeat(65), agent_type: "scout", model: "fake/nope" })).toBe(
      "task_name must be at most 64 characters (this one has 65)",
    );
  });
});

describe("validateSpawn: isolation (rule 12; rule 13 needs git and is checked by spawn)", () => {
  const ISOLATION = 'isolation must be "none" or "worktree"';
  const isolated = (isolation: Role["isolation"]): RoleCatalog => ({
    ...BUILTIN_CATALOG,
    roles: [
      ...BUILTIN_CATALOG.roles,
      {
        name: "writer",
        description: "writes",
        tools: "parent",
        requiresForkNone: false,
        source: "user",
        ...(isolation && { isolation }),
      },
    ],
  });
  const plan = (req: SpawnRequest, e: SpawnEnv = env()) => {
    const result = validateSpawn(req, e);
    if (!result.ok) throw new Error(result.error);
    return result.plan;
  };

  it.each<[string, unknown]>([
    ["an unknown word", "sideways"],
    ["a capitalised value", "Worktree"],
    ["a boolean", true],
    ["a number", 1],
    ["an object", { mode: "worktree" }],
  ])("12 %s is refused with the exact message", (_label, isolation) => {
    expect(error({ ...base, isolation })).toBe(ISOLATION);
  });

  it("12 comes after every earlier rule, the spawn cap (11) included", () => {
    expect(error({ ...base, isolation: "bad" }, env({ spawnCount: 64 }))).toMatch(/^spawn limit reached/);
    expect(error({ ...base, task_name: "taken", isolation: "bad" })).toBe(
      "agent task path already exists: /root/taken",
    );
    expect(error({ ...base, isolation: "bad" })).toBe(ISOLATION);
  });

  it("defaults to none; absent, null and empty mean not given; surrounding white space is forgiven", () => {
    expect(plan(base).isolation).toBe("none");
    expect(plan({ ...base, isolation: null }).isolation).toBe("none");
    expect(plan({ ...base, isolation: "" }).isolation).toBe("none");
    expect(plan({ ...base, isolation: " worktree " }).isolation).toBe("worktree");
    expect(plan({ ...base, isolation: "none" }).isolation).toBe("none");
  });

  it("a role's `isolation: worktree` is its default, and the parameter wins over it", () => {
    const withRole = env({ findRole: (name) => lookupRole(isolated("worktree"), name) });
    expect(plan({ ...base, agent_type: "writer", fork_turns: "none" }, withRole).isolation).toBe("worktree");
    expect(plan({ ...base, agent_type: "writer", fork_turns: "none", isolation: "none" }, withRole).isolation).toBe(
      "none",
    );
    const plain = env({ findRole: (name) => lookupRole(isolated(undefined), name) });
    expect(plan({ ...base, agent_type: "writer", fork_turns: "none" }, plain).isolation).toBe("none");
    expect(plan({ ...base, agent_type: "writer", fork_turns: "none", isolation: "worktree" }, plain).isolation).toBe(
      "worktree",
    );
  });

  it("13's message names the cwd", () => {
    expect(noRepositoryError("/home/u/notes")).toBe(
      'isolation "worktree" needs a git repository: /home/u/notes is not inside one',
    );
  });
});

describe("validateSpawn: limits", () => {
  const limited: RoleCatalog = {
    ...BUILTIN_CATALOG,
    roles: [
      ...BUILTIN_CATALOG.roles,
      {
        name: "capped",
        description: "capped",
        tools: "parent",
        requiresForkNone: false,
        source: "user",
        limits: { max_turns: 10, max_cost: 1 },
      },
    ],
  };
  const withRole = (settingsLimits: NonNullable<SpawnEnv["settingsLimits"]> = {}) =>
    env({ findRole: (name) => lookupRole(limited, name), settingsLimits });
  const plan = (req: SpawnRequest, e: SpawnEnv = env()) => {
    const result = validateSpawn(req, e);
    if (!result.ok) throw new Error(result.error);
    return result.plan;
  };

  it.each<[string, unknown, string]>([
    [
      "an unknown key",
      { max_steps: 3 },
      'limits: unknown key "max_steps" (known: max_turns, max_tokens, max_cost, time_limit, grace_turns, grace_seconds)',
    ],
    ["zero", { max_turns: 0 }, "limits.max_turns must be a positive whole number, not 0"],
    ["a negative cost", { max_cost: -1 }, "limits.max_cost must be a positive number, not -1"],
    ["a string", { time_limit: "60" }, 'limits.time_limit must be a positive number, not "60"'],
    ["a fraction of a request", { grace_turns: 1.5 }, "limits.grace_turns must be a positive whole number, not 1.5"],
    ["not an object", [3], "limits must be an object, not an array"],
  ])("%s is a spawn error naming the key", (_label, limits, message) => {
    expect(error({ ...base, limits })).toBe(message);
  });

  it("every bad key is named at once", () => {
    expect(error({ ...base, limits: { max_turns: -2, max_tokens: "x" } })).toBe(
      'limits.max_turns must be a positive whole number, not -2; limits.max_tokens must be a positive whole number, not "x"',
    );
  });

  it("spawn beats definition beats settings, key by key; absent, null and {} give the lower layers", () => {
    const settings = { max_turns: 99, max_tokens: 5000, time_limit: 600 };
    expect(
      plan({ ...base, agent_type: "capped", fork_turns: "none", limits: { max_turns: 3 } }, withRole(settings)).limits,
    ).toEqual({
      max_turns: 3,
      max_cost: 1,
      max_tokens: 5000,
      time_limit: 600,
    });
    expect(plan({ ...base, agent_type: "capped", fork_turns: "none" }, withRole(settings)).limits).toEqual({
      max_turns: 10,
      max_cost: 1,
      max_tokens: 5000,
      time_limit: 600,
    });
    expect(plan({ ...base, limits: null }, withRole({ grace_turns: 1 })).limits).toEqual({ grace_turns: 1 });
    expect(plan({ ...base, limits: {} }).limits).toEqual({});
  });
});
