/**
 * `PI_SUBAGENTS_WORKTREE_SETUP`: the user's shell command run in each new worktree before the
 * child's first turn, to link or install what git does not carry (node_modules, build output,
 * `git submodule update --init`); docs/isolation.md, "The setup command".
 *
 * Unlike every git call this one goes through `/bin/sh -c`: it is a shell command by design.
 * It runs in its own process group with stdin closed; at the time limit the whole group is
 * stopped (SIGTERM, then SIGKILL), and whatever it left running in its group is killed when
 * it exits, so no process of a setup outlives it. Failure is an Error whose message ends
 * with the tail of stderr (of stdout when stderr is empty), which the spawn reports.
 */
import { launchProcess } from "../../lib/process-launcher.js";
import { tail } from "../../lib/run-process.js";

export interface SetupCommandOptions {
  command: string;
  cwd: string;
  timeoutMs: number;
  /** The command's whole environment (default `process.env`). */
  env?: NodeJS.ProcessEnv;
}

/** Resolves with the ends of stdout and stderr when the command exits 0. */
export async function runSetupCommand(options: SetupCommandOptions): Promise<{ stdout: string; stderr: string }> {
  const result = await launchProcess("/bin/sh", ["-c", options.command], {
    cwd: options.cwd,
    env: options.env ?? process.env,
    timeoutMs: options.timeoutMs,
    killGroupOnExit: true,
    maxStdoutBytes: 16 * 1024 * 1024,
  });
  const stdout = tail(result.stdout.toString("utf8"));
  const stderr = tail(result.stderr);
  if (result.code === 0 && !result.timedOut && !result.overflow) return { stdout, stderr };
  const how = result.timedOut
    ? `timed out after ${options.timeoutMs} ms`
    : result.overflow
      ? "wrote more than 16 MiB to stdout"
      : result.code === null
        ? `was killed by ${result.signal ?? "a signal"}`
        : `failed (exit ${result.code})`;
  const shown = options.command.length > 80 ? `${options.command.slice(0, 79)}…` : options.command;
  throw new Error(`worktree setup command ${JSON.stringify(shown)} ${how}: ${stderr || stdout || "(no output)"}`);
}
