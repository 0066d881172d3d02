/**
 * `subagent-wrapper clean <tree dir | folder of trees> | --repo [<repository>]` `[--yes]
 * [--branch <name>]…`: lists, then with --yes removes, the worktrees of a tree's agents that ended and their `subagent/*` branches with no
 * commit beyond their base. A branch with the child's commits stays unless it is named (its
 * name or its agent's path). The decision and the removal are lib/worktree-clean.ts's, which
 * `/agents clean` uses too; this file reads the records and talks to the terminal.
 */
import fs from "node:fs";
import path from "node:path";
import { TREE_FILES } from "../contracts/layout.js";
import { listWorktrees } from "../lib/git-worktrees.js";
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
  /** Every tree of the repository (at the target, else the current folder). */
  repo?: boolean;
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

/** Where clean finds no tree: one line on stderr, exit 2. */
class NothingToCleanError extends Error {}

/** Whether `dir` is a tree directory. */
function isTreeDir(dir: string): boolean {
  try {
    assertTreeDir(dir);
    return true;
  } catch (err) {
    if (err instanceof NoTreeError) return false;
    throw err;
  }
}

/** The tree directories inside a folder of them (`subagents/`, PI_SUBAGENTS_DIR), by name. */
function treesInside(dir: string): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir).sort();
  } catch {
    return [];
  }
  return names.map((name) => path.join(dir, name)).filter((child) => isTreeDir(child));
}

/**
 * Every tree that holds a worktree of the repository at `cwd`: an isolated agent's worktree
 * lives in `<tree dir>/worktrees/<agent>`, so git's list of the repository's worktrees leads
 * to each tree, wherever its session kept it.
 */
async function repositoryTrees(cwd: string): Promise<string[]> {
  let entries: Awaited<ReturnType<typeof listWorktrees>>;
  try {
    entries = await listWorktrees(path.resolve(cwd));
  } catch {
    throw new NothingToCleanError(`${path.resolve(cwd)} is not in a git repository`);
  }
  const trees = new Set<string>();
  for (const entry of entries.slice(1)) {
    const folder = path.dirname(entry.path);
    if (path.basename(folder) === TREE_FILES.worktrees && isTreeDir(path.dirname(folder))) {
      trees.add(path.dirname(folder));
    }
  }
  if (trees.size === 0) throw new NothingToCleanError(`no tree holds a worktree of the repository at ${cwd}`);
  return [...trees].sort();
}

/** The trees a clean takes: one tree directory, a folder of them, or (--repo) every tree of a repository. */
async function treesToClean(target: string | undefined, repo: boolean | undefined): Promise<string[]> {
  if (repo) return repositoryTrees(target ?? process.cwd());
  if (target === undefined) throw new NothingToCleanError("name a tree directory, a folder of them, or use --repo");
  const dir = path.resolve(target);
  if (isTreeDir(dir)) return [dir];
  const inside = treesInside(dir);
  if (inside.length > 0) return inside;
  throw new NothingToCleanError(
    `${dir} is not a tree directory (no ${TREE_FILES.marker}, no ${TREE_FILES.agents}/), nor a folder of them`,
  );
}

/**
 * 0 listed or cleaned, 1 something could not be removed, 2 no tree there or a name no tree
 * holds. Several trees (a folder of them, or --repo): each under its own `tree <dir>:` line.
 */
export async function cleanCommand(target: string | undefined, flags: CleanFlags): Promise<number> {
  let trees: string[];
  try {
    trees = await treesToClean(target, flags.repo);
  } catch (err) {
    if (!(err instanceof NothingToCleanError)) throw err;
    process.stderr.write(`subagent-wrapper clean: ${err.message}\n`);
    return 2;
  }
  const subjects = new Map(trees.map((tree) => [tree, treeCleanSubjects(tree)]));
  const named = new Set(flags.branch ?? []);
  const unknown = unknownNames([...subjects.values()].flat(), named);
  if (unknown.length > 0) {
    const where = trees.length === 1 ? `in ${trees[0]}` : `in any of its ${trees.length} trees`;
    process.stderr.write(`subagent-wrapper clean: no agent or branch ${unknown.join(", ")} ${where}\n`);
    return 2;
  }
  let code = 0;
  for (const [tree, treeSubjects] of subjects) {
    if (trees.length > 1) process.stdout.write(`tree ${tree}:\n`);
    code = Math.max(code, await cleanTree(treeSubjects, named, flags.yes));
  }
  return code;
}

/** One tree's clean: the plan listed, or carried out with --yes. */
async function cleanTree(subjects: CleanSubject[], named: Set<string>, yes: boolean | undefined): Promise<number> {
  const plan = planClean(await cleanFacts(subjects), named);
  if (!yes || plan.steps.length === 0) {
    const more = plan.steps.length > 0 ? ["run it again with --yes to remove them"] : [];
    process.stdout.write(`${[...planLines(plan), ...more].join("\n")}\n`);
    return 0;
  }
  const results = await carryOutClean(plan);
  const kept = planLines({ steps: [], kept: plan.kept }).slice(1);
  process.stdout.write(`${[...resultLines(results), ...kept].join("\n")}\n`);
  return results.some((result) => result.error !== undefined) ? 1 : 0;
}
