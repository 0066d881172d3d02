import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { rootTreeDir } from "../../../../src/contracts/layout.js";
import { identityFromEnv, treeLimits } from "../../../../src/extension/config.js";
import { TreeDir } from "../../../../src/extension/tree/tree-dir.js";
import { agentRecord } from "../../../support/records.js";

let dir: string;
let tree: TreeDir;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "psa-tree-"));
  tree = new TreeDir(path.join(dir, "tree"));
  await tree.init("session-1");
});
afterEach(() => rm(dir, { recursive: true, force: true }));

/** A message notice's fields but its sender, type and text. */
const base = {
  nickname: "n",
  agent_status: "running",
  health: "healthy",
  model: "m",
  reasoning: "r",
  report_chars: 1,
  report_stored: false,
} as const;

const record = (agentPath: string, spawnSeq: number) =>
  agentRecord({ path: agentPath, nickname: `N${spawnSeq}`, spawnSeq });

describe("TreeDir", () => {
  it("writes nothing until the tree is first needed; ensure then makes it once, with the root session named", async () => {
    const root = path.join(dir, "later");
    const tree = new TreeDir(root);
    tree.belongsTo("/s/root.jsonl");
    expect(tree.onDisk()).toBe(false);
    expect(await tree.subtree("/root")).toEqual([]);
    await Promise.all([tree.ensure(), tree.ensure()]);
    expect(tree.onDisk()).toBe(true);
    expect(JSON.parse(await readFile(path.join(root, "tree.json"), "utf8"))).toMatchObject({
      rootSession: "/s/root.jsonl",
    });
  });

  it("maps paths to folders inside the tree and refuses paths that could escape it", () => {
    expect(tree.agentDir("/root")).toBe(tree.root);
    expect(tree.agentDir("/root/mid/leaf")).toBe(path.join(tree.root, "agents", "mid", "leaf"));
    for (const bad of ["/root/../x", "/root/A", "/etc", "/root/a/../../b"]) expect(() => tree.agentDir(bad)).toThrow();
  });

  it("lists a subtree in spawn order, grandchildren included, the caller excluded", async () => {
    for (const [p, seq] of [
      ["/root/b", 2],
      ["/root/a", 1],
      ["/root/a/leaf", 3],
      ["/root/b/x", 4],
    ] as const)
      await tree.writeRecord(record(p, seq));
    expect((await tree.subtree("/root")).map((r) => r.path)).toEqual([
      "/root/a",
      "/root/b",
      "/root/a/leaf",
      "/root/b/x",
    ]);
    expect((await tree.subtree("/root/a")).map((r) => r.path)).toEqual(["/root/a/leaf"]);
  });

  it("claims are exclusive: one path, one nickname, and spawns up to the cap", async () => {
    expect(await tree.claimPath("/root/a")).toBe(true);
    expect(await tree.claimPath("/root/a")).toBe(false);
    expect(await tree.claimNickname("Euclid", "/root/a")).toBe(true);
    expect(await tree.claimNickname("Euclid", "/root/b")).toBe(false);
    const claims = await Promise.all([1, 2, 3, 4].map((i) => tree.claimSpawn(3, `/root/x${i}`)));
    expect(claims.filter((n) => n !== undefined).sort()).toEqual([1, 2, 3]);
    expect(await tree.spawnCount()).toBe(3);
  });

  it("an inbox hands each posted notice out once, oldest first", async () => {
    await tree.postToInbox("/root", { ...base, agent_name: "/root/a", type: "message", report: "first" });
    await tree.postToInbox("/root", { ...base, agent_name: "/root/b", type: "message", report: "second" });
    expect((await tree.drainInbox("/root")).map((n) => n.report)).toEqual(["first", "second"]);
    expect(await tree.drainInbox("/root")).toEqual([]);
  });

  it("two drains at once (a wait and a turn's end collect together) hand each message on once", async () => {
    for (let i = 0; i < 5; i++)
      await tree.postToInbox("/root", { ...base, agent_name: "/root/a", type: "message", report: `m${i}` });
    const drained = await Promise.all([tree.drainInbox("/root"), tree.drainInbox("/root"), tree.drainInbox("/root")]);
    expect(drained.flat().map((n) => n.report)).toEqual(["m0", "m1", "m2", "m3", "m4"]);
  });
});

