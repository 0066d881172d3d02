import fs from "node:fs";

/** Whether a process is alive (EPERM means it is, but belongs to someone else). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * What tells one process apart from a later one that got the same pid (after a reboot, or
 * once pids wrap): its start time in clock ticks since boot (field 22 of /proc/<pid>/stat)
 * and the boot it belongs to. Both are undefined where /proc does not exist.
 */
export interface ProcessIdentity {
  pid: number;
  startTicks?: string;
  bootId?: string;
}

function readProc(file: string): string | undefined {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/**
 * The fields of /proc/<pid>/stat from field 3 on — `[state, ppid, pgrp, session, …]` —
 * undefined when the process is gone or there is no /proc. They follow the last ")": the
 * command name before them may hold spaces and parentheses.
 */
export function procStatFields(pid: number | string): string[] | undefined {
  const stat = readProc(`/proc/${pid}/stat`);
  return stat === undefined ? undefined : stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** Field 22 (starttime) of /proc/<pid>/stat: the 20th from field 3. */
function startTicks(pid: number): string | undefined {
  return procStatFields(pid)?.at(19);
}

export function processIdentity(pid: number): ProcessIdentity {
  const ticks = startTicks(pid);
  const boot = readProc("/proc/sys/kernel/random/boot_id")?.trim();
  return { pid, ...(ticks && { startTicks: ticks }), ...(boot && { bootId: boot }) };
}

/**
 * Whether `recorded` is still running: the same pid, started at the same tick of the same
 * boot. A process of another user (EPERM) is never one this process started. Without a
 * recorded start time (or without /proc) only the pid can be checked.
 */
export function sameProcessAlive(recorded: ProcessIdentity): boolean {
  try {
    process.kill(recorded.pid, 0);
  } catch {
    return false;
  }
  const now = processIdentity(recorded.pid);
  if (recorded.bootId && now.bootId && recorded.bootId !== now.bootId) return false;
  if (recorded.startTicks && now.startTicks) return recorded.startTicks === now.startTicks;
  return true;
}

/** The arguments a live process was started with (Linux /proc), undefined when unreadable. */
export function processArgs(pid: number): string[] | undefined {
  const cmdline = readProc(`/proc/${pid}/cmdline`);
  return cmdline ? cmdline.split("\0").filter((arg) => arg !== "") : undefined;
}
