/**
 * What is left of a run's processes once its child has exited: stragglers in the child's
 * process group, and processes that carry the run's token but left the group (`setsid`, pi's
 * detached bash tool). Each gets SIGTERM, then SIGKILL if it is still there
 * STRAGGLER_KILL_MS later.
 */
import type { Clock } from "../lib/clock.js";
import type { ChildOperations } from "./child.js";
import type { RunTimers } from "./run-timers.js";

/** After the child exited and its group (or a straggler outside it) got SIGTERM, how long it has before SIGKILL. */
export const STRAGGLER_KILL_MS = 1000;
/** How often the child's group is looked at while stragglers are ending. */
export const GROUP_POLL_MS = 50;

export interface StragglerWatch {
  processes: ChildOperations;
  clock: Clock;
  timers: RunTimers;
}

/**
 * Waits for the child's group to empty, SIGKILL for a straggler that ignores the SIGTERM sent
 * at `termAt`. Resolves true once the group is gone; false when it is still there after the
 * SIGKILL (a process stuck in the kernel): then the orphan guard must not be told it is gone,
 * so that, should the wrapper die before the group's end, the guard signals it once more.
 */
export async function endGroup(watch: StragglerWatch, pgid: number, termAt: number): Promise<boolean> {
  const { processes, clock, timers } = watch;
  let killed = false;
  while (processes.groupAlive(pgid)) {
    const left = termAt + STRAGGLER_KILL_MS - clock.now();
    if (left <= 0) {
      if (killed) return false;
      processes.signalGroup(pgid, "SIGKILL");
      killed = true;
    }
    await timers.sleep(left > 0 ? Math.min(GROUP_POLL_MS, left) : GROUP_POLL_MS);
  }
  return true;
}

/**
 * The processes that carry the run's token: SIGTERM, then SIGKILL for those still there
 * STRAGGLER_KILL_MS later; then it waits (as long again at most: one stuck in the kernel does
 * not hold the run) until they are gone, so none is left once the wrapper has exited.
 */
export async function endTokenProcesses(watch: StragglerWatch, runToken: string): Promise<void> {
  let left = await watch.processes.tokenProcesses(runToken);
  if (left.length === 0) return;
  for (const pid of left) watch.processes.signalProcess(pid, "SIGTERM");
  left = await lookUntilGone(watch, runToken, left);
  if (left.length === 0) return;
  for (const pid of left) watch.processes.signalProcess(pid, "SIGKILL");
  await lookUntilGone(watch, runToken, await watch.processes.tokenProcesses(runToken));
}

/** Looks again every GROUP_POLL_MS, for STRAGGLER_KILL_MS at most, while any is left; returns those left. */
async function lookUntilGone(watch: StragglerWatch, runToken: string, left: number[]): Promise<number[]> {
  const { processes, clock, timers } = watch;
  const deadline = clock.now() + STRAGGLER_KILL_MS;
  while (left.length > 0 && clock.now() < deadline) {
    await timers.sleep(Math.min(GROUP_POLL_MS, deadline - clock.now()));
    left = await processes.tokenProcesses(runToken);
  }
  return left;
}
