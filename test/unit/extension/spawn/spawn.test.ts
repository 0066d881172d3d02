/**
 * spawnAgent's rollback: a spawn that fails at any step leaves nothing behind. Each step's
 * undo runs, newest first, and only the undos of the steps already taken: the runtime forgets
 * the child, its worktree goes, then its nickname, its spawn number and its path.
 *
 * The runtime is a small fake over a real tree directory (and, for an isolated child, a real
 * repository in a temp dir), so the claims are the real files and the undo order is logged.
 */
import fs from "node:fs";
import path from "node:path";
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { describe, expect, it, vi } from "vitest";
import { TREE_FILES } from "../../../../src/contracts/layout.js";
import type { ModelInfo } from "../../../../src/extension/roles/models.js";
import { type SpawnResult, type SpawnRuntime, spawnAgent } from "../../../../src/extension/spawn/spawn.js";
import type { SpawnRequest } from "../../../../src/extension/spawn/validate.js";
import { TreeDir } from "../../../../src/extension/tree/tree-dir.js";
import type { ChildState } from "../../../../src/extension/turns/runtime.js";
import type { WorktreeOperations } from "../../../../src/extension/turns/worktree-turns.js";
import { FakeClock } from "../../../support/fake-clock.js";
import { makeRepo, type Sandbox, sh, useSandbox } from "../isolation/support.js";

const sandbox = useSandbox();

const MODEL: ModelInfo = { provider: "test", id: "model", reasoning: true };

/** The step of the spawn that fails, when one should. */
type FailingStep = "claimSpawn" | "claimNickname" | "treeTag" | "history" | "firstTurn";

/** A real tree directory whose releases are logged, and whose chosen step fails. */
class LoggedTree extends TreeDir {
  constructor(
    root: string,
    private readonly log: string[],
    private readonly failing: FailingStep | undefined,
  ) {
    super(root);
  }
  override async claimSpawn(maxSpawns: number, agentPath: string): Promise<number | undefined> {
    // Another process took the last spawn number after this spawn's rule 11 passed.
    return this.failing === "claimSpawn" ? undefined : super.claimSpawn(maxSpawns, agentPath);
  }
  override async claimNickname(name: string, agentPath: string): Promise<boolean> {
    if (this.failing === "claimNickname") throw new Error("EIO: nicknames");
    return super.claimNickname(name, agentPath);
  }
  override async treeTag(): Promise<string> {
    if (this.failing === "treeTag") throw new Error("EIO: tree tag");
    return super.treeTag();
  }
  override async releasePath(agentPath: string): Promise<void> {
    this.log.push("release path");
    return super.releasePath(agentPath);
  }
  override async releaseSpawn(seq: number): Promise<void> {
    this.log.push("release spawn");
    return super.releaseSpawn(seq);
  }
  override async releaseNickname(name: string): Promise<void> {
    this.log.push("release nickname");
    return super.releaseNickname(name);
  }
}

class LoggedChildren extends Map<string, ChildState> {
  log: string[] = [];
  override delete(key: string): boolean {
    this.log.push("forget child");
    return super.delete(key);
  }
}

interface Setup {
  box: Sandbox;
  tree: LoggedTree;
  runtime: SpawnRuntime & { children: LoggedChildren };
  log: string[];
  spawn(request?: SpawnRequest): Promise<SpawnResult>;
}

async function setup(failing?: FailingStep, opts: { isolated?: boolean } = {}): Promise<Setup> {
  const box = sandbox();
  const log: string[] = [];
  const cwd = opts.isolated ? makeRepo(box, { "a.txt": "a\n" }) : box.dir;
  const tree = new LoggedTree(path.join(box.dir, "tree"), log, failing);
  await tree.init("session");
  const children = new LoggedChildren();
  children.log = log;
  const worktrees = {
    adopt: async () => void log.push("adopt worktree"),
    startCheckout: () => void log.push("start checkout"),
    remove: async () => void log.push("remove worktree"),
  } as unknown as WorktreeOperations;
  const runtime = {
    tree,
    self: "/root",
    cwd,
    children,
    limits: { maxActiveChildTurns: 3, maxDepth: 3, maxSpawns: 64, turnTimeoutMs: 60_000 },
    worktrees,
    requestTurn: async () => {
      if (failing === "firstTurn") throw new Error("the turn could not be queued");
    },
    queuePosition: () => undefined,
    clock: new FakeClock(),
  } as SpawnRuntime & { children: LoggedChildren };
  const pi = {
    getAllTools: () => [],
    getActiveTools: () => ["read"],
    getThinkingLevel: () => "medium",
  } as unknown as ExtensionAPI;
  const ctx = {
    model: MODEL,
    modelRegistry: {
      find: (provider: string, id: string) => (provider === MODEL.provider && id === MODEL.id ? MODEL : undefined),
      hasConfiguredAuth: () => true,
      getAvailable: () => [MODEL],
    },
    sessionManager: {
      getBranch: () => {
        if (failing === "history") throw new Error("the session could not be read");
        return [];
      },
      getSessionFile: () => undefined,
    },
  } as unknown as ExtensionContext;
  const request: SpawnRequest = {
    task_name: "worker",
    message: "do it",
    fork_turns: "all",
    ...(opts.isolated && { isolation: "worktree" }),
  };
  return { box, tree, runtime, log, spawn: (params = request) => spawnAgent(runtime, pi, ctx, params) };
}

