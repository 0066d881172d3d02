/**
 * Cleaning a tree's git leftovers, one logic for `subagent-wrapper clean` and `/agents clean`:
 * the worktrees of agents that ended, and their `subagent/*` branches that hold no commit
 * beyond their base. A branch with the child's commits is its work: it stays unless the
 * person names it. A worktree with uncommitted changes stays too (a turn's commit failed
 * there), and nothing of an agent whose turn runs or waits is touched.
 *
 * Three steps: `cleanFacts` asks the disk and git (read-only), `planClean` decides (pure),
 * `carryOutClean` removes what the plan says (lib/worktree-removal.ts) and reports each step.
 */
import fs from "node:fs";
import { type GitCallOptions, git, retryOnLock, runGit } from "./git.js";
import { branchCommit } from "./git-worktrees.js";
import { errorText } from "./values.js";
import { removeWorktree } from "./worktree-removal.js";

/** An isolated agent as its record tells it. */
export interface CleanSubject {
  /** Its canonical path (`/root/worker`). */
  agent: string;
  /** Its status in its record. */
  status: string;
  /** Why it is still in use (its turn runs or waits, its parent may follow it up); nothing of it is touched then. */
  inUse?: string;
  worktree: { path: string; branch: string; baseCommit: string; gitDir: string };
  /** A runner's workspace kept between its turns (meta.json `runnerWorkspacePath`): it goes with the worktree. */
  keptWorkspace?: string;
}

/** An agent's record as clean reads it: any record, isolated or not (a parent's status counts too). */
export interface CleanRecord {
  path: string;
  status: string;
  worktree?: CleanSubject["worktree"];
  keptWorkspace?: string;
}

/** A turn that runs or waits for a slot. */
const ACTIVE_STATUSES = new Set(["running", "pending_init"]);

/** The parent of `/root/a/b` is `/root/a`; of `/root/a`, `/root`. */
const parentOf = (agent: string): string => agent.slice(0, agent.lastIndexOf("/"));

/**
 * The isolated agents among `records`, with why each is in use: its own turn runs or waits,
 * or an ancestor's does (that parent may follow it up in its worktree). `busy` adds what the
 * caller knows beyond the records (the runtime's turns being stopped or recorded).
 */
export function cleanSubjects(
  records: readonly CleanRecord[],
  busy: (agent: string) => string | undefined = () => undefined,
): CleanSubject[] {
  const status = new Map(records.map((record) => [record.path, record.status]));
  const inUse = (agent: string, own: string): string | undefined => {
    if (ACTIVE_STATUSES.has(own)) return `it is ${own === "running" ? "running" : "queued"}`;
    const known = busy(agent);
    if (known !== undefined) return known;
    for (let up = parentOf(agent); up.includes("/"); up = parentOf(up))
      if (ACTIVE_STATUSES.has(status.get(up) ?? "")) return `its parent ${up} works and may follow it up`;
    return undefined;
  };
  return records.flatMap(({ path, status: own, worktree, keptWorkspace }) => {
    if (!worktree) return [];
    const why = inUse(path, own);
    return [
      {
        agent: path,
        status: own,
        ...(why !== undefined && { inUse: why }),
        worktree,
        ...(keptWorkspace && { keptWorkspace }),
      },
    ];
  });
}

/** What the disk and git say of a subject's worktree and branch. */
export interface CleanFacts extends CleanSubject {
  folderExists: boolean;
  /** Its worktree holds changes no commit has (absent when git could not be asked). */
  dirty?: boolean;
  /** Commits on the branch beyond the base; absent when the branch is gone or git could not be asked. */
  commits?: number;
  branchExists?: boolean;
  gitError?: string;
}

/** One agent's part of the plan: what goes. */
export interface CleanStep {
  agent: string;
  gitDir: string;
  base: string;
  branch: string;
  /** Where its worktree is (or was). */
  worktreePath: string;
  /** Its worktree folder goes (false: the folder is gone already, git's entry for it is pruned). */
  removeFolder: boolean;
  /** The branch goes; `commits` beyond its base (more than 0 only when it was named). */
  deleteBranch?: { commits: number };
  /** A runner's kept workspace folder, removed with the worktree. */
  keptWorkspace?: string;
}

/** What stays, and why. */
export interface CleanKept {
  agent: string;
  what: string;
  why: string;
}