describe("config", () => {
  it("a child knows its path and tree from its environment; anything else is the root", () => {
    expect(identityFromEnv({ PI_SUBAGENTS_AGENT_PATH: "/root/mid", PI_SUBAGENTS_TREE_DIR: "/t" })).toEqual({
      self: "/root/mid",
      isRoot: false,
      treeDir: "/t",
    });
    expect(identityFromEnv({})).toEqual({ self: "/root", isRoot: true, treeDir: undefined });
    for (const bad of ["/root/../etc", "/root/a//b", "/root/Mid", "/root/", "/rooted/x", "/root"]) {
      expect(identityFromEnv({ PI_SUBAGENTS_AGENT_PATH: bad, PI_SUBAGENTS_TREE_DIR: "/t" })).toEqual({
        self: "/root",
        isRoot: true,
        treeDir: undefined,
      });
    }
    expect(identityFromEnv({ PI_SUBAGENTS_AGENT_PATH: "/elsewhere", PI_SUBAGENTS_TREE_DIR: "/t" }).isRoot).toBe(true);
  });

  it("the tree directory sits beside the session file, under PI_SUBAGENTS_DIR when set", () => {
    expect(rootTreeDir("abc", "/home/u/.pi/sessions/x.jsonl", {})).toBe("/home/u/.pi/sessions/subagents/abc");
    expect(rootTreeDir("abc", "/s/x.jsonl", { PI_SUBAGENTS_DIR: "/base" })).toBe("/base/abc");
    expect(rootTreeDir("a/b", undefined, { PI_SUBAGENTS_DIR: "/base" })).toBe("/base/a_b");
  });

  it("limits have documented defaults and can be raised or lowered by environment", () => {
    expect(treeLimits({})).toEqual({ maxActiveChildTurns: 3, maxDepth: 3, maxSpawns: 64, turnTimeoutMs: 1_800_000 });
    expect(treeLimits({ PI_SUBAGENTS_MAX_DEPTH: "1", PI_SUBAGENTS_MAX_SPAWNS: "nope" })).toMatchObject({
      maxDepth: 1,
      maxSpawns: 64,
    });
  });
});

describe("the tree tag", () => {
  it("is drawn with the tree (8 lowercase hex in tree.json), read the same by every process, and differs between trees", async () => {
    const tag = await tree.treeTag();
    expect(tag).toMatch(/^[0-9a-f]{8}$/);
    expect(JSON.parse(await readFile(path.join(tree.root, "tree.json"), "utf8")).tag).toBe(tag);
    expect(await new TreeDir(tree.root).treeTag()).toBe(tag);
    const other = new TreeDir(path.join(dir, "other"));
    await other.init("session-2");
    expect(await other.treeTag()).not.toBe(tag);
  });

  it("a tree made before tags claims one once: processes racing for it all get the same", async () => {
    const old = path.join(dir, "old");
    await mkdir(old);
    await writeFile(
      path.join(old, "tree.json"),
      JSON.stringify({ version: 1, rootSession: "s", createdAt: "2026-01-01T00:00:00Z" }),
    );
    const tags = await Promise.all(Array.from({ length: 8 }, () => new TreeDir(old).treeTag()));
    expect(new Set(tags).size).toBe(1);
    expect(tags[0]).toMatch(/^[0-9a-f]{8}$/);
    expect((await readFile(path.join(old, "tree-tag"), "utf8")).trim()).toBe(tags[0]);
  });
});
