/**
 * `subagent-wrapper clean <tree dir>`: a tree whose isolated agents' worktrees are in every
 * state clean tells apart, made with real git in a temp dir; the listing changes nothing,
 * --yes removes what it listed, a branch with the child's commits goes only when named.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { AgentStatus, AgentWorktreeV1 } from "../../src/contracts/tree.js";
import { createWorktree } from "../../src/extension/isolation/worktree.js";
import { runProcess } from "../support/processes.js";
import { agentRecord } from "../support/records.js";
import { WRAPPER_BIN } from "../support/wrapper-harness.js";
import { commitAll, makeRepo, type Sandbox, sh, useSandbox, write } from "../unit/extension/isolation/support.js";

const sandbox = useSandbox();
const TAG = "0badc0de";

/**
 * `done` ended with no commit, `worked` ended with one, `dirty` ended with an uncommitted file,
 * `busy` runs, `lead` runs and its child `lead/sub` ended (its parent may follow it up).
 */
async function cleanableTree(box: Sandbox) {
  const repo = makeRepo(box, { "a.txt": "a\n" });
  const base = sh(box, repo, ["rev-parse", "HEAD"]).trim();
  const treeDir = path.join(box.dir, "tree");
  fs.mkdirSync(path.join(treeDir, "agents"), { recursive: true });
  fs.writeFileSync(path.join(treeDir, "tree.json"), JSON.stringify({ version: 1, rootSession: "s", tag: TAG }));
  const agents: Array<[string, AgentStatus]> = [
    ["done", "completed"],
    ["worked", "interrupted"],
    ["dirty", "completed"],
    ["busy", "running"],
    ["lead", "running"],
    ["lead/sub", "completed"],
  ];
  let seq = 0;
  for (const [name, status] of agents) {
    const flat = name.replace("/", "-");
    const worktree: AgentWorktreeV1 = {
      path: path.join(treeDir, "worktrees", flat),
      branch: `subagent/${TAG}-${flat}`,
      baseCommit: base,
      gitDir: path.join(repo, ".git"),
      subdir: "",
    };
    await createWorktree({ topLevel: repo, worktreePath: worktree.path, branch: worktree.branch, base, env: box.env });
    const record = agentRecord({ path: `/root/${name}`, status, spawnSeq: ++seq, worktree });
    fs.mkdirSync(path.join(treeDir, "agents", name), { recursive: true });
    fs.writeFileSync(path.join(treeDir, "agents", name, "agent.json"), JSON.stringify(record));
  }
  const worktrees = path.join(treeDir, "worktrees");
  write(path.join(worktrees, "worked", "b.txt"), "the child's work\n");
  commitAll(box, path.join(worktrees, "worked"), "the child's turn");
  write(path.join(worktrees, "dirty", "c.txt"), "not committed\n");
  return { repo, treeDir, worktrees };
}

function clean(box: Sandbox, ...args: string[]) {
  return runProcess(process.execPath, [WRAPPER_BIN, "clean", ...args], { timeoutMs: 30_000, env: box.env });
}

const branches = (box: Sandbox, repo: string): string[] =>
  sh(box, repo, ["branch", "--format=%(refname:short)"]).split("\n").filter(Boolean).sort();

