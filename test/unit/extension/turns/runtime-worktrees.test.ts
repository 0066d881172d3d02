/**
 * An isolated agent's turns through the runtime: fake turns (finished by hand) that write
 * into a real worktree of a real repository, so every commit, notice and removal is what git
 * really shows. The launcher seam is faked; the worktree operations are the real ones.
 */
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { cwdStartedPath } from "../../../../src/contracts/meta.js";
import type { Notice } from "../../../../src/contracts/notice.js";
import type { AgentRecordV1 } from "../../../../src/contracts/tree.js";
import { WRAPPER_BIN } from "../../../../src/extension/config.js";
import { createIsolatedWorktree, repositoryFor } from "../../../../src/extension/spawn/isolate.js";
import { restore } from "../../../../src/extension/turns/restore.js";
import type { ChildState } from "../../../../src/extension/turns/runtime.js";
import {
  checkoutReadyPath,
  gitWorktreeOperations,
  gitWorktrees,
  type WorktreeOperations,
} from "../../../../src/extension/turns/worktree-turns.js";
import { turnResult } from "../../../support/fake-turns.js";
import { cleanupRuntimes, type RuntimeHarness, runtimeHarness } from "../../../support/runtime-harness.js";
import { makeRepo, type Sandbox, sh, useSandbox, write } from "../isolation/support.js";

afterEach(cleanupRuntimes);
const sandbox = useSandbox();

/** A direct child of /root spawned with isolation in `repo/pkg` (its worktree made as spawn_agent makes it). */
async function isolatedChild(
  h: RuntimeHarness,
  box: Sandbox,
  name: string,
): Promise<{ state: ChildState; repo: string }> {
  const repo = path.join(box.dir, "repo");
  if (!fs.existsSync(repo)) {
    makeRepo(box, { "pkg/a.txt": "a\n" });
    write(path.join(repo, "pkg", "a.txt"), "a, dirty\n");
  }
  const made = await createIsolatedWorktree({
    repository: await repositoryFor(path.join(repo, "pkg")),
    treeDir: h.tree.root,
    agentPath: `/root/${name}`,
    treeTag: await h.tree.treeTag(),
  });
  return { state: await h.child(name, `task for ${name}`, { worktree: made.worktree }), repo };
}

const lastNotice = (h: RuntimeHarness): Notice => {
  const notices = h.runtime.mailbox.take(100);
  expect(notices.length).toBeGreaterThan(0);
  return notices.at(-1)!;
};

const commitsOn = (box: Sandbox, repo: string, record: AgentRecordV1): number =>
  Number(sh(box, repo, ["rev-list", "--count", `${record.worktree!.baseCommit}..${record.worktree!.branch}`]).trim());

async function followup(h: RuntimeHarness, state: ChildState, text: string): Promise<void> {
  await h.runtime.followup(state, text);
}

