/**
 * Running git safely on the user's behalf (the extension's isolated children, the CLI's
 * worktree listing): one program call at a time through `runProcess` (never a shell), each
 * with a time limit, so no git call can hang a spawn, a close or a doctor run.
 *
 * Every call gets the same guard rails, because these commands run in the user's repository
 * on the user's behalf but must never act like the user's own git session:
 *   - no prompts (`GIT_TERMINAL_PROMPT=0`), English messages (`LC_ALL=C`, so the lock
 *     detection below can read them), no optional locks on read-only commands;
 *   - no user hooks (`core.hooksPath=/dev/null`: `worktree add` would run post-checkout),
 *     no signing, no recursion into submodules;
 *   - repository-locating variables (`GIT_DIR`, `GIT_INDEX_FILE`, …) inherited from the
 *     caller are dropped, so git always works on the repository of the cwd it is given.
 *
 * The base environment is a parameter (`env`, default `process.env`) so callers and tests can
 * run git as a machine with no configured identity would (HOME elsewhere,
 * GIT_CONFIG_GLOBAL=/dev/null, GIT_CONFIG_NOSYSTEM=1).
 *
 * Git's lock files (index.lock, packed-refs.lock, ref locks, `.git/worktrees/<name>`) make a
 * second git process fail rather than wait. Commands that change shared state therefore run
 * through `retryOnLock` (short backoff, bounded total time: other processes of the tree and
 * the user's own git are outside our control) and, inside this process, `serialized` (serialized.ts) per
 * repository (a promise chain keyed by the common git dir), so our own calls never race.
 */
import fs from "node:fs";
import path from "node:path";
import { type Clock, sleep, systemClock } from "./clock.js";
import { launchProcess } from "./process-launcher.js";
import { type RunResult, tail } from "./run-process.js";

/** Time limit of one git command unless the caller gives another. */
export const GIT_TIMEOUT_MS = 60_000;
/** How long a command that keeps meeting a held lock is retried before its error stands. */
export const LOCK_WAIT_MS = 15_000;

export interface GitCallOptions {
  /** The environment git starts from (default `process.env`); see `gitEnv`. */
  env?: NodeJS.ProcessEnv;
  /** Time limit of each git command, in ms (default `GIT_TIMEOUT_MS`). */
  timeoutMs?: number;
}

export interface LockOptions extends GitCallOptions {
  /** How long to keep retrying a command that meets a held git lock (default `LOCK_WAIT_MS`). */
  lockWaitMs?: number;
  /** The time the lock retries read and wait on (default the system's; a test's fake clock). */
  clock?: Clock;
}

export interface GitRunOptions extends GitCallOptions {
  cwd: string;
  /** Set on top of the prepared environment (GIT_INDEX_FILE, identity fallback). */
  extraEnv?: Record<string, string>;
  /** The nice value of the git process (see RunOptions.niceness). */
  niceness?: number;
}

/** Variables that would point git at another repository, index or object store than the cwd's. */
const REPOSITORY_VARS = [
  "GIT_DIR",
  "GIT_WORK_TREE",
  "GIT_INDEX_FILE",
  "GIT_COMMON_DIR",
  "GIT_OBJECT_DIRECTORY",
  "GIT_ALTERNATE_OBJECT_DIRECTORIES",
  "GIT_PREFIX",
  "GIT_NAMESPACE",
  "GIT_IMPLICIT_WORK_TREE",
  "GIT_SHALLOW_FILE",
  "GIT_GRAFT_FILE",
  "GIT_REPLACE_REF_BASE",
  "GIT_NO_REPLACE_OBJECTS",
];

/** Put before every command. */
const SAFE_CONFIG = [
  "-c",
  "core.hooksPath=/dev/null",
  "-c",
  "commit.gpgSign=false",
  "-c",
  "tag.gpgSign=false",
  "-c",
  "submodule.recurse=false",
];

/** The environment of every git call: `base` without repository-locating variables, plus the guard rails. */
export function gitEnv(base: NodeJS.ProcessEnv = process.env, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const name of REPOSITORY_VARS) delete env[name];
  return { ...env, GIT_TERMINAL_PROMPT: "0", GIT_OPTIONAL_LOCKS: "0", LC_ALL: "C", LANGUAGE: "C", ...extra };
}

/** A git command that did not succeed; the message names the command and ends with its stderr tail. */
export class GitError extends Error {
  constructor(
    message: string,
    readonly args: readonly string[],
    readonly exitCode: number | null,
    readonly stderr: string,
    readonly timedOut: boolean = false,
  ) {
    super(message);
    this.name = "GitError";
  }
}

const quoteArg = (arg: string): string => (/^[\w@%+=:,./^{}~-]+$/.test(arg) ? arg : JSON.stringify(arg));
const commandText = (args: readonly string[]): string => `git ${args.map(quoteArg).join(" ")}`;

/** Drops exactly one trailing newline (a path may itself end in, or contain, one). */
export const stripNewline = (text: string): string => (text.endsWith("\n") ? text.slice(0, -1) : text);

/**
 * Runs `git args` in `cwd`. Resolves with the result whatever the exit code; rejects with a
 * GitError when git could not be started, ran out of time or wrote too much.
 */
