import { type ChildProcessByStdio, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { ENV } from "../contracts/env.js";
import { effectiveModel, type MetaV1 } from "../contracts/meta.js";
import { TASK_PLACEHOLDER } from "../contracts/task-handoff.js";
import { processIdentity, procStatFields, sameProcessAlive } from "../lib/process.js";
import type { ProcessIdentity } from "../lib/process-identity.js";
import { type OrphanGuard, processesWithToken, startOrphanGuard } from "./orphan-guard.js";
import type { PiIdentity } from "./pi-version.js";

/**
 * The compiled task extension pi loads into the child (src/in-child/: code that runs inside
 * the child, importing only the contracts). Only its path is needed here, never its code.
 */
export const TASK_EXTENSION_PATH = fileURLToPath(new URL("../in-child/task-extension.js", import.meta.url));

/** Raised when the pi executable cannot be found; the message names the binary. */
export class PiNotFoundError extends Error {}

function isExecutableFile(candidate: string): boolean {
  try {
    fs.accessSync(candidate, fs.constants.X_OK);
    return fs.statSync(candidate).isFile();
  } catch {
    return false;
  }
}

/** The executable file `name` in the first folder of `env.PATH` that holds one, as a shell finds it. */
export function findOnPath(name: string, env: NodeJS.ProcessEnv, cwd = process.cwd()): string | undefined {
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    if (dir === "") continue;
    const candidate = path.resolve(cwd, dir, name);
    if (isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Find pi: `PI_SUBAGENTS_PI_BIN` (a path, or a name looked up on PATH), else `pi` on PATH.
 * Looked up here rather than left to the spawn so a missing binary gets a clear message.
 */
export function resolvePiBinary(env: NodeJS.ProcessEnv, cwd: string): string {
  const configured = env[ENV.piBin];
  const name = configured && configured.trim() !== "" ? configured : "pi";
  if (name.includes("/")) {
    const absolute = path.resolve(cwd, name);
    if (isExecutableFile(absolute)) return absolute;
    throw new PiNotFoundError(`pi executable ${absolute} (from ${ENV.piBin}) does not exist or is not executable`);
  }
  const found = findOnPath(name, env, cwd);
  if (found) return found;
  const hint = configured ? `(from ${ENV.piBin})` : `(install @earendil-works/pi-coding-agent or set ${ENV.piBin})`;
  throw new PiNotFoundError(`pi executable "${name}" was not found on PATH ${hint}`);
}

/**
 * The child's arguments. The task itself never appears here: it travels in a file that the
 * task extension hands to pi (see in-child/task-extension.ts), so it is never mangled, never
 * length-limited and never shows up in `ps`.
 */
export function buildChildArgs(
  meta: MetaV1,
  taskExtensionPath = TASK_EXTENSION_PATH,
  rpc = meta.dialogs !== undefined,
): string[] {
  // With dialogs (or as a spare pi, spare-pi.ts), RPC mode: the child's extensions get a UI (rpc-session.ts).
  const args = ["--mode", rpc ? "rpc" : "json", "--no-prompt-templates"];
  // pi expands `/skill:name` even in transformed input; without skills it stays verbatim.
  if (meta.task.startsWith("/skill:")) args.push("--no-skills");
  const model = effectiveModel(meta);
  if (model) args.push("--model", model);
  if (meta.thinking) args.push("--thinking", meta.thinking);
  if (meta.tools) args.push(...(meta.tools.length === 0 ? ["--no-tools"] : ["--tools", meta.tools.join(",")]));
  if (meta.noExtensions) args.push("--no-extensions");
  if (meta.noContextFiles) args.push("--no-context-files");
  // The task extension first: pi runs handlers in the order extensions were loaded, so its
  // tool_call wait (meta.json `cwdReadyPath`) comes before any other extension's tool runs,
  // and the others' `input` handlers see the task itself rather than the placeholder.
  args.push("--extension", taskExtensionPath);
  for (const extension of meta.extensions ?? []) args.push("--extension", extension);
  if (meta.systemPromptPath) args.push("--append-system-prompt", meta.systemPromptPath);
  args.push(...(meta.sessionPath ? ["--session", meta.sessionPath] : ["--no-session"]));
  // RPC mode takes its prompt on stdin (rpc-session.ts) and ignores messages on the command line.
  if (!rpc) args.push(TASK_PLACEHOLDER);
  return args;
}

/** Whether `args` run pi in RPC mode: its stdin is then a pipe the run writes commands to. */
export function runsRpc(args: readonly string[]): boolean {
  const mode = args.indexOf("--mode");
  return mode !== -1 && args[mode + 1] === "rpc";
}

export type ChildProcess = ChildProcessByStdio<Writable | null, Readable, Readable>;

/** What the run needs of its child: a pid, its output streams and three lifecycle events. */
export interface ChildHandle {
  readonly pid?: number | undefined;
  /** pi's stdin: a pipe for RPC mode (runsRpc), else none. */
  readonly stdin?: Writable | null;
  readonly stdout: Readable;
  readonly stderr: Readable;
  once(event: "spawn", listener: () => void): unknown;
  once(event: "error", listener: (err: Error) => void): unknown;
  once(event: "exit", listener: (code: number | null, signal: NodeJS.Signals | null) => void): unknown;
}

export interface SpawnOptions {
  cwd: string;
  env: Record<string, string>;
  taskFile: string;
  /** The run's own folder in the temp folder (run-temp.ts): what the run writes there for itself goes in it. */
  tempDir?: string;
  /** The run's token, put in the child's environment (see orphan-guard.ts). */
  runToken: string;
  /** The live-message folder the task extension watches (meta.json `inboxPath`), when the run has one. */
  inboxDir?: string;
  /** The file whose `ready` lets the child load its project (meta.json `cwdReadyPath`), when the run has one. */
  cwdReady?: string;
}

/**
 * How a run reaches processes. The defaults are the real ones below; a test passes a fake
 * child that prints lines and exits when told, and records the signals it is sent.
 */
export interface ChildOperations {
  resolvePi(env: NodeJS.ProcessEnv, cwd: string): string;
  spawn(bin: string, args: string[], options: SpawnOptions): ChildHandle;
  signalGroup(pid: number | undefined, signal: NodeJS.Signals): void;
  /** What tells the live process `pid` from a later one with its pid (the parent watch takes its parent's at its start). */
  identify(pid: number): ProcessIdentity;
  /** Whether the process `identity` names still runs (lib/process.ts's one rule; the parent watch asks it once a second). */
  stillRuns(identity: ProcessIdentity): boolean;
  /** Which pi `bin` is (default: pi-version.ts's identifyPi, from its package.json or PI_SUBAGENTS_PI_VERSION). */
  identifyPi?(bin: string, env: NodeJS.ProcessEnv): PiIdentity;
  /** Whether any process of the group is left (the child's, after the child exited). */
  groupAlive(pgid: number): boolean;
  /**
   * Starts the orphan guard of a run (orphan-guard.ts), before its child is spawned and before
   * the run's temp folder `runTemp` is made (the guard removes it if the wrapper dies).
   */
  startGuard(runToken: string, reservePath: string, onError: (err: Error) => void, runTemp?: string): OrphanGuard;
  /** The live processes that carry the run's token (what left the child's group included). */
  tokenProcesses(runToken: string): Promise<number[]>;
  /** Signals one process. Never throws. */
  signalProcess(pid: number, signal: NodeJS.Signals): void;
  /**
   * How a verify check's command runs where the child worked, when that is not here as is (a
   * sandbox: inside the same boundary). Absent: `sh -c` in the cwd (check-process.ts).
   */
  checkLaunch?(command: string, cwd: string, env: Record<string, string>): Promise<CheckLaunch>;
  /** A round of verify checks on the far side where the child worked (a runner's), instead of here. */
  farChecks?(env: Record<string, string>): FarCheckRound;
  /** The run is over: what a runner kept for the run's later processes goes (the shared ssh connection). */
  end?(): Promise<void>;
}

/** One round of check commands on a far side (remote/far-checks.ts): each run in the child's cwd there. */
export interface FarCheckRound {
  run(command: string, timeoutMs: number, signal: AbortSignal): Promise<FarCheckResult>;
  /** The round is over: the far side keeps the workspace, and nothing of the round is left. */
  close(): Promise<void>;
}

export interface FarCheckResult {
  /** null: ended (its time-out, a stop) or it could not run. */
  exitCode: number | null;
  output: string;
  durationMs: number;
  /** The far side could not run it (an older serve, the connection): a repair cannot help. */
  cannotRun?: boolean;
}

/** A check command's process as a runner starts it: its argv, environment, fd 3, and what is undone after it. */
export interface CheckLaunch {
  file: string;
  args: string[];
  env: Record<string, string>;
  /** An open file the process gets as its fd 3 (a sandbox's seccomp filter); closed here once it has it. */
  fd3?: number | undefined;
  cleanup(): Promise<void> | void;
}

/**
 * Start pi in its own process group (so the wrapper can end the whole tree), stdin closed
 * (an open pipe would hang pi in json mode; RPC mode reads its commands there), never through a shell. Node's own spawn rather than execa:
 * the run needs none of execa's buffering or promise, and importing execa cost 56 ms of
 * every wrapper start (docs/architecture.md).
 */
export function spawnChild(bin: string, args: string[], options: SpawnOptions): ChildProcess {
  return spawn(bin, args, {
    cwd: options.cwd,
    env: childEnvironment(options),
    stdio: [runsRpc(args) ? "pipe" : "ignore", "pipe", "pipe"],
    detached: true,
    shell: false,
  }) as ChildProcess;
}

/** The child's environment: the run's, with what the task extension and the orphan guard read. */
export function childEnvironment(options: SpawnOptions): Record<string, string> {
  return {
    ...options.env,
    [ENV.taskFile]: options.taskFile,
    [ENV.wrapperPid]: String(process.pid),
    [ENV.runToken]: options.runToken,
    ...(options.inboxDir && { [ENV.inboxDir]: options.inboxDir }),
    ...(options.cwdReady && { [ENV.cwdReady]: options.cwdReady }),
  };
}

/** Signal the child's whole process group (falling back to its pid). Never throws. */
export function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (!pid) return;
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

function signalProcess(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

/**
 * Whether a live process of group `pgid` is left. kill(-pgid, 0) also counts zombies, which
 * never go away where nothing reaps orphans (a container whose pid 1 is not an init): on
 * Linux /proc then says whether a member that is not a zombie is left.
 */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
  return liveGroupMember(pgid) ?? true;
}

/** Whether /proc lists a process of group `pgid` that is not a zombie; undefined without /proc. */
function liveGroupMember(pgid: number): boolean | undefined {
  let entries: string[];
  try {
    entries = fs.readdirSync("/proc");
  } catch {
    return undefined;
  }
  for (const entry of entries) {
    if (entry.charCodeAt(0) > 57) continue; // not a pid
    const fields = procStatFields(entry);
    if (!fields) continue; // gone meanwhile
    const [state, , pgrp] = fields;
    if (Number(pgrp) === pgid && state !== "Z" && state !== "X") return true;
  }
  return false;
}

export const nodeChildOperations: ChildOperations = {
  resolvePi: resolvePiBinary,
  spawn: spawnChild,
  signalGroup,
  identify: processIdentity,
  stillRuns: sameProcessAlive,
  groupAlive,
  startGuard: startOrphanGuard,
  tokenProcesses: processesWithToken,
  signalProcess,
};
