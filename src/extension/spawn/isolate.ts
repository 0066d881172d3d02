/**
 * spawn_agent with `isolation: "worktree"`: the child gets a git worktree of its own, made
 * from what its parent sees (docs/isolation.md).
 *
 *   repositoryFor(cwd)        rule 13: the git working tree that holds the parent's cwd
 *   createIsolatedWorktree()  snapshot of the parent's working state → new branch and worktree
 *                             under the tree directory → the setup command; `release` undoes it
 *
 * A spawn that fails after the worktree exists (the setup command, a later step of the spawn)
 * calls `release`, which removes the worktree and its branch (it holds no commit yet), so a
 * rejected spawn leaves nothing behind.
 */
import fs from "node:fs";
import path from "node:path";
import { ENV } from "../../contracts/env.js";
import type { AgentWorktreeV1 } from "../../contracts/tree.js";
import { commonGitDir } from "../../lib/git.js";
import { branchCommit } from "../../lib/git-worktrees.js";
import { errorText } from "../../lib/values.js";
import {
  branchName,
  createWorktree,
  findRepository,
  type Repository,
  removeWorktree,
  runSetupCommand,
  type SnapshotReuse,
  snapshotWorkingState,
  untrackedPaths,
  worktreePathFor,
} from "../isolation/index.js";
import { noRepositoryError } from "./validate.js";

/** How long PI_SUBAGENTS_WORKTREE_SETUP may run unless PI_SUBAGENTS_WORKTREE_SETUP_TIMEOUT_MS says otherwise. */
export const SETUP_TIMEOUT_MS = 120_000;

export interface SetupCommand {
  command: string;
  timeoutMs: number;
}

/** The setup command the environment asks for, if any. */
export function setupCommandFromEnv(env: NodeJS.ProcessEnv = process.env): SetupCommand | undefined {
  const command = env[ENV.worktreeSetup];
  if (command === undefined || command.trim() === "") return undefined;
  const timeout = Number(env[ENV.worktreeSetupTimeoutMs]);
  return { command, timeoutMs: Number.isInteger(timeout) && timeout > 0 ? timeout : SETUP_TIMEOUT_MS };
}

/** Rule 13, and git failures that are not "no repository" (git missing, a dubious-ownership refusal) in one line. */
export async function repositoryFor(cwd: string, env?: NodeJS.ProcessEnv): Promise<Repository> {
  let repository: Repository | undefined;
  try {
    repository = await findRepository(cwd, { env });
  } catch (err) {
    throw new Error(`isolation "worktree" could not ask git about ${cwd}: ${errorText(err)}`);
  }
  if (!repository) throw new Error(noRepositoryError(cwd));
  return repository;
}

export interface IsolationRequest {
  repository: Repository;
  treeDir: string;
  agentPath: string;
  treeTag: string;
  /** The spawning agent's own worktree, when it is isolated itself: its setup paths stay out of the snapshot. */
  parentWorktree?: AgentWorktreeV1;
  setup?: SetupCommand;
  /**
   * Return before every file is written (`IsolatedWorktree.finishCheckout` writes the rest),
   * so the child can start meanwhile; ignored with a setup command, which needs every file.
   */
  deferCheckout?: boolean;
  /** The previous snapshot of a spawn in this process, kept for the next (snapshot-reuse.ts). */
  snapshots?: SnapshotReuse;
  env?: NodeJS.ProcessEnv;
}

export interface IsolatedWorktree {
  worktree: AgentWorktreeV1;
  /** The child's cwd: the parent's cwd, translated into the worktree. */
  cwd: string;
  /** Removes the worktree and its branch (for a spawn that fails later). */
  release(): Promise<void>;
  /**
   * With `deferCheckout`: writes the rest of the worktree's files (the runtime's worktree
   * operations decide when); undefined when they are all written already.
   */
  finishCheckout?: () => Promise<void>;
}

const real = (p: string): string => {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
};

