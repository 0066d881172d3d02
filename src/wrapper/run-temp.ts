/**
 * The run's own folder in the temp folder, `pi-subagent-run-<pid>-<hex>` (mode 0700): what a
 * run keeps in the temp folder lives in it — the task's text for the child (the wrapper's
 * half of the task hand-off, contracts/task-handoff.ts: the task extension inside the child
 * reads it once and removes it), the limits' private inbox, a runner's workspace bundles — so
 * one removal takes it all: the run's own when it is over, whatever happened, or the orphan
 * guard's (orphan-guard.ts) when the wrapper was killed before it could. The folder is made
 * only once the guard runs: from then on a SIGKILL leaves none of it.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/** The task file's name in the run's folder. */
const TASK_FILE = "task.txt";
/** The limits' private inbox's name in the run's folder (limits.ts). */
const PRIVATE_INBOX = "inbox";

/** A fresh name in the temp folder, unique to this wrapper and run (nothing is made yet). */
export function runTempPath(): string {
  return path.join(os.tmpdir(), `pi-subagent-run-${process.pid}-${randomBytes(6).toString("hex")}`);
}

/** Makes the run's folder, readable by this user only; never over an existing one. */
export function makeRunTemp(dir: string): Promise<void> {
  return fs.promises.mkdir(dir, { mode: 0o700 }).then(() => undefined);
}

/** The task file in the run's folder `dir`. */
export const taskFileIn = (dir: string): string => path.join(dir, TASK_FILE);

/** The limits' private inbox in the run's folder `dir` (made by its user). */
export const privateInboxIn = (dir: string): string => path.join(dir, PRIVATE_INBOX);

/** Writes the task, readable by this user only; never over an existing file. */
export function writeTaskFile(file: string, task: string): Promise<void> {
  return fs.promises.writeFile(file, task, { encoding: "utf8", mode: 0o600, flag: "wx" });
}

/** Removes the file if it is still there; never throws. */
export async function removeTaskFile(file: string): Promise<void> {
  await fs.promises.rm(file, { force: true }).catch(() => undefined);
}

/** Removes the run's folder and all it holds, if it is still there; never throws. */
export async function removeRunTemp(dir: string): Promise<void> {
  await fs.promises.rm(dir, { recursive: true, force: true }).catch(() => undefined);
}
