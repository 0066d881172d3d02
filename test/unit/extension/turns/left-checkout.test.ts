/**
 * finishLeftCheckout (re-attach): a running turn whose checkout a dead root left
 * half-written gets it finished by the restarted root, which writes the ready file the turn's
 * child (or runner wrapper) waits for; a checkout already said ready, or a run that waits for
 * none, is left alone. Real git in a temp folder.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AgentWorktreeV1 } from "../../../../src/contracts/tree.js";
import { checkoutReadyPath, finishLeftCheckout } from "../../../../src/extension/turns/worktree-turns.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, encoding: "utf8" }).trim();

/** A repository, a tree folder with a worktree added without its checkout (as a root killed mid-checkout leaves it), and a run. */
function leftCheckout(metaReady: boolean) {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "psa-left-checkout-")));
  dirs.push(dir);
  const repo = path.join(dir, "repo");
  fs.mkdirSync(repo);
  git(repo, "init", "-q", "-b", "main");
  fs.writeFileSync(path.join(repo, "a.txt"), "a\n");
  git(repo, "add", "-A");
  git(repo, "commit", "-q", "-m", "initial");
  const base = git(repo, "rev-parse", "HEAD");
  const worktreePath = path.join(dir, "tree", "worktrees", "far");
  git(repo, "worktree", "add", "--quiet", "--no-checkout", "-b", "subagent/t-far", worktreePath, base);
  const worktree: AgentWorktreeV1 = {
    path: worktreePath,
    branch: "subagent/t-far",
    baseCommit: base,
    gitDir: path.join(repo, ".git"),
    subdir: "",
  };
  const ready = checkoutReadyPath(worktree);
  fs.mkdirSync(path.dirname(ready), { recursive: true });
  const runDir = path.join(dir, "run");
  fs.mkdirSync(runDir);
  fs.writeFileSync(path.join(runDir, "meta.json"), JSON.stringify(metaReady ? { cwdReadyPath: ready } : {}));
  return { worktree, ready, runDir };
}

describe("finishLeftCheckout", () => {
  it("a checkout left without its index: written, and the ready file says ready", async () => {
    const { worktree, ready, runDir } = leftCheckout(true);
    expect(fs.existsSync(path.join(worktree.path, "a.txt"))).toBe(false);
    await finishLeftCheckout(worktree, runDir);
    expect(fs.readFileSync(ready, "utf8")).toBe("ready\n");
    expect(fs.readFileSync(path.join(worktree.path, "a.txt"), "utf8")).toBe("a\n");
    expect(git(worktree.path, "status", "--porcelain")).toBe("");
  });

  it("a ready file already there, or a run that waits for none: nothing is done", async () => {
    const said = leftCheckout(true);
    fs.writeFileSync(said.ready, "ready\n");
    await finishLeftCheckout(said.worktree, said.runDir);
    expect(fs.existsSync(path.join(said.worktree.path, "a.txt"))).toBe(false);

    const none = leftCheckout(false);
    await finishLeftCheckout(none.worktree, none.runDir);
    expect(fs.existsSync(none.ready)).toBe(false);
    expect(fs.existsSync(path.join(none.worktree.path, "a.txt"))).toBe(false);
  });
});
