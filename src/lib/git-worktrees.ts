/**
 * Read-only questions about a repository's worktrees and branches, shared by the extension
 * (isolated children) and the CLI (`doctor --tree` lists a tree's worktrees).
 */
import { failure, type GitCallOptions, git, runGit } from "./git.js";

export interface WorktreeEntry {
  path: string;
  /** Absent for a bare repository's entry. */
  head?: string;
  /** Short name (`subagent/7f3a9c2e-lead`); absent when detached or bare. */
  branch?: string;
  bare?: boolean;
  detached?: boolean;
  locked?: boolean;
  /** Its folder is gone; `git worktree prune` would drop it. */
  prunable?: boolean;
}

/** Every worktree of the repository that holds `topLevel`, the main one first. */
export async function listWorktrees(topLevel: string, options: GitCallOptions = {}): Promise<WorktreeEntry[]> {
  const cwd = topLevel;
  const args = ["worktree", "list", "--porcelain", "-z"];
  const result = await runGit(args, { ...options, cwd });
  if (result.code === 0) return parseWorktreeList(result.stdout.toString("utf8"), "\0");
  if (!/unknown switch/i.test(result.stderr)) throw failure(args, result);
  // git < 2.36 has no -z: lines then (a path with a newline would be misread).
  return parseWorktreeList(await git(["worktree", "list", "--porcelain"], { ...options, cwd }), "\n");
}

/** `git worktree list --porcelain` records: attribute lines, an empty one after each record. */
export function parseWorktreeList(text: string, separator: "\0" | "\n"): WorktreeEntry[] {
  const entries: WorktreeEntry[] = [];
  let current: WorktreeEntry | undefined;
  for (const field of text.split(separator)) {
    if (field === "") {
      current = undefined;
      continue;
    }
    const space = field.indexOf(" ");
    const key = space === -1 ? field : field.slice(0, space);
    const value = space === -1 ? "" : field.slice(space + 1);
    if (key === "worktree") {
      current = { path: value };
      entries.push(current);
    } else if (current) {
      applyAttribute(current, key, value);
    }
  }
  return entries;
}

/** The flags a record may carry, each a line of its own with no value. */
const FLAGS = ["bare", "detached", "locked", "prunable"] as const;

/** One attribute line of a record; attributes this parser does not know are left out. */
function applyAttribute(entry: WorktreeEntry, key: string, value: string): void {
  if (key === "HEAD") entry.head = value;
  else if (key === "branch") entry.branch = value.replace(/^refs\/heads\//, "");
  else if ((FLAGS as readonly string[]).includes(key)) entry[key as (typeof FLAGS)[number]] = true;
}

/** The commit `branch` points at, or undefined when there is no such branch. */
export async function branchCommit(
  cwd: string,
  branch: string,
  options: GitCallOptions = {},
): Promise<string | undefined> {
  const args = ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}^{commit}`];
  const result = await runGit(args, { ...options, cwd });
  if (result.code === 0) return result.stdout.toString("utf8").trim();
  if (result.code === 1) return undefined;
  throw failure(args, result);
}
