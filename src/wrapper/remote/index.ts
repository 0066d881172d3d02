/**
 * The hook of runners into a run: for meta.json `runner` other than `local`, the run's
 * ChildOperations start the far side (`<prefix> <remote_command…> serve`, prefix.ts) and speak
 * the runner protocol with it (remote-child.ts); for a local run, none.
 */

import { EventEmitter } from "node:events";
import fs from "node:fs";
import path from "node:path";
import { ENV } from "../../contracts/env.js";
import type { MetaV1 } from "../../contracts/meta.js";
import type { SshConnection } from "../../contracts/runner-prefix.js";
import type { ResolvedRunner } from "../../contracts/runners.js";
import { git } from "../../lib/git.js";
import { type ChildHandle, type ChildOperations, nodeChildOperations, TASK_EXTENSION_PATH } from "../child.js";
import { fallbackSessionPath } from "../fallback.js";
import { FarChecks } from "./far-checks.js";
import { hostUnixSockets, PACKAGE_ROOT, runnerArgv, sandboxCheckArgv } from "./prefix.js";
import { RemoteChild } from "./remote-child.js";
import {
  agentDirCopy,
  jitiCacheCopy,
  SECCOMP_FD,
  sandboxScratchRoot,
  sandboxSecrets,
  seccompFile,
} from "./sandbox-files.js";
import { startSlurmGuard } from "./slurm-guard.js";
import { attachSlurmJob, ensureJobGone, nodeSlurmJobOperations, slurmJobName, slurmSpawnOptions } from "./slurm-job.js";
import { useSshMaster } from "./ssh-master.js";

/** The repository of `cwd` and the main checkout it belongs to (a worktree's): hidden from a sandbox. */
async function repositoryPaths(cwd: string): Promise<string[]> {
  const paths: string[] = [];
  const top = (await git(["rev-parse", "--show-toplevel"], { cwd }).catch(() => "")).trim();
  if (top) paths.push(top);
  const common = (
    await git(["rev-parse", "--path-format=absolute", "--git-common-dir"], { cwd }).catch(() => "")
  ).trim();
  if (common) paths.push(path.basename(common) === ".git" ? path.dirname(common) : common);
  return paths;
}

/** The node_modules folder that holds `file` (pi's own dependencies come with it), else its folder. */
function installRoot(file: string): string {
  let real = file;
  try {
    real = fs.realpathSync(file);
  } catch {
    return path.dirname(file);
  }
  const at = real.lastIndexOf(`${path.sep}node_modules${path.sep}`);
  return at === -1 ? path.dirname(real) : real.slice(0, at + "/node_modules".length);
}

/** The ChildOperations of meta.json `runner`, or undefined for a local run. */
export async function runnerOperations(
  meta: MetaV1,
  env: NodeJS.ProcessEnv,
  base: ChildOperations = nodeChildOperations,
): Promise<ChildOperations | undefined> {
  const runner = meta.runner;
  if (!runner) return undefined;
  return remoteChildOperations(meta, runner, await runnerStarter(meta, runner, env, base), base);
}

/**
 * What starts one far side of the run, per pi process (a fallback model's is another far
 * side): its argv, what is undone after it, and for a sandbox the environment it may keep.
 */