/** `inner` relative to `outer` when it lies inside it ("" for the same folder), else undefined. */
function inside(outer: string, inner: string): string | undefined {
  const relative = path.relative(real(outer), real(inner));
  if (relative === "") return "";
  return relative.startsWith("..") || path.isAbsolute(relative) ? undefined : relative.split(path.sep).join("/");
}

/**
 * What the snapshot leaves out: the tree directory when it lies inside the working tree
 * (PI_SUBAGENTS_DIR in the project: its worktrees and records are no one's work), and the
 * spawning agent's own setup paths when it is itself an isolated child.
 */
function snapshotExclusions(request: IsolationRequest): string[] {
  const top = request.repository.topLevel;
  const exclusions: string[] = [];
  const treeInside = inside(top, request.treeDir);
  if (treeInside === "")
    throw new Error(
      `isolation "worktree" cannot use the repository's top ${top} as the tree directory: set PI_SUBAGENTS_DIR elsewhere`,
    );
  if (treeInside !== undefined) exclusions.push(treeInside);
  const parent = request.parentWorktree;
  if (parent?.setupPaths && inside(parent.path, top) === "") exclusions.push(...parent.setupPaths);
  return exclusions;
}

export async function createIsolatedWorktree(request: IsolationRequest): Promise<IsolatedWorktree> {
  const { repository, env } = request;
  const git = { env };
  const branch = branchName(request.treeTag, request.agentPath);
  const worktreePath = worktreePathFor(request.treeDir, request.agentPath);
  const exclude = snapshotExclusions(request);
  // Asked at once (each git process costs a few ms to start); a snapshot made for nothing
  // when the branch exists leaves only objects that `git gc` drops.
  const snapshot = snapshotWorkingState(repository.topLevel, { ...git, exclude, reuse: request.snapshots });
  snapshot.catch(() => undefined); // awaited below, after the checks
  const [gitDir, existing] = await Promise.all([
    commonGitDir(repository.topLevel, git),
    branchCommit(repository.topLevel, branch, git),
  ]);
  // Another tree with the same tag (one chance in 4 billion) or a user's branch: never touch it.
  if (existing !== undefined) {
    throw new Error(`isolation "worktree" cannot create branch ${branch}: it already exists in ${repository.topLevel}`);
  }
  const baseCommit = await snapshot;
  let finishing: Promise<void> | undefined;
  const release = async (): Promise<void> => {
    await finishing?.catch(() => undefined); // never remove files a checkout is still writing
    await removeWorktree({ topLevel: gitDir, worktreePath, branch, base: baseCommit, env });
  };
  let created: Awaited<ReturnType<typeof createWorktree>>;
  try {
    created = await createWorktree({
      topLevel: repository.topLevel,
      worktreePath,
      branch,
      base: baseCommit,
      baseIsCommit: true,
      commonDir: gitDir,
      subdir: repository.subdir,
      env,
      deferCheckout: request.deferCheckout === true && request.setup === undefined,
    });
  } catch (err) {
    // git may have made the branch (or half a worktree) before it failed.
    await release().catch(() => undefined);
    throw new Error(`isolation "worktree" could not create the worktree: ${errorText(err)}`);
  }
  const rest = created.finishCheckout;
  // Run once: a release waits for it.
  const finishCheckout = rest && (() => (finishing ??= rest()));
  const worktree: AgentWorktreeV1 = { path: created.path, branch, baseCommit, gitDir, subdir: repository.subdir };
  try {
    if (request.setup) {
      await runSetupCommand({
        command: request.setup.command,
        cwd: created.path,
        timeoutMs: request.setup.timeoutMs,
        env: { ...(env ?? process.env), [ENV.worktreeSource]: repository.topLevel },
      });
      const setupPaths = await untrackedPaths(created.path, git);
      if (setupPaths.length > 0) worktree.setupPaths = setupPaths;
    }
  } catch (err) {
    await release().catch(() => undefined);
    throw err;
  }
  return { worktree, cwd: created.cwd, release, ...(finishCheckout && { finishCheckout }) };
}
