/**
 * The wrapper's half of the task hand-off (contracts/task-handoff.ts): the task's exact text in
 * a private temp file, which the task extension inside the child reads once and removes. The
 * run removes it too, whatever happened, when it is over.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/** A fresh name in the temp folder, unique to this wrapper and run. */
export function taskFilePath(): string {
  return path.join(os.tmpdir(), `pi-subagent-task-${process.pid}-${randomBytes(6).toString("hex")}.txt`);
}

/** Writes the task, readable by this user only; never over an existing file. */
export function writeTaskFile(file: string, task: string): Promise<void> {
  return fs.promises.writeFile(file, task, { encoding: "utf8", mode: 0o600, flag: "wx" });
}

/** Removes the file if it is still there; never throws. */
export async function removeTaskFile(file: string): Promise<void> {
  await fs.promises.rm(file, { force: true }).catch(() => undefined);
}
