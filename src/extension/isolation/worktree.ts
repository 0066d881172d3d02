/**
 * The worktree of an isolated agent: create it from a base commit on a new branch, so the
 * child's edits never mix with its parent's or a sibling's; find it again on restore (the
 * root started again on its session: an agent not closed keeps its worktree, recreated from
 * its branch when the folder went missing); and remove it on close (docs/isolation.md) —
 * removal lives in lib/worktree-removal.ts, because the CLI's `clean` removes them too.
 *
 * Commands that change the repository's shared state (`worktree add/remove/prune`, branch
 * creation and deletion) run one at a time per repository inside this process and are
 * retried while another process holds one of git's locks (git.ts), so several spawns or
 * closes at once in one repository all succeed.
 */
import fs from "node:fs";
import path from "node:path";
import {
  commonGitDir,
  type GitCallOptions,
  git,
  type LockOptions,
  retryOnLock,
  runGit,
  stripNewline,
} from "../../lib/git.js";
import { branchCommit } from "../../lib/git-worktrees.js";
import { serialized } from "../../lib/serialized.js";
import { exists, findEntry, isLinkedWorktreeOf } from "../../lib/worktree-removal.js";
import { worktreeCwd } from "./names.js";
import { ownGitDir, stagedCheckout, startupEntries } from "./staged-checkout.js";

export { type RemoveWorktreeOptions, removeWorktree } from "../../lib/worktree-removal.js";

async function prepareCwd(worktreePath: string, subdir: string | undefined): Promise<string> {
  const cwd = worktreeCwd(worktreePath, subdir ?? "");
  // The parent's cwd may hold nothing git tracks (empty, or only ignored files).
  await fs.promises.mkdir(cwd, { recursive: true });
  return cwd;
}

export interface CreateWorktreeOptions extends LockOptions {
  /** Any working tree of the repository (the parent's `topLevel`). */
  topLevel: string;
  /** Where the new worktree goes; must not exist yet (or be an empty folder). Parents are created. */
  worktreePath: string;
  /** The new branch; must not exist yet. */
  branch: string;
  /** The commit to start from (usually `snapshotWorkingState`'s). */
  base: string;
  /** `base` is the full id of a commit of this repository (the caller just made or read it): git is not asked again. */
  baseIsCommit?: boolean;
  /** The repository's common git dir, when the caller knows it (`commonGitDir`). */
  commonDir?: string;
  /** The parent's cwd below its top (`Repository.subdir`); `cwd` is the same folder in the worktree. */
  subdir?: string;
  /**
   * Return once what pi reads before its first tool call is written (startupEntries) and
   * leave the rest to `Worktree.finishCheckout`, for the caller to run when it suits.
   */
  deferCheckout?: boolean;
}

export interface Worktree {
  path: string;
  branch: string;
  /** The full sha the branch starts at. */
  base: string;
  /** The child's cwd inside the worktree (created when git did not). */
  cwd: string;
  /**
   * With `deferCheckout`: writes the rest of the files (the worktree's index exists once it
   * resolves); rejects when the checkout failed. Undefined when createWorktree wrote them all.
   */
  finishCheckout?: () => Promise<void>;
}

/**
 * The files of a worktree made with `--no-checkout`, written by one `read-tree -u` with
 * parallel checkout (a worker per core). A plain `git worktree add` checks out with one
 * process and then stats every file again; on a slow file system (a container's overlay, a
 * loaded machine) this is 2–4× faster at 10 000 files (docs/isolation.md, "What it costs").
 * Runs outside the per-repository lock: it touches only the new worktree's own index.
 */
async function checkOut(worktreePath: string, commit: string, options: GitCallOptions): Promise<void> {
  await git(["-c", "checkout.workers=0", "read-tree", "-u", "--reset", commit], { ...options, cwd: worktreePath });
}

/** A file of the worktree's own git dir (`index`, …), as an absolute path. */
async function gitPath(worktreePath: string, name: string, options: GitCallOptions): Promise<string> {
  const out = await git(["rev-parse", "--git-path", name], { ...options, cwd: worktreePath });
  return path.resolve(worktreePath, stripNewline(out));
}

/** The full id of `options.base`, a commit of the repository; throws when it is none. */
async function commitOf(options: CreateWorktreeOptions, worktreePath: string): Promise<string> {
  if (options.baseIsCommit && /^[0-9a-f]{40,64}$/.test(options.base)) return options.base;
  const baseArgs = ["rev-parse", "--verify", "--quiet", `${options.base}^{commit}`];
  // a base like "-x" fails below either way
  const result = await runGit(baseArgs, { ...options, cwd: options.topLevel });
  if (options.base.startsWith("-") || result.code !== 0)
    throw new Error(`cannot create worktree ${worktreePath}: ${options.base} is not a commit of ${options.topLevel}`);
  return result.stdout.toString("utf8").trim();
}