export async function runnerStarter(
  meta: MetaV1,
  runner: ResolvedRunner,
  env: NodeJS.ProcessEnv,
  base: ChildOperations = nodeChildOperations,
): Promise<RunnerStarter> {
  const childEnv = { ...env, ...meta.env };
  const keepVisible = [PACKAGE_ROOT, path.dirname(process.execPath)];
  try {
    keepVisible.push(installRoot(base.resolvePi(childEnv, meta.cwd)));
  } catch {
    // no pi here: the run says so
  }
  // An extension in a folder (`…/guard/index.ts`) imports the files beside it: its folder stays visible.
  for (const extension of meta.extensions ?? []) {
    if (!path.isAbsolute(extension)) continue;
    keepVisible.push(/^index\.[cm]?[jt]s$/.test(path.basename(extension)) ? path.dirname(extension) : extension);
  }
  const piBin = childEnv[ENV.piBin];
  if (piBin && path.isAbsolute(piBin)) keepVisible.push(installRoot(piBin));
  const hideAlso = await repositoryPaths(meta.cwd);
  const master = runner.kind === "ssh" ? await useSshMaster(runner).catch(() => undefined) : undefined;
  const connection: SshConnection | undefined = master?.connection;
  const scratchRoot = runner.kind === "sandbox" ? sandboxScratchRoot(meta) : undefined;
  const argvOptions = runner.kind === "slurm" ? { jobName: slurmJobName(meta) } : connection ? { connection } : {};
  const secrets = runner.kind === "sandbox" ? sandboxSecrets(meta, childEnv, runner) : undefined;
  // A run whose checks run on the far side keeps the shared connection until its end (run-command.ts): its check runs and repairs ride it.
  const keepMaster = (meta.verify?.run?.length ?? 0) > 0;
  // Per pi process of the run (a fallback model's is another far side): a sandbox's private
  // copies are made for it, in the run's own temp folder, and removed after it.
  const start = (tempDir?: string): RunnerStart => {
    const agentDir = secrets && agentDirCopy(secrets.agentDir, secrets.providers, tempDir);
    const jitiCache = secrets && jitiCacheCopy(tempDir);
    const seccomp = secrets && seccompFile(tempDir);
    const context = {
      env: childEnv,
      // `~` in hidden paths is the child's home, as pi and its tools resolve it.
      ...(childEnv.HOME && { home: childEnv.HOME }),
      hideAlso,
      keepVisible,
      ...(agentDir && { agentDir }),
      ...(scratchRoot && { scratchRoot }),
      ...(jitiCache && { jitiCache }),
      ...(secrets && { showAgain: secrets.showAgain }),
      // The filter refuses every Unix socket; without one, each socket file bound now is covered.
      ...(secrets && (seccomp ? { seccompFd: SECCOMP_FD } : { hostSockets: hostUnixSockets() })),
    };
    const cleanup = async () => {
      if (agentDir) fs.rmSync(agentDir.copy, { recursive: true, force: true });
      if (jitiCache) fs.rmSync(jitiCache, { recursive: true, force: true });
      // The run is done with the shared ssh connection: the last run that used it closes it.
      // (A fallback model's next attempt rides a master if one is up, else its own connection.)
      if (!keepMaster) await master?.release();
    };
    return {
      argv: runnerArgv(runner, context, argvOptions),
      cleanup,
      ...(secrets && { filterEnv: secrets.filterEnv }),
      ...(seccomp !== undefined && { fd3: seccomp }),
    };
  };
  return Object.assign(start, { end: async () => master?.release() });
}

/** Starts one far side per pi process (or check run); `end`: the run is over (the shared connection is let go). */
export type RunnerStarter = ((tempDir?: string) => RunnerStart) & { end?: () => Promise<void> };

/** What starts one far side: its argv, and what is undone once it is over. */
export interface RunnerStart {
  argv: string[];
  cleanup: () => Promise<void> | void;
  /** The environment the prefix starts with, from the one the run gives its child (a sandbox's allow-list). */
  filterEnv?: (env: Record<string, string>) => Record<string, string>;
  /** An open file the prefix gets as its fd 3 (a sandbox's seccomp filter); closed here once the prefix has it. */
  fd3?: number;
}

/**
 * The run's view of a RemoteChild: the same pid and streams, but its `exit` comes once the
 * cleanup after it is done (the wrapper exits right after the run: a shared connection's
 * close must not be cut short).
 */
class CleanedChild extends EventEmitter implements ChildHandle {
  readonly stdin;
  readonly stdout;
  readonly stderr;
  constructor(
    private readonly inner: RemoteChild,
    cleanup: () => Promise<void> | void,
  ) {
    super();
    this.stdin = inner.stdin;
    this.stdout = inner.stdout;
    this.stderr = inner.stderr;
    inner.once("spawn", () => this.emit("spawn"));
    inner.once("error", (err: Error) => this.emit("error", err));
    inner.once("exit", (code: number | null, signal: NodeJS.Signals | null) => {
      void Promise.resolve()
        .then(cleanup)
        .catch(() => undefined)
        .then(() => this.emit("exit", code, signal));
    });
  }

  get pid(): number | undefined {
    return this.inner.pid;
  }
}

/** The argv that starts `runner`'s far side, for a check that only says hello (doctor --runner): nothing hidden, no agent dir. */
export function runnerOperationsArgv(runner: ResolvedRunner, _cwd: string, env: NodeJS.ProcessEnv): string[] {
  return runnerArgv(runner, { env, hideAlso: [], keepVisible: [PACKAGE_ROOT, path.dirname(process.execPath)] });
}

/**
 * pi's arguments for a far side: of the `--extension`s only the task extension stays (it is
 * the far side's own, ARG_TOKENS). The others are this machine's paths, and the tree's own
 * extension needs the tree's folder, which stays on this machine: a child on another machine
 * works in its workspace and does not spawn children of its own. The far `serve` adds what is
 * installed on its host (serve/far-extensions.ts). A sandbox shares this machine's files, so it
 * keeps them all.
 */
