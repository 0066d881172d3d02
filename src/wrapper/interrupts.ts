/**
 * What stops a run from outside: a signal to the wrapper (its owner asking: the parent that
 * started it, `subagent-wrapper stop`), the parent named in PI_SUBAGENTS_PARENT_PID going away
 * (set below a tree's root only: a root's turns outlive it), or its result's folder
 * removed under it (the tree directory deleted: nobody could read its end). Each calls the
 * run's `interrupt` with the reason, which result.json then carries.
 */
import fs from "node:fs";
import path from "node:path";
import { ENV } from "../contracts/env.js";
import type { MetaV1 } from "../contracts/meta.js";
import type { Clock } from "../lib/clock.js";
import type { ProcessIdentity } from "../lib/process-identity.js";

/** How often the parent named in PI_SUBAGENTS_PARENT_PID is looked for. */
export const PARENT_CHECK_MS = 1000;

const STOP_SIGNALS = ["SIGTERM", "SIGINT", "SIGHUP"] as const;

/** Handles SIGTERM, SIGINT and SIGHUP to the wrapper; the returned function removes the handlers. */
export function onStopSignals(interrupt: (reason: string) => void): () => void {
  const handlers = STOP_SIGNALS.map((signal) => {
    const handler = () => interrupt(`subagent-wrapper received ${signal}`);
    process.on(signal, handler);
    return () => process.off(signal, handler);
  });
  return () => {
    for (const remove of handlers) remove();
  };
}

/** How the parent watch tells its parent from a process that got its pid later (child.ts ChildOperations). */
export interface ParentCheck {
  identify(pid: number): ProcessIdentity;
  stillRuns(identity: ProcessIdentity): boolean;
}

/**
 * Looks for the parent named in PI_SUBAGENTS_PARENT_PID every PARENT_CHECK_MS and interrupts
 * the run once it is gone. The parent is its identity taken as the watch starts, not its pid:
 * a parent that died (a zombie included) is gone even once another process holds its pid.
 * Undefined when the environment names no parent; otherwise the function that stops the watch.
 */
export function watchParent(
  env: NodeJS.ProcessEnv,
  clock: Clock,
  check: ParentCheck,
  interrupt: (reason: string) => void,
): (() => void) | undefined {
  const parentPid = Number(env[ENV.parentPid]);
  if (!Number.isInteger(parentPid) || parentPid <= 1) return undefined;
  const parent = check.identify(parentPid);
  const timer = clock.setInterval(() => {
    if (check.stillRuns(parent)) return;
    clock.clearInterval(timer);
    interrupt(`parent process ${parentPid} is gone`);
  }, PARENT_CHECK_MS);
  return () => clock.clearInterval(timer);
}

/**
 * Looks every PARENT_CHECK_MS for the folder of the run's result.json and interrupts the run
 * once it is gone, having been there (the tree directory was deleted under a detached turn): the run still ends,
 * within its usual bounds, and leaves no process. The function returned stops the watch.
 */
export function watchResultFolder(
  folder: string,
  clock: Clock,
  exists: (folder: string) => boolean,
  interrupt: (reason: string) => void,
): () => void {
  // Only a folder that was there goes away: one the run has not made yet is not news.
  let seen = false;
  const timer = clock.setInterval(() => {
    if (exists(folder)) {
      seen = true;
      return;
    }
    if (!seen) return;
    clock.clearInterval(timer);
    interrupt(`its run folder ${folder} was removed`);
  }, PARENT_CHECK_MS);
  return () => clock.clearInterval(timer);
}

/**
 * The run's watches for an end from outside: the parent named in the environment, and for a
 * tree's turn (which may run detached) its result's folder. The functions returned stop them.
 */
export function watchRunEnds(
  env: NodeJS.ProcessEnv,
  meta: MetaV1,
  clock: Clock,
  check: ParentCheck,
  interrupt: (reason: string) => void,
): Array<() => void> {
  const stops: Array<() => void> = [];
  const parent = watchParent(env, clock, check, interrupt);
  if (parent) stops.push(parent);
  // A tree's turn whose tree directory is deleted still ends.
  if (meta.env?.[ENV.treeDir]) {
    const folder = path.dirname(meta.resultPath);
    stops.push(watchResultFolder(folder, clock, (dir) => fs.existsSync(dir), interrupt));
  }
  return stops;
}