/** `git worktree add -b <branch> <path> <base>`: a new worktree on a new branch (submodules not checked out). */
export async function createWorktree(options: CreateWorktreeOptions): Promise<Worktree> {
  const { topLevel, branch } = options;
  const worktreePath = path.resolve(options.worktreePath);
  const cwd = topLevel;
  const [base, key] = await Promise.all([
    commitOf(options, worktreePath),
    options.commonDir ?? commonGitDir(cwd, options),
  ]);
  const subdir = options.subdir ?? "";
  // What to write first, asked of the commit while the worktree is being made.
  const early = options.deferCheckout ? startupEntries(topLevel, base, subdir, options) : undefined;
  early?.catch(() => undefined); // awaited below, once the worktree exists
  await serialized(key, async () => {
    if ((await branchCommit(cwd, branch, options)) !== undefined)
      throw new Error(`cannot create worktree ${worktreePath}: branch ${branch} already exists`);
    await retryOnLock(
      async (attempt) => {
        // A failed attempt may have created the branch before it failed on the worktree.
        const reuse = attempt > 0 && (await branchCommit(cwd, branch, options)) === base;
        if (reuse && (await findEntry(cwd, worktreePath, options))?.branch === branch) return;
        const args = reuse
          ? ["worktree", "add", "--quiet", "--no-checkout", "--", worktreePath, branch]
          : ["worktree", "add", "--quiet", "--no-checkout", "-b", branch, "--", worktreePath, base];
        await git(args, { ...options, cwd });
      },
      options.lockWaitMs,
      options.clock,
    );
  });
  const rest = early ? await stagedCheckout(worktreePath, base, subdir, await early, options) : undefined;
  if (rest)
    return { path: worktreePath, branch, base, cwd: await prepareCwd(worktreePath, subdir), finishCheckout: rest };
  await checkOut(worktreePath, base, options);
  return { path: worktreePath, branch, base, cwd: await prepareCwd(worktreePath, subdir) };
}

/**
 * Without running git: whether `worktreePath` is a linked worktree whose checkout finished
 * (its `.git` file leads to a git dir that holds an index). The fast path before each turn;
 * anything else goes through ensureWorktree.
 */
export async function isCheckedOut(worktreePath: string): Promise<boolean> {
  const gitDir = await ownGitDir(worktreePath);
  return gitDir !== undefined && exists(path.join(gitDir, "index"));
}

export interface EnsureWorktreeOptions extends LockOptions {
  topLevel: string;
  worktreePath: string;
  branch: string;
  subdir?: string;
}

/**
 * Restore: the worktree at `worktreePath` is there afterwards. Nothing happens when git
 * lists it and its folder exists; a folder git lost track of (the repository moved) is
 * repaired; a missing folder is recreated from `branch` (after `git worktree prune` drops
 * its stale registration). Throws when the folder is missing and the branch is gone too.
 */
export async function ensureWorktree(options: EnsureWorktreeOptions): Promise<{ created: boolean; cwd: string }> {
  const { topLevel, branch } = options;
  const worktreePath = path.resolve(options.worktreePath);
  const cwd = topLevel;
  const key = await commonGitDir(cwd, options);
  const created = await serialized(key, async () => {
    // Intact: git lists it, and its .git file leads back to this repository.
    const intact = async (): Promise<boolean> =>
      (await isLinkedWorktreeOf(worktreePath, key)) && (await findEntry(cwd, worktreePath, options)) !== undefined;
    if (await exists(worktreePath)) {
      if (await intact()) return false;
      if (await exists(path.join(worktreePath, ".git"))) {
        await runGit(["worktree", "repair", "--", worktreePath], { ...options, cwd });
        if (await intact()) return false;
      }
    }
    await retryOnLock(() => git(["worktree", "prune"], { ...options, cwd }), options.lockWaitMs, options.clock);
    if ((await branchCommit(cwd, branch, options)) === undefined) {
      throw new Error(`cannot recreate worktree ${worktreePath}: branch ${branch} does not exist`);
    }
    await retryOnLock(
      () => git(["worktree", "add", "--quiet", "--no-checkout", "--", worktreePath, branch], { ...options, cwd }),
      options.lockWaitMs,
      options.clock,
    );
    return true;
  });
  // Made just now, or made by a process that stopped before its checkout wrote the index.
  if (created || !(await exists(await gitPath(worktreePath, "index", options)))) {
    try {
      // A checkout of a parent that stopped may still be finishing (it holds index.lock).
      await retryOnLock(
        () => checkOut(worktreePath, `refs/heads/${branch}`, options),
        options.lockWaitMs,
        options.clock,
      );
    } catch (error) {
      if (created) await runGit(["worktree", "remove", "--force", "--force", "--", worktreePath], { ...options, cwd });
      throw error;
    }
  }
  return { created, cwd: await prepareCwd(worktreePath, options.subdir) };
}
