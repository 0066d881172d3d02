import { type ChildProcessByStdio, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { ENV } from "../contracts/env.js";
import { effectiveModel, type MetaV1 } from "../contracts/meta.js";
import type { PiIdentity } from "./pi-version.js";
import { TASK_PLACEHOLDER } from "./task-extension.js";

/** The compiled task-delivery extension that sits beside this module. */
export const TASK_EXTENSION_PATH = fileURLToPath(new URL("./task-extension.js", import.meta.url));

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
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    if (dir === "") continue;
    const candidate = path.resolve(cwd, dir, name);
    if (isExecutableFile(candidate)) return candidate;
  }
  const hint = configured ? `(from ${ENV.piBin})` : `(install @mariozechner/pi-coding-agent or set ${ENV.piBin})`;
  throw new PiNotFoundError(`pi executable "${name}" was not found on PATH ${hint}`);
}

/**
 * The child's arguments. The task itself never appears here: it travels in a file that the
 * task extension hands to pi (see task-extension.ts), so it is never mangled, never
 * length-limited and never shows up in `ps`.
 */
export function buildChildArgs(meta: MetaV1, taskExtensionPath = TASK_EXTENSION_PATH): string[] {
  const args = ["--mode", "json", "--no-prompt-templates"];
  // pi expands `/skill:name` even in transformed input; without skills it stays verbatim.
  if (meta.task.startsWith("/skill:")) args.push("--no-skills");
  const model = effectiveModel(meta);
  if (model) args.push("--model", model);
  if (meta.thinking) args.push("--thinking", meta.thinking);
  if (meta.tools) args.push(...(meta.tools.length === 0 ? ["--no-tools"] : ["--tools", meta.tools.join(",")]));
  if (meta.noExtensions) args.push("--no-extensions");
  if (meta.noContextFiles) args.push("--no-context-files");
  for (const extension of meta.extensions ?? []) args.push("--extension", extension);
  args.push("--extension", taskExtensionPath);
  if (meta.systemPromptPath) args.push("--append-system-prompt", meta.systemPromptPath);
  args.push(...(meta.sessionPath ? ["--session", meta.sessionPath] : ["--no-session"]));
  args.push(TASK_PLACEHOLDER);
  return args;
}

export type ChildProcess = ChildProcessByStdio<null, Readable, Readable>;

/** What the run needs of its child: a pid, its output streams and three lifecycle events. */
export interface ChildHandle {
  readonly pid?: number | undefined;
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
  /** The live-message folder the task extension watches (meta.json `inboxPath`), when the run has one. */
  inboxDir?: string;
}

/**
 * How a run reaches processes. The defaults are the real ones below; a test passes a fake
 * child that prints lines and exits when told, and records the signals it is sent.
 */
export interface ChildOperations {
  resolvePi(env: NodeJS.ProcessEnv, cwd: string): string;
  spawn(bin: string, args: string[], options: SpawnOptions): ChildHandle;
  signalGroup(pid: number | undefined, signal: NodeJS.Signals): void;
  /** Whether the process exists and can be signalled (the parent watch asks it once a second). */
  canSignal(pid: number): boolean;
  /** Which pi `bin` is (default: pi-version.ts's identifyPi, from its package.json or PI_SUBAGENTS_PI_VERSION). */
  identifyPi?(bin: string, env: NodeJS.ProcessEnv): PiIdentity;
}

/**
 * Start pi in its own process group (so the wrapper can end the whole tree), stdin closed
 * (an open pipe would hang pi), never through a shell. Node's own spawn rather than execa:
 * the run needs none of execa's buffering or promise, and importing execa cost 56 ms of
 * every wrapper start (docs/architecture.md).
 */
export function spawnChild(bin: string, args: string[], options: SpawnOptions): ChildProcess {
  return spawn(bin, args, {
    cwd: options.cwd,
    env: {
      ...options.env,
      [ENV.taskFile]: options.taskFile,
      [ENV.wrapperPid]: String(process.pid),
      ...(options.inboxDir && { [ENV.inboxDir]: options.inboxDir }),
    },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
    shell: false,
  });
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

/** Whether `pid` can be signalled; any failure (gone, or not ours) counts as no. */
function canSignal(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export const nodeChildOperations: ChildOperations = { resolvePi: resolvePiBinary, spawn: spawnChild, signalGroup, canSignal };