export async function runGit(args: readonly string[], options: GitRunOptions): Promise<RunResult> {
  const timeoutMs = options.timeoutMs ?? GIT_TIMEOUT_MS;
  let result: RunResult;
  try {
    result = await launchProcess("git", [...SAFE_CONFIG, ...args], {
      cwd: options.cwd,
      env: gitEnv(options.env, options.extraEnv),
      timeoutMs,
      ...(options.niceness !== undefined && { niceness: options.niceness }),
    });
  } catch (error) {
    const missingCwd = !fs.existsSync(options.cwd);
    const reason = missingCwd
      ? `no such directory: ${options.cwd}`
      : `could not start git: ${(error as Error).message}`;
    throw new GitError(`${commandText(args)} failed: ${reason}`, args, null, "");
  }
  if (result.timedOut || result.overflow) {
    const what = result.timedOut ? `timed out after ${timeoutMs} ms` : "wrote more output than allowed";
    const stderr = tail(result.stderr);
    throw new GitError(
      `${commandText(args)} ${what}${stderr ? `: ${stderr}` : ""}`,
      args,
      result.code,
      result.stderr,
      result.timedOut,
    );
  }
  return result;
}

/** Runs `git args` and returns its stdout; any exit but 0 is a GitError. */
export async function git(args: readonly string[], options: GitRunOptions): Promise<string> {
  const result = await runGit(args, options);
  if (result.code !== 0) throw failure(args, result);
  return result.stdout.toString("utf8");
}

/** The GitError for a finished command that did not exit 0. */
export function failure(args: readonly string[], result: RunResult): GitError {
  const how = result.code === null ? `killed by ${result.signal ?? "a signal"}` : `exit ${result.code}`;
  const stderr = tail(result.stderr);
  return new GitError(
    `${commandText(args)} failed (${how})${stderr ? `: ${stderr}` : ""}`,
    args,
    result.code,
    result.stderr,
  );
}

/**
 * Failures that mean "another git process holds this right now": lock files, and the
 * half-written `.git/worktrees/<name>` folder of a concurrent `worktree add` that a
 * second git stumbles on while it lists the worktrees.
 */
const TRANSIENT = [
  /Unable to create '[^']*\.lock'/i,
  /\.lock'?: File exists/i,
  /cannot lock ref/i,
  /could not lock/i,
  /unable to lock/i,
  /(failed to read|invalid path|unable to read|could not read)[^\n]*\bworktrees\//i,
];

export function isLockError(error: unknown): boolean {
  return error instanceof GitError && !error.timedOut && TRANSIENT.some((pattern) => pattern.test(error.stderr));
}

/**
 * Runs `attempt` again (20 ms, 40 ms, … up to 500 ms apart, with jitter) while it fails on a
 * held lock, for at most `lockWaitMs` in all, as `clock` tells time; then the last error
 * stands. `attempt` gets the attempt number (0 first) so it can account for what a failed
 * attempt may have left.
 */
export async function retryOnLock<T>(
  attempt: (n: number) => Promise<T>,
  lockWaitMs: number = LOCK_WAIT_MS,
  clock: Clock = systemClock,
): Promise<T> {
  const deadline = clock.now() + lockWaitMs;
  for (let n = 0; ; n++) {
    try {
      return await attempt(n);
    } catch (error) {
      if (!isLockError(error)) throw error;
      const delay = Math.min(500, 20 * 2 ** n) * (0.75 + Math.random() * 0.5);
      if (clock.now() + delay > deadline) throw error;
      await sleep(clock, delay);
    }
  }
}

/** The repository's common git dir (shared by all its worktrees), as a real absolute path. */
export async function commonGitDir(cwd: string, options: GitCallOptions = {}): Promise<string> {
  const out = stripNewline(await git(["rev-parse", "--git-common-dir"], { ...options, cwd }));
  const dir = path.resolve(cwd, out);
  return fs.promises.realpath(dir).catch(() => dir);
}

/**
 * The pathspec of "everything at the cwd's top but these paths" (relative to the top,
 * matched literally: no glob or magic in a name is interpreted), for `git add --all`.
 */
export function allExcept(paths: readonly string[]): string[] {
  if (paths.length === 0) return [];
  return ["--", ".", ...paths.map((entry) => `:(exclude,literal)${entry}`)];
}

/** Who commits when the repository and environment name nobody. */
export const FALLBACK_IDENTITY = { name: "pi-subagent-tree", email: "pi-subagent-tree@localhost" } as const;

/**
 * The environment additions that give a commit an author and committer: none when git would
 * find them itself (GIT_AUTHOR_* / GIT_COMMITTER_* variables, `author.*`, `committer.*` or
 * `user.*` config, EMAIL for the address), else `FALLBACK_IDENTITY` for what is missing, so
 * committing works on a machine with no git identity at all (CI as root, no ~/.gitconfig).
 */
export async function identityEnv(cwd: string, options: GitCallOptions = {}): Promise<Record<string, string>> {
  const args = ["config", "--get-regexp", "^(user|author|committer)\\.(name|email)$"];
  const result = await runGit(args, { ...options, cwd });
  if (result.code !== 0 && result.code !== 1) throw failure(args, result); // 1: none set
  const config = new Map<string, string>();
  for (const line of result.stdout.toString("utf8").split("\n")) {
    const space = line.indexOf(" ");
    if (space > 0 && line.slice(space + 1).trim() !== "")
      config.set(line.slice(0, space).toLowerCase(), line.slice(space + 1));
  }
  const env = options.env ?? process.env;
  const extra: Record<string, string> = {};
  for (const role of ["author", "committer"] as const) {
    const upper = role.toUpperCase();
    if (!env[`GIT_${upper}_NAME`] && !config.has(`${role}.name`) && !config.has("user.name"))
      extra[`GIT_${upper}_NAME`] = FALLBACK_IDENTITY.name;
    if (!env[`GIT_${upper}_EMAIL`] && !config.has(`${role}.email`) && !config.has("user.email") && !env.EMAIL) {
      extra[`GIT_${upper}_EMAIL`] = FALLBACK_IDENTITY.email;
    }
  }
  return extra;
}
