/**
 * The end of an isolated child's turn: everything it changed is committed on its branch, one
 * commit per turn, so the parent can bring the work in with plain git whenever it wants, and
 * the notice gets a short summary of the branch against its base (docs/isolation.md).
 *
 * The commit is made with plumbing (`add -A`, `write-tree`, `commit-tree`, `update-ref`
 * with the old value as a guard) rather than `git commit`: no hook of any kind (`--no-verify`
 * still runs prepare-commit-msg and post-commit), no signing, no commit template, editor or
 * auto-gc, and "nothing changed" is a comparison of trees rather than a parsed exit code. A
 * turn that changed nothing makes no commit (no `--allow-empty`). Commits the child made
 * itself during the turn stay as they are; only what is left uncommitted is added.
 */
import { allExcept, git, identityEnv, type LockOptions, retryOnLock } from "../../lib/git.js";
import { headCommit } from "./repository.js";

export interface CommitTurnOptions extends LockOptions {
  worktreePath: string;
  message: string;
  /** Untracked paths (relative to the top) never committed: what the setup command created. */
  exclude?: readonly string[];
}

export interface TurnCommit {
  /** The worktree's HEAD afterwards: the new commit, or the unchanged HEAD. */
  head: string;
  committed: boolean;
}

/** Stages everything in the worktree and commits it on its current branch; no commit when nothing changed. */
export async function commitTurn(options: CommitTurnOptions): Promise<TurnCommit> {
  const cwd = options.worktreePath;
  const call = { ...options, cwd };
  // The worktree's own index: a stale index.lock left by a killed child is waited out, then reported.
  await retryOnLock(
    () => git(["-c", "advice.addEmbeddedRepo=false", "add", "--all", ...allExcept(options.exclude ?? [])], call),
    options.lockWaitMs,
    options.clock,
  );
  const tree = (await git(["write-tree"], call)).trim();
  const head = await headCommit(cwd, options);
  if (head && (await git(["rev-parse", `${head}^{tree}`], call)).trim() === tree) return { head, committed: false };
  const identity = await identityEnv(cwd, options);
  const commit = (
    await git(["commit-tree", "--no-gpg-sign", ...(head ? ["-p", head] : []), "-m", options.message, tree], {
      ...call,
      extraEnv: identity,
    })
  ).trim();
  const subject = options.message.split("\n", 1)[0] ?? "";
  // The old value makes this a compare-and-swap: a HEAD that moved meanwhile is an error, not lost work.
  await retryOnLock(
    () => git(["update-ref", "-m", `commit: ${subject}`, "HEAD", commit, head ?? ""], call),
    options.lockWaitMs,
    options.clock,
  );
  return { head: commit, committed: true };
}

export interface SummaryOptions extends LockOptions {
  worktreePath: string;
  base: string;
  head: string;
  /** changed_files holds at most this many paths (default 50). */
  maxFiles?: number;
}

export interface WorktreeSummary {
  /** Paths changed between base and head, sorted, at most maxFiles. A rename counts as its two paths. */
  changed_files: string[];
  /** How many paths changed, only when more than maxFiles did. */
  changed_files_total?: number;
  insertions: number;
  deletions: number;
}

/** `git diff --numstat -z base head`, summed; a binary file is a changed file with 0/0 lines. */
export async function worktreeSummary(options: SummaryOptions): Promise<WorktreeSummary> {
  const maxFiles = options.maxFiles ?? 50;
  const args = [
    "diff",
    "--numstat",
    "-z",
    "--no-renames",
    "--no-ext-diff",
    "--no-textconv",
    options.base,
    options.head,
    "--",
  ];
  const summary = parseNumstat(await git(args, { ...options, cwd: options.worktreePath }));
  const files = summary.files.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    changed_files: files.slice(0, maxFiles),
    ...(files.length > maxFiles ? { changed_files_total: files.length } : {}),
    insertions: summary.insertions,
    deletions: summary.deletions,
  };
}

/** Records `<added>\t<deleted>\t<path>\0` (`-` for both counts of a binary file). */
export function parseNumstat(text: string): { files: string[]; insertions: number; deletions: number } {
  const files: string[] = [];
  let insertions = 0;
  let deletions = 0;
  for (const record of text.split("\0")) {
    const first = record.indexOf("\t");
    const second = first === -1 ? -1 : record.indexOf("\t", first + 1);
    if (second === -1) continue;
    const added = Number(record.slice(0, first));
    const deleted = Number(record.slice(first + 1, second));
    if (Number.isFinite(added)) insertions += added;
    if (Number.isFinite(deleted)) deletions += deleted;
    files.push(record.slice(second + 1));
  }
  return { files, insertions, deletions };
}
