/**
 * Run one program to completion with a hard time limit, for the git calls and the user's
 * worktree setup command. Node's own spawn rather than execFile because a time-out must end
 * the whole process group (git runs filters and aliases, `sh -c` runs whatever the user
 * wrote), and because a descendant that keeps our pipes open must not keep the promise
 * pending: this function always settles, and holds no timer or handle once it has.
 */

import { spawn } from "node:child_process";
import os from "node:os";

/** How much of stderr (and stdout) an error message quotes: the end, where the reason is. */
export const TAIL_CHARS = 600;
/** Between SIGTERM (git removes its lock files on it) and SIGKILL of the group. */
const KILL_GRACE_MS = 1000;
/** After the process has exited, how long its pipes may stay open (held by a straggler). */
const PIPE_GRACE_MS = 1000;
/** stderr kept while running; only its tail is ever shown. */
const STDERR_KEEP_BYTES = 64 * 1024;
const DEFAULT_MAX_STDOUT_BYTES = 64 * 1024 * 1024;

export interface RunOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  /** stdout beyond this fails the run (default 64 MiB); stdout is kept whole otherwise. */
  maxStdoutBytes?: number;
  /** Kill what is left of the process group once the leader has exited (setup commands). */
  killGroupOnExit?: boolean;
  /**
   * Scheduling priority (nice value, 0 normal, 19 lowest) set as soon as the process exists,
   * for work that should only use CPU time nothing else wants; what it starts inherits it.
   */
  niceness?: number;
}

export interface RunResult {
  /** null when the process was ended by a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  /** The end of stderr (at most 64 KiB), as text. */
  stderr: string;
  timedOut: boolean;
  /** stdout went over maxStdoutBytes and the process was stopped. */
  overflow: boolean;
}

/** The last `chars` characters of `text`, trimmed, with `…` when something was cut. */
export function tail(text: string, chars: number = TAIL_CHARS): string {
  const trimmed = text.trim();
  return trimmed.length <= chars ? trimmed : `…${trimmed.slice(trimmed.length - chars + 1)}`;
}

/** Signals a process group (its leader's pid); nothing when it is gone. */
export function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (!pid) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is gone (or never formed): nothing left to stop
  }
}

/**
 * Starts `file args` in its own process group (stdin closed, never through a shell unless
 * `file` is one). Rejects only when the program cannot be started at all; a non-zero exit,
 * a signal, a time-out or too much output are reported in the result.
 */
export function runProcess(file: string, args: readonly string[], options: RunOptions): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
      shell: false,
    });
    if (options.niceness !== undefined && child.pid) {
      try {
        os.setPriority(child.pid, options.niceness);
      } catch {
        // not allowed here (or already gone): it runs at the normal priority
      }
    }
    const maxStdout = options.maxStdoutBytes ?? DEFAULT_MAX_STDOUT_BYTES;
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = Buffer.alloc(0);
    let timedOut = false;
    let overflow = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let settled = false;
    let killTimer: NodeJS.Timeout | undefined;
    let pipeTimer: NodeJS.Timeout | undefined;

    const stop = (): void => {
      signalGroup(child.pid, "SIGTERM");
      killTimer ??= setTimeout(() => signalGroup(child.pid, "SIGKILL"), KILL_GRACE_MS);
    };
    const limitTimer = setTimeout(
      () => {
        timedOut = true;
        stop();
      },
      Math.max(1, options.timeoutMs),
    );

    const finish = (error?: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(limitTimer);
      if (killTimer) clearTimeout(killTimer);
      if (pipeTimer) clearTimeout(pipeTimer);
      child.stdout.destroy();
      child.stderr.destroy();
      if (error) {
        reject(error);
        return;
      }
      resolve({
        code: exit?.code ?? null,
        signal: exit?.signal ?? null,
        stdout: Buffer.concat(stdout),
        stderr: stderr.toString("utf8"),
        timedOut,
        overflow,
      });
    };

    child.stdout.on("data", (chunk: Buffer) => {
      if (overflow) return;
      stdoutBytes += chunk.length;
      if (stdoutBytes > maxStdout) {
        overflow = true;
        stop();
        return;
      }
      stdout.push(chunk);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr = Buffer.concat([stderr, chunk]);
      if (stderr.length > STDERR_KEEP_BYTES) stderr = stderr.subarray(stderr.length - STDERR_KEEP_BYTES);
    });
    child.on("error", (error) => finish(error));
    child.on("exit", (code, signal) => {
      exit = { code, signal };
      // After a time-out, whatever of the group ignored SIGTERM goes now, not after the grace.
      if (options.killGroupOnExit || timedOut || overflow) signalGroup(child.pid, "SIGKILL");
      // 'close' normally follows at once; a straggler holding the pipes must not hold us.
      pipeTimer = setTimeout(() => finish(), PIPE_GRACE_MS);
    });
    child.on("close", () => finish());
  });
}
