/**
 * The command that brings an isolated agent's work into its parent's working tree, written
 * the same way wherever it is shown: in the notice the model gets (`worktree.merge_hint`), in
 * the person's notice line, in `/agents` and in `subagent-wrapper inspect`. It runs in the
 * parent's repository and takes just the changes between the two commits (see docs/isolation.md).
 */

import { isRecord } from "../lib/values.js";

/** The CLI subcommand: `subagent-wrapper bring <base_commit> <head_commit>`. */
export const BRING_SUBCOMMAND = "bring";

/** How a commit is shown to a person: its first 7 hex digits. */
export function shortCommit(sha: string): string {
  return sha.slice(0, 7);
}

/** One word for a POSIX shell: as it is when it holds nothing the shell reads, else in single quotes. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** `<program> bring <base> <head>`, pasteable into a shell; `program` is a path or a name on PATH. */
export function bringCommandLine(program: string, base: string, head: string): string {
  return `${shellWord(program)} ${BRING_SUBCOMMAND} ${base} ${head}`;
}

/** What a person is shown of an isolated agent's branch (the notice's worktree field, or the record's copy of it). */
export interface BranchFacts {
  base_commit: string;
  head_commit: string;
  changed_files: readonly string[];
  changed_files_total?: number | undefined;
}

/** How many file names a one-line summary lists before saying how many more there are. */
const FILES_LISTED = 3;

/** `5d1c2ab..a9e0f31, 4 files: a.ts, b.ts, c.ts +1 more` (or `…, no change`). */
export function branchFactsText(facts: BranchFacts): string {
  const range = `${shortCommit(facts.base_commit)}..${shortCommit(facts.head_commit)}`;
  const total = facts.changed_files_total ?? facts.changed_files.length;
  if (total === 0) return `${range}, no change`;
  const listed = facts.changed_files.slice(0, FILES_LISTED);
  const more = total > listed.length ? ` +${total - listed.length} more` : "";
  return `${range}, ${total} file${total === 1 ? "" : "s"}: ${listed.join(", ")}${more}`;
}

const isSha = (value: unknown): value is string =>
  typeof value === "string" && /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(value);

/**
 * The facts of an agent record's `worktree` (its base and the head its latest turn left),
 * read tolerantly: undefined before a turn has ended or when the record lacks them.
 */
export function recordBranchFacts(worktree: unknown): BranchFacts | undefined {
  if (!isRecord(worktree) || !isSha(worktree.baseCommit) || !isRecord(worktree.head)) return undefined;
  const head = worktree.head;
  if (!isSha(head.commit) || !Array.isArray(head.changedFiles)) return undefined;
  const files = head.changedFiles.filter((file): file is string => typeof file === "string");
  return {
    base_commit: worktree.baseCommit,
    head_commit: head.commit,
    changed_files: files,
    ...(typeof head.changedFilesTotal === "number" && { changed_files_total: head.changedFilesTotal }),
  };
}