/** Nothing of the spawn is left: no folder, spawn number, nickname or child. */
function expectNothingLeft({ tree, runtime }: Setup): void {
  expect(fs.existsSync(tree.agentDir("/root/worker"))).toBe(false);
  expect(fs.readdirSync(path.join(tree.root, TREE_FILES.spawns))).toEqual([]);
  expect(fs.readdirSync(path.join(tree.root, TREE_FILES.nicknames))).toEqual([]);
  expect(runtime.children.size).toBe(0);
}

describe("spawnAgent: a failed step undoes the steps before it, newest first", () => {
  it("a spawn that succeeds undoes nothing", async () => {
    const s = await setup();
    const result = await s.spawn();
    expect(result).toMatchObject({ agent_name: "/root/worker", role: "default", agent_status: "pending_init" });
    expect(s.log).toEqual([]);
    const record = s.runtime.children.get("/root/worker")?.record;
    expect(record?.nickname).toBe(result.nickname);
    // Made on the runtime's clock.
    expect(record?.spawnedAt).toBe(new Date(s.runtime.clock.now()).toISOString());
    expect(fs.readdirSync(path.join(s.tree.root, TREE_FILES.spawns))).toHaveLength(1);
  });

  it("a child on a runner (PI_SUBAGENTS_RUNNER set) is refused with the reason, before anything is claimed", async () => {
    const s = await setup();
    vi.stubEnv("PI_SUBAGENTS_RUNNER", "box (sandbox)");
    try {
      await expect(s.spawn()).rejects.toThrow(/^spawn_agent does not work on runner box \(sandbox\): /);
    } finally {
      vi.unstubAllEnvs();
    }
    expectNothingLeft(s);
    expect(s.log).toEqual([]);
  });

  it("a path another spawn claimed first: nothing was taken, so nothing is undone", async () => {
    const s = await setup();
    expect(await s.tree.claimPath("/root/worker")).toBe(true);
    await expect(s.spawn()).rejects.toThrow("agent task path already exists: /root/worker");
    expect(s.log).toEqual([]);
    expect(fs.existsSync(s.tree.agentDir("/root/worker"))).toBe(true); // the other spawn's claim stays
    expect(fs.readdirSync(path.join(s.tree.root, TREE_FILES.spawns))).toEqual([]);
  });

  const failures: Array<{ step: FailingStep; error: string; undone: string[] }> = [
    {
      step: "claimSpawn",
      error: "spawn limit reached: this tree has spawned 0 agents (limit 64)",
      undone: ["release path"],
    },
    { step: "claimNickname", error: "EIO: nicknames", undone: ["release spawn", "release path"] },
    {
      step: "history",
      error: "the session could not be read",
      undone: ["release nickname", "release spawn", "release path"],
    },
    {
      step: "firstTurn",
      error: "the turn could not be queued",
      undone: ["forget child", "release nickname", "release spawn", "release path"],
    },
  ];
  for (const { step, error, undone } of failures) {
    it(`fails at ${step}: undoes ${undone.join(", ")}`, async () => {
      const s = await setup(step);
      await expect(s.spawn()).rejects.toThrow(error);
      expect(s.log).toEqual(undone);
      expectNothingLeft(s);
    });
  }

  it("an isolated spawn that fails before its worktree exists undoes the claims", async () => {
    const s = await setup("treeTag", { isolated: true });
    await expect(s.spawn()).rejects.toThrow("EIO: tree tag");
    expect(s.log).toEqual(["release nickname", "release spawn", "release path"]);
    expectNothingLeft(s);
  });

  it("an isolated spawn whose first turn fails: the runtime forgets the child, then its worktree and branch go", async () => {
    const s = await setup("firstTurn", { isolated: true });
    const repo = s.runtime.cwd;
    await expect(s.spawn()).rejects.toThrow("the turn could not be queued");
    expect(s.log).toEqual([
      "adopt worktree",
      "forget child",
      "remove worktree",
      "release nickname",
      "release spawn",
      "release path",
    ]);
    expectNothingLeft(s);
    expect(sh(s.box, repo, ["branch", "--list", "subagent/*"])).toBe("");
    expect(sh(s.box, repo, ["worktree", "list", "--porcelain"]).match(/^worktree /gm)).toHaveLength(1);
    expect(fs.existsSync(path.join(s.tree.root, "worktrees", "worker"))).toBe(false);
  });
});

describe("spawnAgent: limits from the settings", () => {
  it("the settings' limits are the lowest layer; a bad settings key is said once to the user and its default holds", async () => {
    const s = await setup();
    const agentDir = path.join(s.box.dir, "pi-agent");
    fs.mkdirSync(agentDir);
    vi.stubEnv("PI_CODING_AGENT_DIR", agentDir);
    try {
      fs.mkdirSync(path.join(s.box.dir, ".pi"));
      fs.writeFileSync(
        path.join(s.box.dir, ".pi", "settings.json"),
        JSON.stringify({ subagents: { limits: { max_turns: 4, max_cost: 2, limit_speed_spawn_test: 1 } } }),
      );
      const said: string[] = [];
      s.runtime.report = (line) => said.push(line);
      await s.spawn({ task_name: "worker", message: "do it", fork_turns: "none", limits: { max_cost: 0.5 } });
      const record = s.runtime.children.get("/root/worker")!.record;
      expect(record.limits).toEqual({ max_turns: 4, max_cost: 0.5 });
      expect(said).toHaveLength(1);
      expect(said[0]).toContain('unknown key "limit_speed_spawn_test"');
      await s.spawn({ task_name: "other", message: "do it", fork_turns: "none" });
      expect(s.runtime.children.get("/root/other")!.record.limits).toEqual({ max_turns: 4, max_cost: 2 });
      expect(said).toHaveLength(1);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});
