/**
 * `subagent-wrapper doctor --tree <tree dir>`: the git worktrees of a tree's isolated agents,
 * and which are stale — a folder gone or unknown to git for an agent that may still work, a
 * branch gone, a shut-down agent's worktree still there, a folder in `worktrees/` no agent
 * owns. Reads the records and asks git (read-only: nothing is repaired or removed here).
 */
import fs from "node:fs";
import path from "node:path";
import { TREE_FILES } from "../contracts/layout.js";
import type { AgentWorktreeV1 } from "../contracts/tree.js";
import { runGit } from "../lib/git.js";
import { branchCommit, listWorktrees } from "../lib/git-worktrees.js";
import { errorText, isRecord } from "../lib/values.js";
import { agentRecordFiles } from "./tree-records.js";
import { type WorktreeFacts, worktreeChecks } from "./worktree-format.js";

export class NoTreeError extends Error {}

/** Records that name a worktree, in spawn order, read tolerantly (a half-written or foreign file is skipped). */
export function isolatedRecords(treeDir: string): Array<{ agent: string; status: string; worktree: AgentWorktreeV1 }> {
  const found: Array<{ agent: string; status: string; worktree: AgentWorktreeV1; seq: number }> = [];
  for (const { value: record } of agentRecordFiles(treeDir)) {
    const worktree = isRecord(record) ? record.worktree : undefined;
    if (
      isRecord(record) &&
      isRecord(worktree) &&
      typeof worktree.path === "string" &&
      typeof worktree.gitDir === "string"
    ) {
      const seq = typeof record.spawnSeq === "number" ? record.spawnSeq : Number.MAX_SAFE_INTEGER;
      found.push({
        agent: String(record.path),
        status: String(record.status),
        worktree: worktree as unknown as AgentWorktreeV1,
        seq,
      });
    }
  }
  return found.sort((a, b) => a.seq - b.seq);
}

const real = (p: string): string => {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
};

/** Throws NoTreeError when `treeDir` holds neither tree.json nor agents/. */
export function assertTreeDir(treeDir: string): void {
  if (!fs.existsSync(path.join(treeDir, TREE_FILES.marker)) && !fs.existsSync(path.join(treeDir, TREE_FILES.agents))) {
    throw new NoTreeError(`${treeDir} is not a tree directory (no ${TREE_FILES.marker}, no ${TREE_FILES.agents}/)`);
  }
}

/** What git and the disk say about each isolated agent's worktree, and the folders no agent owns. */
export async function worktreeFacts(treeDir: string): Promise<{ facts: WorktreeFacts[]; orphans: string[] }> {
  assertTreeDir(treeDir);
  const records = isolatedRecords(treeDir);
  const listed = new Map<string, Promise<Set<string> | string>>();
  const worktreesOf = (gitDir: string): Promise<Set<string> | string> => {
    let entry = listed.get(gitDir);
    if (!entry) {
      entry = listWorktrees(gitDir).then(
        (list) => new Set(list.map((worktree) => real(worktree.path))),
        (err: unknown) => errorText(err),
      );
      listed.set(gitDir, entry);
    }
    return entry;
  };
  const facts: WorktreeFacts[] = [];
  for (const { agent, status, worktree } of records) {
    const known = await worktreesOf(worktree.gitDir);
    let branchExists: boolean | undefined;
    let commits: number | undefined;
    let gitError = typeof known === "string" ? known : undefined;
    try {
      const tip = await branchCommit(worktree.gitDir, worktree.branch);
      branchExists = tip !== undefined;
      if (tip !== undefined) {
        const count = await runGit(["rev-list", "--count", `${worktree.baseCommit}..${tip}`], { cwd: worktree.gitDir });
        if (count.code === 0) commits = Number(count.stdout.toString("utf8").trim());
      }
    } catch (err) {
      gitError ??= errorText(err);
    }
    facts.push({
      agent,
      status,
      path: worktree.path,
      branch: worktree.branch,
      folderExists: fs.existsSync(worktree.path),
      ...(typeof known !== "string" && { knownToGit: known.has(real(worktree.path)) }),
      ...(branchExists !== undefined && { branchExists }),
      ...(commits !== undefined && { commits }),
      ...(gitError !== undefined && { gitError }),
    });
  }
  const owned = new Set(records.map(({ worktree }) => real(worktree.path)));
  const folder = path.join(treeDir, TREE_FILES.worktrees);
  const orphans = (fs.existsSync(folder) ? fs.readdirSync(folder) : [])
    .map((name) => path.join(folder, name))
    .filter((p) => !owned.has(real(p)));
  return { facts, orphans };
}

export async function treeWorktreeChecks(treeDir: string) {
  const { facts, orphans } = await worktreeFacts(path.resolve(treeDir));
  return worktreeChecks(facts, orphans);
}
