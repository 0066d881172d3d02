/**
 * Process helpers for tests. Every child is started in its own process group and, on timeout
 * or `killAll()`, is killed through that group's pid — never by name — so a pi child and the
 * bash tool's grandchildren go together and nothing else on the machine is touched.
 */
import { type StdioOptions, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import type { Readable, Writable } from "node:stream";
import { processAlive } from "../../src/lib/process.js";
import { signalGroup } from "../../src/wrapper/child.js";

export interface SpawnOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Default `["ignore", "pipe", "pipe"]`: pi blocks on an open stdin pipe. */
  stdio?: StdioOptions;
  /** Written to stdin, which is then closed (forces stdin to `pipe`). */
  input?: string;
  /** Hard limit; the group gets SIGKILL when it passes. Default 30 s. */
  timeoutMs?: number;
  /** Not ended by killAll(): a daemon that a whole describe block shares (its owner stops it). */
  outlivesTests?: boolean;
}

export interface ProcessResult {
  pid: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  durationMs: number;
}

export interface SpawnedProcess {
  pid: number;
  /** Signals the whole process group (falls back to the pid alone). */
  kill(signal?: NodeJS.Signals): void;
  done: Promise<ProcessResult>;
  /** The child's stdout (utf8) as it comes, when piped; `done` still collects all of it. */
  stdout: Readable | null;
  /** The child's stdin, when piped (`stdio`) and not given as `input`. */
  stdin?: Writable | null;
}

const live = new Map<number, SpawnedProcess>();

export function spawnProcess(cmd: string, args: string[], opts: SpawnOptions = {}): SpawnedProcess {
  const stdio: StdioOptions =
    opts.input !== undefined ? ["pipe", "pipe", "pipe"] : (opts.stdio ?? ["ignore", "pipe", "pipe"]);
  const started = Date.now();
  const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio, detached: true, shell: false });
  let stdout = "";
  let stderr = "";
  let timedOut = false;
  child.stdout?.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr?.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  if (opts.input !== undefined) {
    child.stdin?.on("error", () => {}); // EPIPE when the child exits before reading everything
    child.stdin?.end(opts.input);
  }

  const pid = child.pid ?? -1;
  const kill = (signal: NodeJS.Signals = "SIGTERM") => signalGroup(pid > 0 ? pid : undefined, signal);

  const done = new Promise<ProcessResult>((resolve, reject) => {
    const timer = setTimeout(() => {
      timedOut = true;
      kill("SIGKILL");
    }, opts.timeoutMs ?? 30_000);
    child.on("error", (err) => {
      clearTimeout(timer);
      live.delete(pid);
      reject(err);
    });
    // "close" (not "exit") so stdout/stderr are fully drained.
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      live.delete(pid);
      resolve({ pid, code, signal, stdout, stderr, timedOut, durationMs: Date.now() - started });
    });
  });

  const handle: SpawnedProcess = { pid, kill, done, stdout: child.stdout, stdin: child.stdin };
  if (pid > 0 && opts.outlivesTests !== true) live.set(pid, handle);
  return handle;
}

export function runProcess(cmd: string, args: string[], opts: SpawnOptions = {}): Promise<ProcessResult> {
  return spawnProcess(cmd, args, opts).done;
}

/** SIGKILLs every process group still running that these helpers started (for afterEach). */
export async function killAll(): Promise<void> {
  const handles = [...live.values()];
  for (const h of handles) h.kill("SIGKILL");
  await Promise.allSettled(handles.map((h) => h.done));
}

/** True while `pid` exists (zombies included). EPERM means it exists but is not ours. */
export const pidAlive = processAlive;

/** Polls until `pid` is gone; false if it is still alive after `timeoutMs`. */
export async function waitForPidExit(pid: number, timeoutMs = 5_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!pidAlive(pid)) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return !pidAlive(pid);
}

/** True while `pid` runs: alive and not a zombie (an orphan waits for a busy init to reap it). */
export function pidRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}
