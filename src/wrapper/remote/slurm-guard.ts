/**
 * The slurm guard: a job does not outlive a wrapper that is SIGKILLed. The run's orphan guard
 * (orphan-guard.ts) knows the child's process group and the run's token; for a slurm run that
 * reaches srun (SIGTERM to its group: srun cancels its job), but when srun is gone as well
 * (killed with the wrapper, or it cannot reach the controller within the guard's second
 * before SIGKILL) its job runs on until its time limit. So a slurm run starts one more tiny
 * `/bin/sh` beside srun, in a session of its own, holding a pipe from the wrapper as its
 * stdin. The run says `exit` once the last resort (slurm-job.ts ensureJobGone) has made sure
 * the job is gone; when the pipe closes without `exit` (the wrapper died, however it did),
 * the guard runs `scancel --name=<job>` (bounded by `timeout` where there is one) and exits.
 * The name is the run's alone, so that can cancel nothing else.
 *
 * Not covered: a guard that is itself killed, and a machine where `scancel` is not on the
 * PATH the run had.
 */
import { spawn } from "node:child_process";
import { ENV } from "../../contracts/env.js";
import { scancelArgv } from "../../contracts/runner-prefix.js";

/** How long the guard's scancel may take (where `timeout` exists). */
export const SLURM_GUARD_SCANCEL_S = 30;

/** The guard's program: `$@` is the scancel argv; stdin carries `exit` on a normal end. */
export const SLURM_GUARD_SCRIPT = `
while read -r word; do
  [ "$word" = exit ] && exit 0
done
if command -v timeout >/dev/null 2>&1; then
  exec timeout ${SLURM_GUARD_SCANCEL_S} "$@" >/dev/null 2>&1
fi
exec "$@" >/dev/null 2>&1
`;

export interface SlurmGuard {
  /** The job is gone: the guard exits without doing anything. Safe to call more than once. */
  release(): void;
  /** Closes the pipe without `exit`: the guard cancels the job (what the wrapper's death does). */
  close(): void;
}

/** Starts the guard of `jobName`; `env` is the run's (PATH, SLURM_CONF). Never throws. */
export function startSlurmGuard(jobName: string, env: NodeJS.ProcessEnv): SlurmGuard {
  // No run token of any run: a guard sweeping that token would end this one before its work.
  const guardEnv = { ...env };
  delete guardEnv[ENV.runToken];
  let released = false;
  try {
    const guard = spawn(
      "/bin/sh",
      ["-c", SLURM_GUARD_SCRIPT, "subagent-wrapper-slurm-guard", ...scancelArgv(jobName)],
      {
        detached: true,
        stdio: ["pipe", "ignore", "ignore"],
        env: guardEnv,
      },
    );
    guard.once("error", () => undefined);
    const stdin = guard.stdin;
    stdin.on("error", () => undefined);
    // Neither the guard nor its pipe keeps the wrapper alive: the wrapper's exit closes the pipe.
    guard.unref();
    (stdin as { unref?: () => void }).unref?.();
    return {
      release: () => {
        if (released) return;
        released = true;
        if (!stdin.destroyed && stdin.writable) stdin.write("exit\n");
        stdin.end();
      },
      close: () => {
        released = true;
        stdin.end();
      },
    };
  } catch {
    return { release: () => undefined, close: () => undefined };
  }
}