export function farArgs(runner: ResolvedRunner, args: string[]): string[] {
  if (runner.kind === "sandbox") return args;
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--extension" && i + 1 < args.length && args[i + 1] !== TASK_EXTENSION_PATH) {
      i += 1;
      continue;
    }
    out.push(arg);
  }
  return out;
}

/** The run's ChildOperations for `runner`: as the local ones, but the child is the far side. */
export function remoteChildOperations(
  meta: MetaV1,
  runner: ResolvedRunner,
  /**
   * The far side's argv, or, per child, the argv and what is called once that child is done,
   * given the run's own temp folder for what it makes, before the run hears of its exit (what the runner's prefix needed: a sandbox's agent dir
   * copy, the shared ssh connection).
   */
  start: string[] | RunnerStarter,
  base: ChildOperations = nodeChildOperations,
): ChildOperations {
  const children = new Map<number, RemoteChild>();
  // The session the run's pi processes share (a run with fallbacks gets one: fallback.ts) goes
  // over to each far side and comes back after it, so the next model's far side continues it.
  const sessionPath = fallbackSessionPath(meta);
  const runMeta = sessionPath ? { ...meta, sessionPath } : meta;
  return {
    ...base,
    // The sandbox runs this machine's pi: found (and identified) as for a local run.
    resolvePi: (env, cwd) => (runner.kind === "sandbox" ? base.resolvePi(env, cwd) : "pi"),
    spawn: (_bin, args, options) => {
      const { argv, cleanup, filterEnv, fd3 } =
        typeof start === "function"
          ? start(options.tempDir)
          : { argv: start, cleanup: () => undefined, filterEnv: undefined, fd3: undefined };
      const spawnOptions = filterEnv ? { ...options, env: filterEnv(options.env) } : options;
      const child = new RemoteChild(
        argv,
        runMeta,
        runner,
        farArgs(runner, args),
        runner.kind === "slurm" ? slurmSpawnOptions(spawnOptions) : spawnOptions,
      );
      if (runner.kind === "slurm") attachSlurmJob(child, runner.name, slurmJobName(meta), options.env);
      child.fd3 = fd3;
      child.start();
      if (fd3 !== undefined) fs.closeSync(fd3);
      const pid = child.pid;
      if (pid) children.set(pid, child);
      return new CleanedChild(child, () => {
        if (pid) children.delete(pid);
        return cleanup();
      });
    },
    signalGroup: (pid, signal) => {
      const child = pid === undefined ? undefined : children.get(pid);
      if (child) child.signal(signal);
      else base.signalGroup(pid, signal);
    },
    // A sandbox's checks run inside the same boundary (the same private copies, filter and
    // environment); a far side's in the workspace the turn left there, through a check run.
    ...(runner.kind === "sandbox" && typeof start === "function" && { checkLaunch: sandboxCheckLaunch(start) }),
    ...(typeof start === "function" && start.end && { end: start.end }),
    ...(runner.kind !== "sandbox" &&
      typeof start === "function" && {
        farChecks: (env: Record<string, string>) =>
          new FarChecks(meta, runner, farCheckStart(meta, runner, start, env)),
      }),
  };
}

/**
 * What starts a check run's far side: the runner's argv and the run's environment with its
 * token (as a turn's far side gets them). On Slurm, as for a turn: no token for srun
 * (slurmSpawnOptions), the guard while it runs and the last resort after it.
 */
function farCheckStart(meta: MetaV1, runner: ResolvedRunner, start: () => RunnerStart, env: Record<string, string>) {
  return () => {
    const { argv, cleanup } = start();
    if (runner.kind !== "slurm") return { argv, env, cleanup };
    const jobName = slurmJobName(meta);
    const guard = startSlurmGuard(jobName, env);
    const { [ENV.runToken]: _token, ...withoutToken } = env;
    return {
      argv,
      env: withoutToken,
      cleanup: async () => {
        await ensureJobGone(jobName, nodeSlurmJobOperations(env)).catch(() => undefined);
        guard.release();
        await cleanup();
      },
    };
  };
}

/** A verify check's process inside the sandbox, in the agent's checkout (sandboxCheckArgv). */
function sandboxCheckLaunch(start: () => RunnerStart): NonNullable<ChildOperations["checkLaunch"]> {
  return async (command, cwd, env) => {
    const top = (await git(["rev-parse", "--show-toplevel"], { cwd })).trim();
    const { argv, cleanup, filterEnv, fd3 } = start();
    const [file, ...args] = sandboxCheckArgv(argv, top, cwd, command);
    return { file: file!, args, env: filterEnv ? filterEnv(env) : env, fd3, cleanup };
  };
}
