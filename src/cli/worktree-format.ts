/** Pure: which of a tree's worktrees are stale, and how `doctor --tree` says it. */
import type { DoctorCheck } from "./doctor-format.js";

/** What the disk and git say about one isolated agent's worktree. */
export interface WorktreeFacts {
  agent: string;
  /** The agent's status in its record. */
  status: string;
  path: string;
  branch: string;
  folderExists: boolean;
  /** Whether `git worktree list` shows the folder; absent when git could not be asked. */
  knownToGit?: boolean;
  /** Absent when git could not be asked. */
  branchExists?: boolean;
  /** Commits on the branch beyond the agent's base. */
  commits?: number;
  gitError?: string;
}

/** Why a worktree is stale (none: it is as it should be). */
export function worktreeProblems(facts: WorktreeFacts): Array<{ problem: string; hint: string }> {
  const problems: Array<{ problem: string; hint: string }> = [];
  if (facts.gitError !== undefined)
    problems.push({
      problem: `git could not be asked: ${facts.gitError}`,
      hint: "check that the repository is still there",
    });
  if (facts.status === "shutdown") {
    if (facts.folderExists) {
      problems.push({
        problem: "the agent is shut down but its worktree is still there",
        hint: `git worktree remove --force ${facts.path}`,
      });
    } else if (facts.knownToGit) {
      problems.push({
        problem: "the agent is shut down and its folder is gone, but git still lists the worktree",
        hint: "git worktree prune",
      });
    }
    return problems;
  }
  if (facts.branchExists === false) {
    problems.push({
      problem: `branch ${facts.branch} is gone`,
      hint: "its work cannot be recovered from the branch; close the agent",
    });
  }
  if (!facts.folderExists) {
    problems.push({
      problem: "the folder is missing",
      hint:
        facts.branchExists === false
          ? "close the agent"
          : "its next turn (or a restart of its parent) recreates it from the branch",
    });
  } else if (facts.knownToGit === false) {
    problems.push({
      problem: "git does not know this folder as a worktree",
      hint: `git worktree repair ${facts.path}`,
    });
  }
  return problems;
}

function branchNote(facts: WorktreeFacts): string | undefined {
  if (facts.branchExists === false)
    return facts.status === "shutdown" ? `branch ${facts.branch} deleted (it held no commits)` : undefined;
  if (facts.commits === undefined) return undefined;
  return `branch ${facts.branch} holds ${facts.commits} commit${facts.commits === 1 ? "" : "s"} beyond its base`;
}

/** One check per isolated agent, then one per folder in `worktrees/` that no agent owns. */
export function worktreeChecks(facts: readonly WorktreeFacts[], orphans: readonly string[]): DoctorCheck[] {
  const checks: DoctorCheck[] = facts.map((entry) => {
    const problems = worktreeProblems(entry);
    const note = branchNote(entry);
    const where = entry.status === "shutdown" && !entry.folderExists ? `${entry.path} (removed)` : entry.path;
    return {
      name: entry.agent,
      ok: problems.length === 0,
      detail: `${where} on ${entry.branch} (${entry.status})${problems.length > 0 ? ` — stale: ${problems.map((p) => p.problem).join("; ")}` : ""}`,
      ...(problems.length > 0 && { hint: problems.map((p) => p.hint).join("; ") }),
      ...(note !== undefined && { notes: [note] }),
    };
  });
  for (const orphan of orphans) {
    checks.push({
      name: "(no agent)",
      ok: false,
      detail: `${orphan} — stale: no agent of this tree owns it`,
      hint: `git worktree remove --force ${orphan}, or delete the folder`,
    });
  }
  if (checks.length === 0)
    checks.push({ name: "worktrees", ok: true, detail: "no agent of this tree runs in its own worktree" });
  return checks;
}
