/**
 * An isolated spawn's git side (spawn/isolate.ts) on real repositories in temp dirs: rule 13,
 * the snapshot's exclusions, the setup command, the undo of a failed spawn, and the
 * repositories that are not a plain clone (a submodule, a linked worktree).
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { commitTurn } from "../../../../src/extension/isolation/turn.js";
import {
  createIsolatedWorktree,
  repositoryFor,
  SETUP_TIMEOUT_MS,
  setupCommandFromEnv,
} from "../../../../src/extension/spawn/isolate.js";
import { commitAll, makeRepo, type Sandbox, sh, treeFiles, useSandbox, write } from "../isolation/support.js";

const sandbox = useSandbox();
const TAG = "0badc0de";

function gitState(box: Sandbox, repo: string) {
  return {
    branches: sh(box, repo, ["branch", "--list", "--format=%(refname:short)"]),
    worktrees: sh(box, repo, ["worktree", "list", "--porcelain"]).match(/^worktree /gm)?.length,
  };
}

async function isolate(box: Sandbox, cwd: string, extra: Partial<Parameters<typeof createIsolatedWorktree>[0]> = {}) {
  const repository = await repositoryFor(cwd, box.env);
  return createIsolatedWorktree({
    repository,
    treeDir: path.join(box.dir, "tree"),
    agentPath: "/root/worker",
    treeTag: TAG,
    env: box.env,
    ...extra,
  });
}

describe("repositoryFor (rule 13)", () => {
  it("refuses a cwd no git working tree holds, with the exact message", async () => {
    const box = sandbox();
    const plain = path.join(box.dir, "notes");
    fs.mkdirSync(plain);
    await expect(repositoryFor(plain, box.env)).rejects.toThrow(
      `isolation "worktree" needs a git repository: ${plain} is not inside one`,
    );
  });

  it("finds the top and the subdirectory of a cwd inside a repository", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "pkg/a.txt": "a\n" });
    expect(await repositoryFor(path.join(repo, "pkg"), box.env)).toEqual({ topLevel: repo, subdir: "pkg" });
  });
});

describe("createIsolatedWorktree", () => {
  it("makes the branch and worktree under the tree directory, the child's cwd in the parent's subdirectory", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "pkg/a.txt": "a\n" });
    write(path.join(repo, "pkg", "a.txt"), "a, dirty\n");
    const made = await isolate(box, path.join(repo, "pkg"));
    const worktreePath = path.join(box.dir, "tree", "worktrees", "worker");
    expect(made.worktree).toEqual({
      path: worktreePath,
      branch: `subagent/${TAG}-worker`,
      baseCommit: made.worktree.baseCommit,
      gitDir: path.join(repo, ".git"),
      subdir: "pkg",
    });
    expect(made.cwd).toBe(path.join(worktreePath, "pkg"));
    expect(fs.readFileSync(path.join(made.cwd, "a.txt"), "utf8")).toBe("a, dirty\n");
    await made.release();
    expect(gitState(box, repo)).toEqual({ branches: "main\n", worktrees: 1 });
    expect(fs.existsSync(worktreePath)).toBe(false);
  });

  it("leaves the tree directory out of the snapshot when it lies inside the working tree", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n" });
    const treeDir = path.join(repo, ".pi", "subagents", "tree");
    write(path.join(treeDir, "agents", "other", "agent.json"), "{}\n");
    write(path.join(repo, "new.txt"), "new\n");
    const made = await isolate(box, repo, { treeDir });
    expect(made.worktree.path).toBe(path.join(treeDir, "worktrees", "worker"));
    expect(treeFiles(box, repo, made.worktree.baseCommit)).toEqual(["a.txt", "new.txt"]);
    await made.release();
  });

  it("refuses a tree directory that is the repository's top", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n" });
    await expect(isolate(box, repo, { treeDir: repo })).rejects.toThrow(
      /cannot use the repository's top .* as the tree directory/,
    );
    expect(gitState(box, repo)).toEqual({ branches: "main\n", worktrees: 1 });
  });

  it("runs the setup command in the new worktree with the source's path, and keeps what it created out of every turn's commit", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { ".gitignore": "node_modules/\n", "a.txt": "a\n" });
    write(path.join(repo, "node_modules", "dep", "index.js"), "1\n");
    const setup = {
      command: 'ln -s "$PI_SUBAGENTS_WORKTREE_SOURCE/node_modules" node_modules && mkdir .cache && touch .cache/x',
      timeoutMs: 10_000,
    };
    const made = await isolate(box, repo, { setup });
    // A `node_modules` link is not matched by `node_modules/`: the setup paths are recorded instead.
    expect(made.worktree.setupPaths).toEqual([".cache", "node_modules"]);
    expect(fs.readFileSync(path.join(made.cwd, "node_modules", "dep", "index.js"), "utf8")).toBe("1\n");
    write(path.join(made.cwd, "b.txt"), "b\n");
    const { head } = await commitTurn({
      worktreePath: made.worktree.path,
      message: "turn 1",
      exclude: made.worktree.setupPaths,
      env: box.env,
    });
    expect(treeFiles(box, repo, head)).toEqual([".gitignore", "a.txt", "b.txt"]);
    await made.release(); // the branch holds a commit: it stays
    expect(gitState(box, repo)).toEqual({ branches: `main\nsubagent/${TAG}-worker\n`, worktrees: 1 });
  });

  it("a setup command that fails fails the spawn with its stderr tail, and leaves no worktree, branch or folder", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n" });
    const setup = { command: "echo 'npm ci: lockfile out of date' >&2; exit 7", timeoutMs: 10_000 };
    await expect(isolate(box, repo, { setup })).rejects.toThrow(
      /^worktree setup command .* failed \(exit 7\): npm ci: lockfile out of date$/,
    );
    expect(gitState(box, repo)).toEqual({ branches: "main\n", worktrees: 1 });
    expect(fs.readdirSync(path.join(box.dir, "tree", "worktrees"))).toEqual([]);
  });

  it("never touches a branch of the same name that already exists", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n" });
    sh(box, repo, ["branch", `subagent/${TAG}-worker`]);
    await expect(isolate(box, repo)).rejects.toThrow(
      `isolation "worktree" cannot create branch subagent/${TAG}-worker: it already exists in ${repo}`,
    );
    expect(gitState(box, repo)).toEqual({ branches: `main\nsubagent/${TAG}-worker\n`, worktrees: 1 });
  });

  it("an isolated parent's setup paths stay out of its own child's snapshot", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n" });
    write(path.join(repo, "deps", "x"), "x\n");
    const setup = { command: 'ln -s "$PI_SUBAGENTS_WORKTREE_SOURCE/deps" linked', timeoutMs: 10_000 };
    const parent = await isolate(box, repo, { setup });
    write(path.join(parent.cwd, "work.txt"), "the parent's uncommitted work\n");
    const child = await isolate(box, parent.cwd, {
      agentPath: "/root/worker/checker",
      parentWorktree: parent.worktree,
      setup,
    });
    expect(treeFiles(box, repo, child.worktree.baseCommit)).toEqual(["a.txt", "deps/x", "work.txt"]);
    expect(fs.readlinkSync(path.join(child.cwd, "linked"))).toBe(path.join(parent.worktree.path, "deps"));
    expect(child.worktree.path).toBe(path.join(box.dir, "tree", "worktrees", "worker-checker"));
    await child.release();
    await parent.release();
  });

  it("works in a submodule (its .git is a file) and in a linked worktree", async () => {
    const box = sandbox();
    const lib = makeRepo(box, { "l.txt": "l\n" }, "lib");
    const repo = makeRepo(box, { "a.txt": "a\n" });
    sh(box, repo, ["-c", "protocol.file.allow=always", "submodule", "--quiet", "add", lib, "lib"]);
    commitAll(box, repo, "add lib");
    write(path.join(repo, "lib", "l.txt"), "l, dirty\n");
    const inSubmodule = await isolate(box, path.join(repo, "lib"));
    expect(inSubmodule.worktree.gitDir).toBe(path.join(repo, ".git", "modules", "lib"));
    expect(fs.readFileSync(path.join(inSubmodule.cwd, "l.txt"), "utf8")).toBe("l, dirty\n");
    await inSubmodule.release();

    const linked = path.join(box.dir, "linked");
    sh(box, repo, ["worktree", "add", "-q", "-b", "side", linked]);
    write(path.join(linked, "side.txt"), "side\n");
    const inLinked = await isolate(box, linked, { agentPath: "/root/other" });
    expect(inLinked.worktree.gitDir).toBe(path.join(repo, ".git"));
    expect(fs.readFileSync(path.join(inLinked.cwd, "side.txt"), "utf8")).toBe("side\n");
    await inLinked.release();
    expect(gitState(box, repo)).toEqual({ branches: "main\nside\n", worktrees: 2 });
  });
});

describe("setupCommandFromEnv", () => {
  it("reads the command and its time limit; a blank command is none, a bad limit the default", () => {
    expect(setupCommandFromEnv({})).toBeUndefined();
    expect(setupCommandFromEnv({ PI_SUBAGENTS_WORKTREE_SETUP: "  " })).toBeUndefined();
    expect(setupCommandFromEnv({ PI_SUBAGENTS_WORKTREE_SETUP: "npm ci" })).toEqual({
      command: "npm ci",
      timeoutMs: SETUP_TIMEOUT_MS,
    });
    expect(
      setupCommandFromEnv({ PI_SUBAGENTS_WORKTREE_SETUP: "npm ci", PI_SUBAGENTS_WORKTREE_SETUP_TIMEOUT_MS: "5000" }),
    ).toEqual({
      command: "npm ci",
      timeoutMs: 5000,
    });
    expect(
      setupCommandFromEnv({ PI_SUBAGENTS_WORKTREE_SETUP: "x", PI_SUBAGENTS_WORKTREE_SETUP_TIMEOUT_MS: "soon" })
        ?.timeoutMs,
    ).toBe(SETUP_TIMEOUT_MS);
  });
});
