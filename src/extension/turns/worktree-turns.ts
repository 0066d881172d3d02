/**
 * The turns of an isolated agent (`isolation: "worktree"`): each runs in the agent's own
 * worktree, and what a turn changed is committed on the agent's branch when it ends, one
 * commit per turn, whatever the outcome. close_agent removes the worktree (the branch stays
 * when it holds commits); a missing worktree is recreated from its branch before a turn.
 *
 * `WorktreeOperations` is the runtime's seam for this (the real one runs git; unit tests of
 * the runtime may pass their own). Nothing here merges into the parent's tree: the notice's
 * `worktree` says how the parent can bring the work in.
 */
import fs from "node:fs";
import type { AgentRecordV1, AgentWorktreeV1, NoticeWorktree } from "../../contracts/tree.js";
import { serialized } from "../../lib/git.js";
import { errorText } from "../../lib/values.js";
import { branchCommit, commitTurn, ensureWorktree, isCheckedOut, removeWorktree, worktreeCwd, worktreeSummary } from "../isolation/index.js";

/**
 * The real operations run one at a time per worktree (a promise chain keyed by its folder),
 * so a follow-up's turn never starts while the previous turn's commit is still being made.
 */
export interface WorktreeOperations {
  /** The child's cwd for its next turn; its worktree is recreated from the branch when it went missing. */
  turnCwd(worktree: AgentWorktreeV1): Promise<string>;
  /**
   * Commits what is uncommitted in the worktree (no commit when nothing changed) and tells
   * the branch against its base. Never rejects: a failure is the result's `error`.
   */
  commit(worktree: AgentWorktreeV1, message: string): Promise<NoticeWorktree>;
  /** Removes the worktree (what is left uncommitted is committed first); the branch goes when it holds no commit. */
  remove(worktree: AgentWorktreeV1): Promise<void>;
}

/** The command that takes just the child's changes onto the parent's working tree. */
export function mergeHint(base: string, head: string): string {
  return `git diff ${base} ${head} | git apply --3way`;
}

/** The commit message of one turn: the agent, the turn's number and how it ended. */
export function turnCommitMessage(record: AgentRecordV1, how: string): string {
  return `${record.path} turn ${record.runs.length}: ${how}\n\nTask ${record.taskName} of ${record.nickname} (pi-subagent-tree).`;
}

async function summarize(worktree: AgentWorktreeV1, head: string, error?: string): Promise<NoticeWorktree> {
  const summary = await worktreeSummary({ worktreePath: worktree.gitDir, base: worktree.baseCommit, head }).catch(() => undefined);
  const changed = summary !== undefined && summary.changed_files.length > 0;
  return {
    path: worktree.path,
    branch: worktree.branch,
    base_commit: worktree.baseCommit,
    head_commit: head,
    changed_files: summary?.changed_files ?? [],
    ...(summary?.changed_files_total !== undefined && { changed_files_total: summary.changed_files_total }),
    insertions: summary?.insertions ?? 0,
    deletions: summary?.deletions ?? 0,
    ...(changed && { merge_hint: mergeHint(worktree.baseCommit, head) }),
    ...(error !== undefined && { error }),
  };
}

async function commitWorktree(worktree: AgentWorktreeV1, message: string): Promise<NoticeWorktree> {
  try {
    const { head } = await commitTurn({ worktreePath: worktree.path, message, exclude: worktree.setupPaths ?? [] });
    return await summarize(worktree, head);
  } catch (err) {
    // The work stays in the worktree (or on the branch): say so, with the branch as it is.
    const head = (await branchCommit(worktree.gitDir, worktree.branch).catch(() => undefined)) ?? worktree.baseCommit;
    return summarize(worktree, head, `the turn's changes could not be committed: ${errorText(err)}`);
  }
}

/** Isolated turns with git (the default). */
export const gitWorktrees: WorktreeOperations = {
  turnCwd: (worktree) =>
    serialized(`worktree:${worktree.path}`, async () => {
      // The usual case runs no git process: the worktree is there, checked out, with the cwd in it.
      const cwd = worktreeCwd(worktree.path, worktree.subdir);
      if ((await isCheckedOut(worktree.path)) && fs.existsSync(cwd)) return cwd;
      const ensured = await ensureWorktree({ topLevel: worktree.gitDir, worktreePath: worktree.path, branch: worktree.branch, subdir: worktree.subdir });
      return ensured.cwd;
    }),
  commit: (worktree, message) => serialized(`worktree:${worktree.path}`, () => commitWorktree(worktree, message)),
  remove: (worktree) =>
    serialized(`worktree:${worktree.path}`, async () => {
      if (fs.existsSync(worktree.path)) await commitWorktree(worktree, "uncommitted work found when the agent was closed");
      await removeWorktree({ topLevel: worktree.gitDir, worktreePath: worktree.path, branch: worktree.branch, base: worktree.baseCommit });
    }),
};

/**
 * The end of an isolated agent's turn: whatever the turn left in its worktree becomes one
 * commit on its branch, and the notice gets the branch's summary. Undefined without isolation.
 */
export async function finishWorktreeTurn(ops: WorktreeOperations, record: AgentRecordV1, how: string): Promise<NoticeWorktree | undefined> {
  if (!record.worktree) return undefined;
  return ops.commit(record.worktree, turnCommitMessage(record, how));
}

/** close_agent: the worktrees of a closed subtree go, deepest first; one that resists stays for `doctor --tree` to report. */
export async function removeWorktrees(ops: WorktreeOperations, records: readonly AgentRecordV1[]): Promise<void> {
  for (const record of [...records].sort((a, b) => b.spawnSeq - a.spawnSeq)) {
    if (record.worktree) await ops.remove(record.worktree).catch(() => undefined);
  }
}
