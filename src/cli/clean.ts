/**
 * `subagent-wrapper clean <tree dir> [--yes] [--branch <name>]…`: lists, then with --yes
 * removes, the worktrees of a tree's agents that ended and their `subagent/*` branches with no
 * commit beyond their base. A branch with the child's commits stays unless it is named (its
 * name or its agent's path). The decision and the removal are lib/worktree-clean.ts's, which
 * `/agents clean` uses too; this file reads the records and talks to the terminal.
 */
import path from "node:path";
import { TREE_FILES } from "../contracts/layout.js";
import { isRecord } from "../lib/values.js";
import {
  type CleanRecord,
  type CleanSubject,
  carryOutClean,
  cleanFacts,
  cleanSubjects,
  planClean,
  planLines,
  resultLines,
  unknownNames,
} from "../lib/worktree-clean.js";
import { agentRecordFiles } from "./tree-records.js";
import { assertTreeDir, isolatedRecords, NoTreeError } from "./worktree-check.js";

export interface CleanFlags {
  yes?: boolean;
  /** Branches (or agents' paths) whose branch goes even with commits beyond its base. */
  branch?: string[];
}

/**
 * The tree's isolated agents as clean sees them, from every record below agents/ (read
 * tolerantly, in spawn order). The root's process leaves no status here: clean a tree once
 * its session is over, or use `/agents clean` inside it.
 */
export function treeCleanSubjects(treeDir: string): CleanSubject[] {
  // The isolated ones in spawn order, then every other record for its status (a parent's counts).
  // Each agent's folder: a runner agent's kept workspace there goes with its worktree.
  const folders = new Map(agentRecordFiles(treeDir).map(({ value, dir }) => [isRecord(value) ? value.path : "", dir]));
  const kept = (agent: string) => {
    const folder = folders.get(agent);
    return folder === undefined ? {} : { keptWorkspace: path.join(folder, TREE_FILES.runnerWorkspace) };
  };
  const records: CleanRecord[] = isolatedRecords(treeDir).map(({ agent, status, worktree }) => ({
    path: agent,
    status,
    ...kept(agent),
    worktree: {
      path: worktree.path,
      branch: worktree.branch,
      baseCommit: worktree.baseCommit,
      gitDir: worktree.gitDir,
    },
  }));
  const seen = new Set(records.map((record) => record.path));
  for (const { value } of agentRecordFiles(treeDir))
    if (isRecord(value) && typeof value.path === "string" && !seen.has(value.path))
      records.push({ path: value.path, status: String(value.status) });
  return cleanSubjects(records);
}

/** 0 listed or cleaned, 1 something could not be removed, 2 no tree directory there or a name it does not hold. */
export async function cleanCommand(target: string, flags: CleanFlags): Promise<number> {
  const treeDir = path.resolve(target);
  try {
    assertTreeDir(treeDir);
  } catch (err) {
    if (!(err instanceof NoTreeError)) throw err;
    process.stderr.write(`subagent-wrapper clean: ${err.message}\n`);
    return 2;
  }
  const subjects = treeCleanSubjects(treeDir);
  const named = new Set(flags.branch ?? []);
  const unknown = unknownNames(subjects, named);
  if (unknown.length > 0) {
    process.stderr.write(`subagent-wrapper clean: no agent or branch ${unknown.join(", ")} in ${treeDir}\n`);
    return 2;
  }
  const plan = planClean(await cleanFacts(subjects), named);
  if (!flags.yes || plan.steps.length === 0) {
    const more = plan.steps.length > 0 ? ["run it again with --yes to remove them"] : [];
    process.stdout.write(`${[...planLines(plan), ...more].join("\n")}\n`);
    return 0;
  }
  const results = await carryOutClean(plan);
  const kept = planLines({ steps: [], kept: plan.kept }).slice(1);
  process.stdout.write(`${[...resultLines(results), ...kept].join("\n")}\n`);
  return results.some((result) => result.error !== undefined) ? 1 : 0;
}
