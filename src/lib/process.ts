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

/** The state letter of /proc/<pid>/stat (R, S, D, T, Z, X…); undefined when gone or without /proc. */
export function processState(pid: number | string): string | undefined {
  return procStatFields(pid)?.[0];
}

/** Zombie (Z) and dead (X) processes have exited: only their entry waits to be reaped. */
const EXITED_STATES = new Set(["Z", "X"]);

/**
 * Alive and not exited: a zombie nobody reaps yet (an orphan whose init is slow) has ended all
 * the same, and Linux's /proc says so. Without /proc, or when its stat cannot be read, only the
 * pid is checked.
 */
export function processRunning(pid: number): boolean {
  if (!processAlive(pid)) return false;
  const state = processState(pid);
  return state === undefined || !EXITED_STATES.has(state);
}

/** Whether an environ file's bytes hold `entry` (`KEY=value`) as one whole NUL-ended entry. */
function environHolds(environ: Buffer, entry: string): boolean {
  // Each entry ends with NUL; one in front makes the first entry match too.
  return Buffer.concat([Buffer.from([0]), environ]).includes(Buffer.from(`\0${entry}\0`));
}

function procPids(entries: string[]): number[] {
  return entries.filter((name) => /^\d+$/.test(name) && Number(name) !== process.pid).map(Number);
}

function runningWithEnviron(pid: number, environ: Buffer | undefined, entry: string): boolean {
  if (environ === undefined || !environHolds(environ, entry)) return false;
  const state = processState(pid);
  return state !== undefined && !EXITED_STATES.has(state);
}

/**
 * The running processes (zombies and dead ones excluded, this one too) whose environment holds
 * `entry` (`KEY=value`, inherited by everything started below whoever set it); [] without /proc.
 * Another user's processes cannot be read and are never listed.
 */
export function processesWithEnvSync(entry: string): number[] {
  let entries: string[];
  try {
    entries = fs.readdirSync("/proc");
  } catch {
    return [];
  }
  return procPids(entries).filter((pid) => {
    try {
      return runningWithEnviron(pid, fs.readFileSync(`/proc/${pid}/environ`), entry);
    } catch {
      return false; // gone, or not ours
    }
  });
}

/** processesWithEnvSync without blocking: one look at /proc reads every process's environ. */
export async function processesWithEnv(entry: string): Promise<number[]> {
  let entries: string[];
  try {
    entries = await fs.promises.readdir("/proc");
  } catch {
    return [];
  }
  const found = await Promise.all(
    procPids(entries).map(async (pid) => {
      const environ = await fs.promises.readFile(`/proc/${pid}/environ`).catch(() => undefined);
      return runningWithEnviron(pid, environ, entry) ? pid : undefined;
    }),
  );
  return found.filter((pid): pid is number => pid !== undefined);
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
