/**
 * `subagent-wrapper stop <tree dir | run dir>`: stops the turns that run there — most
 * often ones a root left running when it went away (detached). Each wrapper gets SIGTERM, as
 * the extension's own stop does: it stops its pi and writes result.json `interrupted` (the
 * agent is resumable by a follow-up), within its own bounds. A wrapper is signalled only
 * when its wrapper.pid proves the live process is that wrapper (the same pid, start time and
 * boot, checked again just before the signal): a pid reused by another process is never
 * signalled. A run whose wrapper.pid holds only a pid (an older version's file) while some
 * process holds that pid is named on stderr, one line, and not signalled. Exit 0 once none
 * is left running, 1 when one is still running after the wait or one could not be told
 * apart, 2 for a path that is neither a tree directory nor a run directory.
 */
import path from "node:path";
import { type Clock, sleep, systemClock } from "../lib/clock.js";
import { sameProcessAlive } from "../lib/process.js";
import { isTreeDirectory } from "./inspect-tree.js";
import {
  isRunDirectory,
  type LiveRun,
  liveRunAt,
  liveRuns,
  liveWrapper,
  treeRuns,
  unprovenWrapper,
} from "./live-runs.js";

/** How long `stop` waits for the stopped wrappers to write their result and exit. */
export const STOP_WAIT_MS = 20_000;
const POLL_MS = 100;

export interface StopDeps {
  out(line: string): void;
  err(line: string): void;
  clock: Clock;
  signal(pid: number): void;
}

const systemDeps: StopDeps = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  clock: systemClock,
  signal: (pid) => process.kill(pid, "SIGTERM"),
};

export async function stopCommand(target: string, deps: StopDeps = systemDeps, waitMs = STOP_WAIT_MS): Promise<number> {
  const dir = path.resolve(target);
  let runs: LiveRun[];
  let candidates: Array<{ runDir: string; agent: string }>;
  if (isRunDirectory(dir)) {
    candidates = [{ runDir: dir, agent: path.basename(dir) }];
    const run = liveRunAt(dir, path.basename(dir));
    runs = run ? [run] : [];
  } else if (isTreeDirectory(dir)) {
    candidates = treeRuns(dir);
    runs = liveRuns(dir);
  } else {
    deps.err(`subagent-wrapper stop: ${target} is neither a tree directory nor a run directory`);
    return 2;
  }
  const unproven = candidates.flatMap(({ runDir, agent }) => {
    const pid = unprovenWrapper(runDir);
    return pid === undefined ? [] : [{ runDir, agent, pid }];
  });
  for (const { runDir, agent, pid } of unproven) {
    deps.err(
      `not stopped: ${agent} (${path.basename(runDir)}): its wrapper.pid holds only pid ${pid} (an older version's file), which cannot tell its wrapper from a process that reused the pid`,
    );
  }
  if (runs.length === 0) {
    if (unproven.length > 0) return 1;
    deps.out("nothing is running there");
    return 0;
  }
  for (const run of runs) {
    // Checked again just before: never a signal to a pid that now belongs to another process.
    if (!sameProcessAlive(run.wrapper)) continue;
    try {
      deps.signal(run.wrapper.pid);
    } catch {
      // gone meanwhile
    }
  }
  const deadline = deps.clock.now() + waitMs;
  let left = runs;
  while (left.length > 0 && deps.clock.now() < deadline) {
    await sleep(deps.clock, POLL_MS);
    left = left.filter((run) => liveWrapper(run.runDir) !== undefined);
  }
  for (const run of runs) {
    const still = left.includes(run);
    deps.out(
      `${still ? "still running" : "stopped"}: ${run.agent} (${path.basename(run.runDir)}, wrapper pid ${run.wrapper.pid})`,
    );
  }
  if (left.length > 0) {
    deps.err(`subagent-wrapper stop: ${left.length} still running after ${Math.round(waitMs / 1000)} s`);
    return 1;
  }
  return unproven.length > 0 ? 1 : 0;
}
