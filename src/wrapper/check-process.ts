/**
 * One check command: `sh -c <command>` in the child's cwd, in a process group of its own
 * (its time-out and a stop end everything it started), stdin closed, the child's environment
 * (with the run's token, so the orphan guard ends it if the wrapper dies), stdout and stderr
 * together as the user would see them in a terminal, only their end kept.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import { CHECK_OUTPUT_CHARS } from "../contracts/verify.js";
import type { Clock, TimerHandle } from "../lib/clock.js";
import { tailChars } from "../lib/text.js";
import { type CheckLaunch, signalGroup } from "./child.js";

/** Between SIGTERM and SIGKILL of a check's group. */
export const CHECK_KILL_AFTER_MS = 1000;
/** Output kept while a check runs: a few times what is shown, so a cut never falls mid-character. */
const KEEP_CHARS = CHECK_OUTPUT_CHARS * 4;

export interface CheckProcessOptions {
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  clock: Clock;
  /** Ends the check at once (the run is stopped: a signal, its time limit). */
  signal?: AbortSignal;
  /** How a runner runs it (inside a sandbox), instead of `/bin/sh -c` here. */
  launch?: CheckLaunch | undefined;
}

export interface CheckProcessResult {
  /** null when it was ended (its time-out, a stop, a signal). */
  exitCode: number | null;
  /** The end of its output, with why it was ended when it was. */
  output: string;
  durationMs: number;
}

/** Runs one command to its end; never rejects (a command that cannot start is a failed check). */
export function runCheckCommand(command: string, options: CheckProcessOptions): Promise<CheckProcessResult> {
  const started = options.clock.now();
  return new Promise((resolve) => {
    let output = "";
    let ended: string | undefined;
    let settled = false;
    const timers: TimerHandle[] = [];
    const keep = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      if (output.length > KEEP_CHARS) output = output.slice(-KEEP_CHARS);
    };
    const launch = options.launch;
    const child = spawn(launch?.file ?? "/bin/sh", launch?.args ?? ["-c", command], {
      cwd: options.cwd,
      env: launch?.env ?? options.env,
      stdio: launch?.fd3 === undefined ? ["ignore", "pipe", "pipe"] : ["ignore", "pipe", "pipe", launch.fd3],
      detached: true,
    });
    if (launch?.fd3 !== undefined) fs.closeSync(launch.fd3);
    const stop = (why: string) => {
      if (ended !== undefined) return;
      ended = why;
      signalGroup(child.pid, "SIGTERM");
      timers.push(options.clock.setTimeout(() => signalGroup(child.pid, "SIGKILL"), CHECK_KILL_AFTER_MS));
    };
    const finish = (exitCode: number | null) => {
      if (settled) return;
      settled = true;
      for (const timer of timers) options.clock.clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
      void Promise.resolve()
        .then(() => launch?.cleanup())
        .catch(() => undefined);
      // What the command left behind in its group goes with it: nothing of a check outlives it.
      signalGroup(child.pid, "SIGKILL");
      const note = ended === undefined ? "" : `\n[${ended}]`;
      resolve({
        exitCode: ended === undefined ? exitCode : null,
        output: tailChars(`${output.trimEnd()}${note}`, CHECK_OUTPUT_CHARS),
        durationMs: options.clock.now() - started,
      });
    };
    const onAbort = () => stop("stopped: the run was stopped");
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    child.once("error", (err) => {
      output += `cannot start /bin/sh: ${err.message}`;
      finish(null);
    });
    // `close`: the output is complete. A straggler holding the pipes is ended with the group on `exit`.
    child.once("exit", (code) => {
      signalGroup(child.pid, "SIGKILL");
      timers.push(options.clock.setTimeout(() => finish(code), CHECK_KILL_AFTER_MS));
      child.once("close", () => finish(code));
    });
    timers.push(
      options.clock.setTimeout(
        () => stop(`timed out after ${Math.round(options.timeoutMs / 1000)} s`),
        options.timeoutMs,
      ),
    );
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener("abort", onAbort, { once: true });
  });
}