describe("clean", () => {
  it("lists what would go and what stays, and changes nothing without --yes", async () => {
    const box = sandbox();
    const { repo, treeDir, worktrees } = await cleanableTree(box);
    const before = branches(box, repo);
    const run = await clean(box, treeDir);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(
      [
        "to remove:",
        `  worktree ${worktrees}/done (/root/done)`,
        `  branch subagent/${TAG}-done (no commits beyond its base)`,
        `  worktree ${worktrees}/worked (/root/worked)`,
        "kept:",
        `  branch subagent/${TAG}-worked (/root/worked): 1 commit beyond its base (name it to delete it)`,
        `  worktree ${worktrees}/dirty and branch subagent/${TAG}-dirty (/root/dirty): it holds uncommitted changes (git -C ${worktrees}/dirty status)`,
        `  ${worktrees}/busy (/root/busy): it is running`,
        `  ${worktrees}/lead (/root/lead): it is running`,
        `  ${worktrees}/lead-sub (/root/lead/sub): its parent /root/lead works and may follow it up`,
        "run it again with --yes to remove them",
        "",
      ].join("\n"),
    );
    expect(fs.readdirSync(worktrees).sort()).toEqual(["busy", "dirty", "done", "lead", "lead-sub", "worked"]);
    expect(branches(box, repo)).toEqual(before);
  });

  it("--yes removes the ended agents' worktrees and the branches without commits; a named branch goes too", async () => {
    const box = sandbox();
    const { repo, treeDir, worktrees } = await cleanableTree(box);
    // A runner agent's workspace kept between turns goes with its worktree; a busy agent's stays.
    const keptOf = (name: string) => path.join(treeDir, "agents", name, "runner-workspace");
    for (const name of ["done", "busy"]) write(path.join(keptOf(name), "subagent-keep-1", "work", "f.txt"), "kept\n");
    const run = await clean(box, treeDir, "--yes");
    expect(fs.existsSync(keptOf("done"))).toBe(false);
    expect(fs.existsSync(keptOf("busy"))).toBe(true);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      `removed worktree ${worktrees}/done (/root/done)\ndeleted branch subagent/${TAG}-done\n`,
    );
    expect(run.stdout).toContain(`removed worktree ${worktrees}/worked (/root/worked)\n`);
    expect(run.stdout).toContain(`  branch subagent/${TAG}-worked (/root/worked): 1 commit beyond its base`);
    expect(fs.readdirSync(worktrees).sort()).toEqual(["busy", "dirty", "lead", "lead-sub"]);
    expect(branches(box, repo)).toEqual(
      ["busy", "dirty", "lead", "lead-sub", "worked"]
        .map((name) => `subagent/${TAG}-${name}`)
        .concat("main")
        .sort(),
    );
    expect(sh(box, repo, ["worktree", "list", "--porcelain"])).not.toContain("worktrees/done");

    // Again: only the branch with work is left of those two, and it goes once named (by its agent's path).
    const again = await clean(box, treeDir, "--yes", "--branch", "/root/worked");
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`deleted branch subagent/${TAG}-worked\n`);
    expect(branches(box, repo)).not.toContain(`subagent/${TAG}-worked`);
    const nothing = await clean(box, treeDir);
    expect(nothing.stdout.startsWith("nothing to remove\nkept:\n")).toBe(true);
  });

  it("no tree directory there, or a name the tree does not hold: one line on stderr, exit 2", async () => {
    const box = sandbox();
    const missing = await clean(box, path.join(box.dir, "nothing"));
    expect(missing.code).toBe(2);
    expect(missing.stdout).toBe("");
    expect(missing.stderr).toMatch(/^subagent-wrapper clean: .*nothing is not a tree directory.*\n$/);

    const { treeDir } = await cleanableTree(box);
    const unknown = await clean(box, treeDir, "--yes", "--branch", "subagent/nope");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe(`subagent-wrapper clean: no agent or branch subagent/nope in ${treeDir}\n`);
    expect(fs.readdirSync(path.join(treeDir, "worktrees"))).toContain("done");
  });

  it("a folder of trees, or --repo, takes every tree of the repository at once", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n" });
    const base = sh(box, repo, ["rev-parse", "HEAD"]).trim();
    const subagents = path.join(box.dir, "subagents");
    const trees = ["aaaa0001", "bbbb0002"].map((tag) => path.join(subagents, `session-${tag}`));
    for (const treeDir of trees) {
      const tag = path.basename(treeDir).slice("session-".length);
      fs.mkdirSync(path.join(treeDir, "agents", "done"), { recursive: true });
      fs.writeFileSync(path.join(treeDir, "tree.json"), JSON.stringify({ version: 1, rootSession: tag, tag }));
      const worktree: AgentWorktreeV1 = {
        path: path.join(treeDir, "worktrees", "done"),
        branch: `subagent/${tag}-done`,
        baseCommit: base,
        gitDir: path.join(repo, ".git"),
        subdir: "",
      };
      await createWorktree({
        topLevel: repo,
        worktreePath: worktree.path,
        branch: worktree.branch,
        base,
        env: box.env,
      });
      const record = agentRecord({ path: "/root/done", status: "completed", spawnSeq: 1, worktree });
      fs.writeFileSync(path.join(treeDir, "agents", "done", "agent.json"), JSON.stringify(record));
    }
    const listed = await clean(box, subagents);
    expect(listed.stderr).toBe("");
    expect(listed.code).toBe(0);
    for (const treeDir of trees) {
      expect(listed.stdout).toContain(
        `tree ${treeDir}:\nto remove:\n  worktree ${treeDir}/worktrees/done (/root/done)\n`,
      );
    }
    const removed = await runProcess(process.execPath, [WRAPPER_BIN, "clean", "--repo", "--yes"], {
      timeoutMs: 30_000,
      env: box.env,
      cwd: repo,
    });
    expect(removed.stderr).toBe("");
    expect(removed.code).toBe(0);
    expect(branches(box, repo)).toEqual(["main"]);
    expect(sh(box, repo, ["worktree", "list", "--porcelain"])).not.toContain("worktrees/done");
    const none = await runProcess(process.execPath, [WRAPPER_BIN, "clean", "--repo"], {
      timeoutMs: 30_000,
      env: box.env,
      cwd: repo,
    });
    expect(none.code).toBe(2);
    expect(none.stderr).toBe(`subagent-wrapper clean: no tree holds a worktree of the repository at ${repo}\n`);
  });
});
