/**
 * Git mechanics of `isolation: "worktree"` (docs/isolation.md), for spawn, turn end, close
 * and restore. The life of an isolated child:
 *
 *   const repo = await findRepository(parentCwd)            // undefined → spawn_agent's rule 13 refuses
 *   const base = await snapshotWorkingState(repo.topLevel)  // base_commit
 *   const wt = await createWorktree({ topLevel: repo.topLevel, worktreePath: worktreePathFor(treeDir, path),
 *                                     branch: branchName(tag, path), base, subdir: repo.subdir })
 *   await runSetupCommand({ command, cwd: wt.path, timeoutMs })   // when configured
 *   …turn runs in wt.cwd…
 *   const { head } = await commitTurn({ worktreePath: wt.path, message })
 *   const summary = await worktreeSummary({ worktreePath: wt.path, base, head })
 *   …close: await removeWorktree({ topLevel, worktreePath: wt.path, branch, base })
 *   …restore: await ensureWorktree({ topLevel, worktreePath, branch, subdir })
 *
 * Every function settles: each git call has a time limit (`timeoutMs`, default 60 s), and
 * each takes an optional `env` (default process.env) that git starts from.
 */
export {
  FALLBACK_IDENTITY,
  GIT_TIMEOUT_MS,
  type GitCallOptions,
  GitError,
  LOCK_WAIT_MS,
  type LockOptions,
} from "../../lib/git.js";
export { branchCommit, listWorktrees, type WorktreeEntry } from "../../lib/git-worktrees.js";
export { isTreeTag, treeTag } from "../tree/paths.js";
export { branchName, worktreeCwd, worktreeName, worktreePathFor } from "./names.js";
export {
  findRepository,
  headCommit,
  type Repository,
  type SnapshotOptions,
  snapshotWorkingState,
  untrackedPaths,
} from "./repository.js";
export { runSetupCommand, type SetupCommandOptions } from "./setup.js";
export { SNAPSHOT_REUSE_IDLE_MS, SnapshotReuse } from "./snapshot-reuse.js";
export {
  type CommitTurnOptions,
  commitTurn,
  type SummaryOptions,
  type TurnCommit,
  type WorktreeSummary,
  worktreeSummary,
} from "./turn.js";
export {
  type CreateWorktreeOptions,
  createWorktree,
  type EnsureWorktreeOptions,
  ensureWorktree,
  isCheckedOut,
  type RemoveWorktreeOptions,
  removeWorktree,
  type Worktree,
} from "./worktree.js";