export interface CleanPlan {
  steps: CleanStep[];
  kept: CleanKept[];
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`;

/** Asks the disk and git about each subject; never throws (a failure is the subject's `gitError`). */
export async function cleanFacts(
  subjects: readonly CleanSubject[],
  options: GitCallOptions = {},
): Promise<CleanFacts[]> {
  const facts: CleanFacts[] = [];
  for (const subject of subjects) {
    const { worktree } = subject;
    const fact: CleanFacts = { ...subject, folderExists: fs.existsSync(worktree.path) };
    try {
      if (fact.folderExists) {
        const status = await runGit(["status", "--porcelain", "--untracked-files=all"], {
          ...options,
          cwd: worktree.path,
        });
        if (status.code === 0) fact.dirty = status.stdout.length > 0;
      }
      const tip = await branchCommit(worktree.gitDir, worktree.branch, options);
      fact.branchExists = tip !== undefined;
      if (tip !== undefined) {
        const count = await git(["rev-list", "--count", `${worktree.baseCommit}..${tip}`], {
          ...options,
          cwd: worktree.gitDir,
        });
        fact.commits = Number(count.trim());
      }
    } catch (err) {
      fact.gitError = errorText(err);
    }
    facts.push(fact);
  }
  return facts;
}

/** Whether the person named this agent's branch (by the branch's name or the agent's path). */
const isNamed = (fact: CleanFacts, named: ReadonlySet<string>): boolean =>
  named.has(fact.worktree.branch) || named.has(fact.agent);

/** One ended agent's step, or why its leftovers stay. */
function planOne(fact: CleanFacts, named: ReadonlySet<string>, plan: CleanPlan): void {
  const { agent, worktree } = fact;
  if (fact.gitError !== undefined) {
    plan.kept.push({ agent, what: worktree.path, why: `git could not be asked: ${fact.gitError}` });
    return;
  }
  if (fact.dirty === true) {
    plan.kept.push({
      agent,
      what: `worktree ${worktree.path} and branch ${worktree.branch}`,
      why: `it holds uncommitted changes (git -C ${worktree.path} status)`,
    });
    return;
  }
  const step: CleanStep = {
    agent,
    gitDir: worktree.gitDir,
    base: worktree.baseCommit,
    branch: worktree.branch,
    worktreePath: worktree.path,
    removeFolder: fact.folderExists,
    ...(fact.keptWorkspace && { keptWorkspace: fact.keptWorkspace }),
  };
  const commits = fact.commits ?? 0;
  if (fact.branchExists === true && (commits === 0 || isNamed(fact, named))) step.deleteBranch = { commits };
  else if (fact.branchExists === true)
    plan.kept.push({
      agent,
      what: `branch ${worktree.branch}`,
      why: `${plural(commits, "commit")} beyond its base (name it to delete it)`,
    });
  if (step.removeFolder || step.deleteBranch !== undefined) plan.steps.push(step);
}

/**
 * Pure: what goes. An agent in use keeps everything; an ended one loses its worktree (unless
 * it holds uncommitted changes) and its branch when the branch holds no commit beyond its
 * base or `named` holds the branch's name or the agent's path.
 */
export function planClean(facts: readonly CleanFacts[], named: ReadonlySet<string> = new Set()): CleanPlan {
  const plan: CleanPlan = { steps: [], kept: [] };
  for (const fact of facts) {
    if (fact.inUse === undefined) planOne(fact, named, plan);
    else if (fact.folderExists || fact.branchExists)
      plan.kept.push({ agent: fact.agent, what: fact.worktree.path, why: fact.inUse });
  }
  return plan;
}

/** The names in `named` that match no subject (a typo, or another tree's branch). */
export function unknownNames(facts: readonly CleanSubject[], named: ReadonlySet<string>): string[] {
  const known = new Set(facts.flatMap((fact) => [fact.agent, fact.worktree.branch]));
  return [...named].filter((name) => !known.has(name));
}

/** The plan as lines: what goes, then what stays and why. */
export function planLines(plan: CleanPlan): string[] {
  const lines: string[] = [];
  for (const step of plan.steps) {
    if (step.removeFolder) lines.push(`  worktree ${step.worktreePath} (${step.agent})`);
    if (step.deleteBranch !== undefined) {
      const how =
        step.deleteBranch.commits === 0
          ? "no commits beyond its base"
          : `${plural(step.deleteBranch.commits, "commit")} beyond its base, named`;
      lines.push(`  branch ${step.branch} (${how})`);
    }
  }
  const kept = plan.kept.map((entry) => `  ${entry.what} (${entry.agent}): ${entry.why}`);
  return [
    ...(lines.length > 0 ? ["to remove:", ...lines] : ["nothing to remove"]),
    ...(kept.length > 0 ? ["kept:", ...kept] : []),
  ];
}

/** What carrying out one step did. */
export interface CleanResult {
  step: CleanStep;
  removed: boolean;
  branchDeleted: boolean;
  error?: string;
}

/** Removes what the plan says, step by step; a failed step is reported and the others go on. */
export async function carryOutClean(plan: CleanPlan, options: GitCallOptions = {}): Promise<CleanResult[]> {
  const results: CleanResult[] = [];
  for (const step of plan.steps) {
    try {
      // Deletes the branch itself when it holds nothing beyond its base; a named one goes below.
      const done = await removeWorktree({
        ...options,
        topLevel: step.gitDir,
        worktreePath: step.worktreePath,
        branch: step.branch,
        base: step.base,
      });
      let branchDeleted = done.branchDeleted;
      if (
        step.deleteBranch &&
        !branchDeleted &&
        (await branchCommit(step.gitDir, step.branch, options)) !== undefined
      ) {
        await retryOnLock(() => git(["branch", "--quiet", "-D", "--", step.branch], { ...options, cwd: step.gitDir }));
        branchDeleted = true;
      }
      if (step.keptWorkspace && (done.removed || !step.removeFolder))
        fs.rmSync(step.keptWorkspace, { recursive: true, force: true });
      results.push({ step, removed: done.removed, branchDeleted });
    } catch (err) {
      results.push({ step, removed: false, branchDeleted: false, error: errorText(err) });
    }
  }
  return results;
}

/** What was done, a line each; failures say why. */
export function resultLines(results: readonly CleanResult[]): string[] {
  const lines: string[] = [];
  for (const { step, removed, branchDeleted, error } of results) {
    if (removed) lines.push(`removed worktree ${step.worktreePath} (${step.agent})`);
    if (branchDeleted) lines.push(`deleted branch ${step.branch}`);
    if (error !== undefined) lines.push(`could not clean ${step.agent}: ${error}`);
  }
  return lines;
}
