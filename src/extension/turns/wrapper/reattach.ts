/**
 * A turn whose wrapper outlived the parent process that started it (the parent was killed,
 * or left with `onExit: detach`), taken back by a restarted parent: the same RunningTurn the
 * launcher returns, built from the run directory and the wrapper's recorded identity. Its end
 * is seen the moment result.json appears (a watch on the run directory, a poll as the
 * fallback) or once the wrapper is gone; none of its handles holds pi's event loop.
 */
import path from "node:path";
import { RUN_FILES } from "../../../contracts/layout.js";
import type { ResultV1 } from "../../../contracts/result.js";
import { type Clock, systemClock } from "../../../lib/clock.js";
import { type ProcessIdentity, processRunning, sameProcessAlive } from "../../../lib/process.js";
import type { RunningTurn } from "./launcher.js";
import { watchResultFile } from "./result-watch.js";
import { type RunRead, readRunResult, readWrapperPid, wrapperRunning } from "./run-reads.js";

/** Whether the recorded wrapper still runs (a zombie its dead parent left is not running). */
export function wrapperAtWork(wrapper: ProcessIdentity, runDir: string): boolean {
  return wrapperRunning(wrapper, runDir) && processRunning(wrapper.pid);
}

/**
 * The run's wrapper as a RunningTurn when it still runs and has not written its result;
 * undefined otherwise (the run is read as it stands then).
 */
export async function reattachTurn(runDir: string, clock: Clock = systemClock): Promise<RunningTurn | undefined> {
  const wrapper = await readWrapperPid(runDir);
  if (!wrapper || !wrapperAtWork(wrapper, runDir)) return undefined;
  const first = await readRunResult(runDir);
  if (first.result || first.damaged) return undefined;
  return watchedTurn(runDir, wrapper, clock);
}

function watchedTurn(runDir: string, wrapper: ProcessIdentity, clock: Clock): RunningTurn {
  let damaged: string | undefined;
  let howExited: string | undefined;
  let stopWatch: () => void = () => undefined;
  const finished = new Promise<ResultV1 | undefined>((resolve) => {
    let reading = false;
    let over = false;
    const end = (read: RunRead, how: string) => {
      if (over) return;
      over = true;
      stopWatch();
      damaged = read.damaged;
      howExited = how;
      resolve(read.result);
    };
    const look = () => {
      if (reading || over) return;
      reading = true;
      const alive = wrapperAtWork(wrapper, runDir);
      void readRunResult(runDir)
        .then((read) => {
          if (read.result || read.damaged) end(read, "exited (re-attached)");
          else if (!alive) end(read, "gone while re-attached");
        })
        .catch(() => undefined)
        .finally(() => {
          reading = false;
        });
    };
    stopWatch = watchResultFile(runDir, look, clock);
    look();
  });
  return {
    runDir,
    runName: path.basename(runDir),
    pid: wrapper.pid,
    finished,
    howExited: () => howExited,
    damagedResult: () => damaged,
    stop: () => {
      // Never a signal to a pid that now belongs to another process.
      if (!sameProcessAlive(wrapper)) return;
      try {
        process.kill(wrapper.pid, "SIGTERM");
      } catch {
        // already gone
      }
    },
  };
}

/** The run's result.json file (for tests and the CLI). */
export function resultFileOf(runDir: string): string {
  return path.join(runDir, RUN_FILES.result);
}
