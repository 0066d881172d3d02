/**
 * The parent's git repository of a tree test, in the scenario's cwd (`h.home.cwd`), with git
 * run as the test's user: its HOME, no system config, a fixed identity.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { TreeHarness } from "./tree-harness.js";

/** git in `cwd` (default: the scenario's cwd), its output as text. */
export function treeGit(h: TreeHarness, args: string[], cwd: string = h.home.cwd): string {
  return execFileSync("git", ["-c", "user.name=Test", "-c", "user.email=test@example.com", ...args], {
    cwd,
    env: { ...process.env, HOME: h.home.home, GIT_CONFIG_NOSYSTEM: "1" },
    encoding: "utf8",
  });
}

/** The scenario's cwd as a repository on `main` with one commit of `a.txt`; returns its folder. */
export function committedRepository(h: TreeHarness): string {
  const repo = h.home.cwd;
  treeGit(h, ["init", "-q", "-b", "main"]);
  fs.writeFileSync(path.join(repo, "a.txt"), "a\n");
  treeGit(h, ["add", "-A"]);
  treeGit(h, ["commit", "-q", "-m", "initial"]);
  return repo;
}

/**
 * committedRepository, then uncommitted work: `a.txt` changed, and with `untracked` a new
 * `new.txt` git does not know yet.
 */
export function dirtyRepository(h: TreeHarness, opts: { untracked?: boolean } = {}): string {
  const repo = committedRepository(h);
  fs.writeFileSync(path.join(repo, "a.txt"), "a, uncommitted\n");
  if (opts.untracked) fs.writeFileSync(path.join(repo, "new.txt"), "new, untracked\n");
  return repo;
}
