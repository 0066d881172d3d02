/**
 * Removing an isolated agent's git worktree, shared by the extension (close_agent, a failed
 * spawn's undo, restore) and the CLI's `clean`: the worktree goes, then its branch when it
 * holds no commits beyond its base, so a branch with the child's work stays.
 *
 * A folder is only ever deleted by hand when git lists it as a worktree of this repository
 * or its `.git` file points into this repository's `worktrees/` folder: a wrong path can
 * never make removeWorktree delete someone's directory. Commands that change the repository
 * run one at a time per repository in this process and are retried while another process
 * holds one of git's locks (git.ts).
 */
import fs from "node:fs";
import path from "node:path";
import { commonGitDir, type GitCallOptions, git, type LockOptions, retryOnLock, runGit } from "./git.js";
import { branchCommit, listWorktrees, type WorktreeEntry } from "./git-worktrees.js";
import { serialized } from "./serialized.js";

/** `p` with symbolic links resolved as far as it exists, so paths compare as git stores them. */
export async function canonical(p: string): Promise<string> {
  const absolute = path.resolve(p);
  try {
    return await fs.promises.realpath(absolute);
  } catch {
    const parent = path.dirname(absolute);
    return parent === absolute ? absolute : path.join(await canonical(parent), path.basename(absolute));
  }
}

/** The worktree git lists at `worktreePath` (compared as real paths), if any. */
export async function findEntry(
  topLevel: string,
  worktreePath: string,
  options: GitCallOptions,
): Promise<WorktreeEntry | undefined> {
  const wanted = await canonical(worktreePath);
  for (const entry of await listWorktrees(topLevel, options))
    if ((await canonical(entry.path)) === wanted) return entry;
  return undefined;
}

/** Whether anything (a link included) is at `p`. */
export const exists = (p: string): Promise<boolean> =>
  fs.promises.lstat(p).then(
    () => true,
    () => false,
  );

/** True when `folder/.git` is a file pointing into `<commonDir>/worktrees/`. */
export async function isLinkedWorktreeOf(folder: string, commonDir: string): Promise<boolean> {
  const text = await fs.promises.readFile(path.join(folder, ".git"), "utf8").catch(() => "");
  const match = /^gitdir: (.+)$/m.exec(text);
  if (!match?.[1]) return false;
  const gitdir = await canonical(path.resolve(folder, match[1].trim()));
  return gitdir.startsWith(`${path.join(commonDir, "worktrees")}${path.sep}`);
}

export interface RemoveWorktreeOptions extends LockOptions {
  topLevel: string;
  worktreePath: string;
  branch: string;
  /** The branch is deleted only when it holds no commit that `base` does not. */
  base: string;
}

/**
 * Close: the worktree goes (`git worktree remove --force`, or, when git refuses, its folder
 * by hand and `git worktree prune`), then its branch when it holds no commits beyond `base`
 * (a branch with the child's work stays). `removed` / `branchDeleted` say what this call
 * did, so a second call returns both false.
 */
export async function removeWorktree(
  options: RemoveWorktreeOptions,
): Promise<{ removed: boolean; branchDeleted: boolean }> {
  const worktreePath = path.resolve(options.worktreePath);
  const cwd = options.topLevel;
  const call = { ...options, cwd };
  const key = await commonGitDir(cwd, options);
  return serialized(key, async () => {
    const target: Removal = { worktreePath, commonDir: key, call };
    const listed = (await findEntry(cwd, worktreePath, options)) !== undefined;
    let removed = listed && (await removeListed(target));
    if (!removed) removed = await removeOwnFolder(target);
    if (listed && !removed) {
      await runGit(["worktree", "unlock", "--", worktreePath], call); // a missing, locked one survives prune
    }
    await retryOnLock(() => git(["worktree", "prune"], call), options.lockWaitMs, options.clock);
    if (listed && !removed) removed = (await findEntry(cwd, worktreePath, options)) === undefined;
    const branchDeleted = await deleteBranchWithoutWork(options.branch, options.base, call);
    return { removed, branchDeleted };
  });
}

/** A worktree being removed: its folder, its repository's common git dir, and how git is called there. */
interface Removal {
  worktreePath: string;
  commonDir: string;
  call: LockOptions & { cwd: string };
}

/**
 * `git worktree remove` of a worktree git lists. When git refuses because the folder's `.git`
 * file leads elsewhere (the repository moved), the worktree is reconnected and removed once
 * more; false when git refused for another reason (the folder may already be gone).
 */
async function removeListed({ worktreePath, commonDir, call }: Removal): Promise<boolean> {
  // --force twice: also a worktree someone locked.
  const remove = () =>
    retryOnLock(
      () => git(["worktree", "remove", "--force", "--force", "--", worktreePath], call),
      call.lockWaitMs,
      call.clock,
    );
  try {
    await remove();
    return true;
  } catch (error) {
    if (!(await exists(worktreePath)) || (await isLinkedWorktreeOf(worktreePath, commonDir))) return false;
    await runGit(["worktree", "repair", "--", worktreePath], call);
    if (!(await isLinkedWorktreeOf(worktreePath, commonDir))) throw error;
    await remove();
    return true;
  }
}

/** The folder deleted by hand, only when its `.git` file proves it a worktree of this repository. */
async function removeOwnFolder({ worktreePath, commonDir }: Removal): Promise<boolean> {
  if (!(await exists(worktreePath)) || !(await isLinkedWorktreeOf(worktreePath, commonDir))) return false;
  await fs.promises.rm(worktreePath, { recursive: true, force: true });
  return true;
}

/** Deletes `branch` when it holds no commit beyond `base`: a branch with the child's work stays. */
async function deleteBranchWithoutWork(branch: string, base: string, call: Removal["call"]): Promise<boolean> {
  const tip = await branchCommit(call.cwd, branch, call);
  if (tip === undefined) return false;
  const count = await runGit(["rev-list", "--count", `${base}..${tip}`], call);
  if (count.code !== 0 || count.stdout.toString("utf8").trim() !== "0") return false;
  await retryOnLock(() => git(["branch", "--quiet", "-D", "--", branch], call), call.lockWaitMs, call.clock);
  return true;
}
