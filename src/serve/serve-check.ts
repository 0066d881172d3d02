/**
 * A check run's command on the far side (a `check` frame): `sh -c <command>` in the workspace
 * the agent's last turn left here, in a process group of its own (its time-out, a stop and the
 * end of the run end everything it started), stdin closed, the far side's environment with
 * the child's (`env`), stdout and stderr together, only their end kept. The far side's own
 * counterpart of the local wrapper's check-process.ts (serve imports only contracts and
 * in-child code: it runs from an installed package on a machine that never saw the parent).
 */
import { spawn } from "node:child_process";
import { ENV } from "../contracts/env.js";
import type { CheckRequest, CheckResult } from "../contracts/serve-protocol.js";
import { CHECK_OUTPUT_CHARS } from "../contracts/verify.js";

/** Between SIGTERM and SIGKILL of a check's group. */
export const FAR_CHECK_KILL_AFTER_MS = 1000;
/** Output kept while a check runs: a few times what is sent, so a cut never falls mid-character. */
const KEEP_CHARS = CHECK_OUTPUT_CHARS * 4;

function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (!pid) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // gone
  }
}

/** One check command at work; `done` never rejects (a command that cannot start is a failed check). */
export class FarCheck {
  readonly done: Promise<CheckResult>;
  private stopWhy: ((why: string) => void) | undefined;
  private kill: (() => void) | undefined;

  constructor(request: CheckRequest, cwd: string, token: string) {
    this.done = new Promise((resolve) => {
      const started = Date.now();
      let output = "";
      let ended: string | undefined;
      let settled = false;
      const timers: NodeJS.Timeout[] = [];
      const child = spawn("/bin/sh", ["-c", request.command], {
        cwd,
        env: { ...process.env, ...request.env, [ENV.runToken]: token },
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
      });
      const keep = (chunk: Buffer) => {
        output += chunk.toString("utf8");
        if (output.length > KEEP_CHARS) output = output.slice(-KEEP_CHARS);
      };
      const finish = (code: number | null) => {
        if (settled) return;
        settled = true;
        for (const timer of timers) clearTimeout(timer);
        // What the command left behind in its group goes with it.
        signalGroup(child.pid, "SIGKILL");
        const note = ended === undefined ? "" : `\n[${ended}]`;
        resolve({
          t: "check_result",
          exit_code: ended === undefined ? code : null,
          output: `${output.trimEnd()}${note}`.slice(-CHECK_OUTPUT_CHARS),
          duration_ms: Date.now() - started,
        });
      };
      this.stopWhy = (why) => {
        if (ended !== undefined || settled) return;
        ended = why;
        signalGroup(child.pid, "SIGTERM");
        timers.push(setTimeout(() => signalGroup(child.pid, "SIGKILL"), FAR_CHECK_KILL_AFTER_MS));
      };
      this.kill = () => signalGroup(child.pid, "SIGKILL");
      child.stdout.on("data", keep);
      child.stderr.on("data", keep);
      child.once("error", (err) => {
        output += `cannot start /bin/sh: ${err.message}`;
        finish(null);
      });
      // `close`: the output is complete; a straggler holding the pipes is ended with the group on `exit`.
      child.once("exit", (code) => {
        signalGroup(child.pid, "SIGKILL");
        timers.push(setTimeout(() => finish(code), FAR_CHECK_KILL_AFTER_MS));
        child.once("close", () => finish(code));
      });
      timers.push(
        setTimeout(
          () => this.stopWhy?.(`timed out after ${Math.round(request.timeout_ms / 1000)} s`),
          request.timeout_ms,
        ),
      );
    });
  }

  /** Ends the check (SIGTERM to its group, SIGKILL a second later); its result says why. */
  stop(why: string): void {
    this.stopWhy?.(why);
  }

  /** The run is over: nothing of the check is left, at once. */
  dispose(): void {
    this.stop("stopped: the check run ended");
    this.kill?.();
  }
}