describe("an isolated agent's turns", () => {
  it("run in its worktree and end in one commit each, whatever the outcome; a turn that changed nothing makes none", async () => {
    const box = sandbox();
    const h = await runtimeHarness();
    const { state, repo } = await isolatedChild(h, box, "worker");
    const wt = state.record.worktree!;

    await h.runtime.requestTurn(state, "spawn");
    expect(h.turns.last.spec.cwd).toBe(path.join(wt.path, "pkg"));
    write(path.join(wt.path, "pkg", "one.txt"), "one\n");
    h.turns.last.finish(turnResult({ finalText: "wrote one" }));
    await state.settled;
    const first = lastNotice(h);
    expect(first).toMatchObject({ type: "completed", report: "wrote one" });
    expect(first.worktree).toMatchObject({
      path: wt.path,
      branch: wt.branch,
      base_commit: wt.baseCommit,
      changed_files: ["pkg/one.txt"],
      insertions: 1,
      deletions: 0,
    });
    // The package's own `bring` by its full path: it runs whether or not the CLI is on the PATH.
    expect(first.worktree!.merge_hint).toBe(`${WRAPPER_BIN} bring ${wt.baseCommit} ${first.worktree!.head_commit}`);
    expect(commitsOn(box, repo, state.record)).toBe(1);
    expect(sh(box, repo, ["log", "-1", "--format=%s", wt.branch]).trim()).toBe("/root/worker turn 1: completed");
    // The record keeps what the notice said of the branch, so /agents and inspect show it too.
    expect((await h.tree.readRecord(state.record.path))!.worktree!.head).toEqual({
      commit: first.worktree!.head_commit,
      changedFiles: ["pkg/one.txt"],
      insertions: 1,
      deletions: 0,
    });

    // A turn that fails still has its work committed.
    await followup(h, state, "again");
    fs.rmSync(path.join(wt.path, "pkg", "a.txt"));
    h.turns.last.finish(turnResult({ status: "failed", errorMessage: "provider down" }));
    await state.settled;
    const second = lastNotice(h);
    expect(second).toMatchObject({ type: "errored", outcome: "failed" });
    expect(second.worktree).toMatchObject({ changed_files: ["pkg/a.txt", "pkg/one.txt"], insertions: 1, deletions: 1 });
    expect(commitsOn(box, repo, state.record)).toBe(2);

    // Nothing changed: no commit, the same head.
    await followup(h, state, "look only");
    h.turns.last.finish(turnResult({ finalText: "nothing to do" }));
    await state.settled;
    expect(lastNotice(h).worktree!.head_commit).toBe(second.worktree!.head_commit);
    expect(commitsOn(box, repo, state.record)).toBe(2);

    // Interrupted: committed, and the interrupt's notice tells the branch after that commit.
    await followup(h, state, "write more");
    write(path.join(wt.path, "pkg", "half.txt"), "half done\n");
    await h.runtime.interrupt(state);
    const interrupted = lastNotice(h);
    expect(interrupted).toMatchObject({ type: "interrupted" });
    expect(interrupted.worktree!.changed_files).toEqual(["pkg/a.txt", "pkg/half.txt", "pkg/one.txt"]);
    expect(commitsOn(box, repo, state.record)).toBe(3);
    expect(sh(box, repo, ["log", "-1", "--format=%s", wt.branch]).trim()).toBe("/root/worker turn 4: interrupted");
  });

  it("a commit failure is said in the notice, which still comes", async () => {
    const box = sandbox();
    const h = await runtimeHarness();
    const { state } = await isolatedChild(h, box, "worker");
    await h.runtime.requestTurn(state, "spawn");
    // The worktree's index is damaged: git cannot commit there.
    const gitDir = sh(box, state.record.worktree!.path, ["rev-parse", "--absolute-git-dir"]).trim();
    fs.writeFileSync(path.join(gitDir, "index"), "not an index\n");
    write(path.join(state.record.worktree!.path, "x.txt"), "x\n");
    h.turns.last.finish(turnResult({ finalText: "done" }));
    await state.settled;
    const notice = lastNotice(h);
    expect(notice.type).toBe("completed");
    expect(notice.worktree!.error).toMatch(/^the turn's changes could not be committed: git .*add --all/);
    expect(notice.worktree!.head_commit).toBe(state.record.worktree!.baseCommit);
  });

  it("a turn that ends while its worktree has no index commits nothing (the branch never records the files as deleted); the next turn writes the checkout again", async () => {
    const box = sandbox();
    const h = await runtimeHarness();
    const { state, repo } = await isolatedChild(h, box, "worker");
    const wt = state.record.worktree!;
    await h.runtime.requestTurn(state, "spawn");
    const gitDir = sh(box, wt.path, ["rev-parse", "--absolute-git-dir"]).trim();
    fs.rmSync(path.join(gitDir, "index"));
    fs.rmSync(path.join(wt.path, "pkg", "a.txt"));
    h.turns.last.finish(turnResult({ finalText: "done" }));
    await state.settled;
    const notice = lastNotice(h);
    expect(notice.worktree!.error).toMatch(/^nothing was committed: the worktree has no index/);
    expect(notice.worktree!.head_commit).toBe(wt.baseCommit);
    expect(commitsOn(box, repo, state.record)).toBe(0);

    await followup(h, state, "go on");
    expect(fs.readFileSync(path.join(wt.path, "pkg", "a.txt"), "utf8")).toBe("a, dirty\n");
    expect(sh(box, wt.path, ["status", "--porcelain"])).toBe("");
  });

  it("close_agent commits what is left, removes the worktrees and runner workspaces, keeps a branch with commits and deletes one without", async () => {
    const box = sandbox();
    const h = await runtimeHarness();
    const { state: busy, repo } = await isolatedChild(h, box, "busy");
    const { state: idle } = await isolatedChild(h, box, "idle");
    write(path.join(busy.record.worktree!.path, "left.txt"), "left behind\n");
    // A runner's workspace kept between turns (meta.json runnerWorkspacePath) goes with the agent.
    const kept = path.join(h.tree.agentDir("/root/busy"), "runner-workspace");
    write(path.join(kept, "subagent-keep-1", "work", "f.txt"), "kept\n");

    await h.runtime.close(busy);
    await h.runtime.close(idle);
    expect(fs.existsSync(kept)).toBe(false);
    expect(fs.existsSync(busy.record.worktree!.path)).toBe(false);
    expect(fs.existsSync(idle.record.worktree!.path)).toBe(false);
    expect(sh(box, repo, ["worktree", "list", "--porcelain"]).match(/^worktree /gm)).toHaveLength(1);
    expect(sh(box, repo, ["branch", "--list", "--format=%(refname:short)"]).split("\n").filter(Boolean)).toEqual([
      "main",
      busy.record.worktree!.branch,
    ]);
    expect(sh(box, repo, ["show", `${busy.record.worktree!.branch}:left.txt`])).toBe("left behind\n");
    expect(busy.record.status).toBe("shutdown");
  });

  it("a follow-up recreates a worktree whose folder went missing, from its branch", async () => {
    const box = sandbox();
    const h = await runtimeHarness();
    const { state } = await isolatedChild(h, box, "worker");
    const wt = state.record.worktree!;
    await h.runtime.requestTurn(state, "spawn");
    write(path.join(wt.path, "pkg", "kept.txt"), "kept\n");
    h.turns.last.finish(turnResult({ finalText: "ok" }));
    await state.settled;
    fs.rmSync(wt.path, { recursive: true, force: true });

    await followup(h, state, "go on");
    expect(h.turns.last.spec.cwd).toBe(path.join(wt.path, "pkg"));
    expect(fs.readFileSync(path.join(wt.path, "pkg", "kept.txt"), "utf8")).toBe("kept\n");
  });

  it("restore recreates a missing worktree, commits what a turn that ended meanwhile left, and tells it in the notice", async () => {
    const box = sandbox();
    const h = await runtimeHarness();
    const { state, repo } = await isolatedChild(h, box, "worker");
    const wt = state.record.worktree!;
    const { state: gone } = await isolatedChild(h, box, "gone");
    await h.runtime.requestTurn(state, "spawn");
    write(path.join(wt.path, "pkg", "while_away.txt"), "written while the parent was away\n");
    // The parent process goes away mid-turn: the record says running; the wrapper wrote its result.
    h.turns.previousResults.set(
      path.join(h.tree.agentDir("/root/worker"), "runs", state.record.runs.at(-1)!),
      turnResult({ finalText: "finished alone" }),
    );
    fs.rmSync(gone.record.worktree!.path, { recursive: true, force: true });

    const restarted = h.restarted();
    await restore(restarted, []);
    const notice = restarted.mailbox.take(10).find((n) => n.agent_name === "/root/worker")!;
    expect(notice).toMatchObject({ type: "completed", report: "finished alone" });
    expect(notice.worktree).toMatchObject({ branch: wt.branch, changed_files: ["pkg/while_away.txt"] });
    expect(commitsOn(box, repo, state.record)).toBe(1);
    expect(fs.existsSync(path.join(gone.record.worktree!.path, "pkg", "a.txt"))).toBe(true);
  });

  it("restore removes the worktree of a closed agent whose close was cut short", async () => {
    const box = sandbox();
    const h = await runtimeHarness();
    const { state, repo } = await isolatedChild(h, box, "worker");
    state.record.status = "shutdown";
    await h.tree.writeRecord(state.record);
    await restore(h.restarted(), []);
    expect(fs.existsSync(state.record.worktree!.path)).toBe(false);
    expect(sh(box, repo, ["branch", "--list", "--format=%(refname:short)"]).trim()).toBe("main");
  });
});

describe("an isolated agent whose checkout is not finished yet (adopt)", () => {
  /** A child whose worktree exists; the rest of its checkout is a promise the test settles by hand. */
  async function pendingChild(h: RuntimeHarness, box: Sandbox, ops: WorktreeOperations = h.runtime.worktrees) {
    const { state } = await isolatedChild(h, box, "worker");
    let settle!: (error?: Error) => void;
    const finished = new Promise<void>((resolve, reject) => {
      settle = (error) => (error ? reject(error) : resolve());
    });
    let begun = 0;
    const adopted = ops.adopt(state.record.worktree!, () => {
      begun++;
      return finished;
    });
    const wt = state.record.worktree!;
    return { state, wt, settle, adopted, readyPath: checkoutReadyPath(wt), begun: () => begun };
  }

  it("its first turn starts at once with cwdReadyPath; the rest of the checkout begins when the child says it has started; the ready file says so, and goes when the turn ends", async () => {
    const box = sandbox();
    const h = await runtimeHarness();
    const { state, wt, settle, adopted, readyPath, begun } = await pendingChild(h, box);
    await h.runtime.requestTurn(state, "spawn");
    // In the tree's checkouts/ folder: worktrees/ holds worktrees only (doctor --tree lists what else is there).
    expect(h.turns.last.spec).toMatchObject({
      cwd: path.join(wt.path, "pkg"),
      cwdReadyPath: path.join(h.tree.root, "checkouts", "worker.ready"),
    });
    expect(fs.readdirSync(path.join(h.tree.root, "worktrees"))).toEqual(["worker"]);
    expect(begun()).toBe(0);
    fs.writeFileSync(cwdStartedPath(readyPath), ""); // what the task extension does at agent_start
    await vi.waitFor(() => expect(begun()).toBe(1));
    expect(fs.existsSync(readyPath)).toBe(false);
    settle();
    await adopted;
    expect(fs.readFileSync(readyPath, "utf8")).toBe("ready\n");

    write(path.join(wt.path, "pkg", "one.txt"), "one\n");
    h.turns.last.finish(turnResult({ finalText: "wrote one" }));
    await state.settled;
    expect(lastNotice(h).worktree).toMatchObject({ changed_files: ["pkg/one.txt"] });
    expect(fs.existsSync(readyPath)).toBe(false);
    expect(fs.existsSync(cwdStartedPath(readyPath))).toBe(false);
    // Later turns find the checkout done: no wait.
    await followup(h, state, "again");
    expect(h.turns.last.spec.cwdReadyPath).toBeUndefined();
  });

  it("begins without a word from the child once the start wait is over", async () => {
    const box = sandbox();
    const h = await runtimeHarness();
    const { settle, adopted, readyPath, begun } = await pendingChild(h, box, gitWorktreeOperations(30));
    await vi.waitFor(() => expect(begun()).toBe(1));
    settle();
    await adopted;
    expect(fs.readFileSync(readyPath, "utf8")).toBe("ready\n");
  });

  it("startCheckout (a first turn that waits in the queue) begins it at once", async () => {
    const box = sandbox();
    const h = await runtimeHarness();
    const { wt, settle, adopted, begun } = await pendingChild(h, box);
    h.runtime.worktrees.startCheckout(wt);
    await vi.waitFor(() => expect(begun()).toBe(1));
    settle();
    await adopted;
  });

  it("a checkout that fails is said in the file, for the waiting child to report", async () => {
    const box = sandbox();
    const h = await runtimeHarness();
    const { settle, adopted, readyPath, wt } = await pendingChild(h, box);
    gitWorktrees.commit(wt, "starts it now").catch(() => undefined);
    settle(new Error("git read-tree failed (exit 128): fatal: the disk is full"));
    await adopted;
    expect(fs.readFileSync(readyPath, "utf8")).toBe(
      "the worktree's checkout failed: git read-tree failed (exit 128): fatal: the disk is full\n",
    );
  });

  it("a turn's commit and close_agent's removal start a checkout not begun yet, and wait until it has ended", async () => {
    const box = sandbox();
    const h = await runtimeHarness();
    const { state, wt, settle, begun } = await pendingChild(h, box);
    const order: string[] = [];
    const commit = gitWorktrees.commit(wt, "turn 1").then(() => order.push("commit"));
    const removal = h.runtime.close(state).then(() => order.push("removed"));
    await vi.waitFor(() => expect(begun()).toBe(1));
    order.push("checkout ends");
    settle();
    await Promise.all([commit, removal]);
    expect(order).toEqual(["checkout ends", "commit", "removed"]);
    expect(fs.existsSync(wt.path)).toBe(false);
    expect(fs.existsSync(checkoutReadyPath(wt))).toBe(false);
  });
});

describe("gitWorktrees", () => {
  it("a turn's cwd is given only once the commit before it is made", async () => {
    const box = sandbox();
    const h = await runtimeHarness();
    const { state } = await isolatedChild(h, box, "worker");
    const wt = state.record.worktree!;
    for (let i = 0; i < 200; i++) write(path.join(wt.path, "pkg", `f${i}.txt`), `${i}\n`);
    const order: string[] = [];
    const commit = gitWorktrees.commit(wt, "turn 1").then(() => order.push("commit"));
    const cwd = gitWorktrees.turnCwd(wt).then(() => order.push("cwd"));
    await Promise.all([commit, cwd]);
    expect(order).toEqual(["commit", "cwd"]);
  });
});
