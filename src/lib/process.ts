import fs from "node:fs";
import { MAX_IDENTITY_FILE_BYTES, type ProcessIdentity, parseProcessIdentity } from "./process-identity.js";
import { readRegularFile, readRegularFileSync } from "./regular-file.js";

/** Whether a process is alive (EPERM means it is, but belongs to someone else). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

export type { ProcessIdentity };

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

function runningWithEnviron(pid: number, environ: Buffer | undefined, entries: readonly string[]): boolean {
  if (environ === undefined || !entries.some((entry) => environHolds(environ, entry))) return false;
  const state = processState(pid);
  return state !== undefined && !EXITED_STATES.has(state);
}

/**
 * The running processes (zombies and dead ones excluded, this one too) whose environment holds
 * `entry` or one of `more` (`KEY=value`, inherited by everything started below whoever set it),
 * in one look at /proc; [] without /proc. Another user's processes cannot be read and are never listed.
 */
export function processesWithEnvSync(entry: string, ...more: string[]): number[] {
  const wanted = [entry, ...more];
  let entries: string[];
  try {
    entries = fs.readdirSync("/proc");
  } catch {
    return [];
  }
  return procPids(entries).filter((pid) => {
    try {
      return runningWithEnviron(pid, fs.readFileSync(`/proc/${pid}/environ`), wanted);
    } catch {
      return false; // gone, or not ours
    }
  });
}

/** SIGKILLs every process processesWithEnvSync finds for `entry` and `more` (one gone meanwhile is skipped). */
export function killProcessesWithEnvSync(entry: string, ...more: string[]): void {
  for (const pid of processesWithEnvSync(entry, ...more)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
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
      return runningWithEnviron(pid, environ, [entry]) ? pid : undefined;
    }),
  );
  return found.filter((pid): pid is number => pid !== undefined);
}

/** Field 22 (starttime) of /proc/<pid>/stat: the 20th from field 3. */
function startTicks(pid: number): string | undefined {
  return procStatFields(pid)?.at(19);
}

/** This boot's id (Linux), undefined without /proc. */
const bootId = (): string | undefined => readProc("/proc/sys/kernel/random/boot_id")?.trim() || undefined;

/** The identity of the live process `pid` now (its start time and boot where /proc says them). */
export function processIdentity(pid: number): ProcessIdentity {
  const ticks = startTicks(pid);
  const boot = bootId();
  return { pid, ...(ticks && { startTicks: ticks }), ...(boot && { bootId: boot }) };
}

let procThere: boolean | undefined;
/** Whether this machine has Linux's /proc (looked at once). */
function hasProc(): boolean {
  procThere ??= fs.existsSync("/proc/self/stat");
  return procThere;
}

/**
 * The one rule for "the process a file names still runs" (a run's wrapper, a tree's owner, a
 * slot's or an ssh connection's holder, a wrapper's parent): its pid is alive, it is this
 * user's (another user's process is never one this package started), it started at the
 * recorded tick of the recorded boot, and it has not exited (a zombie nobody reaped yet has
 * ended all the same). An identity without a start time (an older file's bare pid) proves
 * nothing on a machine with /proc: whatever holds that pid now may be anything, so it does
 * not count as running — nothing waits on it, takes it for an owner, or signals it. Without
 * /proc only the pid can be checked.
 */
export function sameProcessAlive(recorded: ProcessIdentity): boolean {
  try {
    process.kill(recorded.pid, 0);
  } catch {
    return false;
  }
  // One read of its stat gives both its start time (field 22) and its state (field 3).
  const fields = procStatFields(recorded.pid);
  if (fields === undefined) return !hasProc(); // gone meanwhile, or no /proc here
  if (recorded.startTicks === undefined || recorded.startTicks !== fields[19]) return false;
  const boot = recorded.bootId === undefined ? undefined : bootId();
  if (boot !== undefined && boot !== recorded.bootId) return false;
  return !EXITED_STATES.has(fields[0] ?? "");
}

/** What an identity file holds: the identity, or why there is none (`is gone` when there is no file). */
export type IdentityRead = { identity: ProcessIdentity } | { problem: string };

function identityOf(read: { text: string } | { absent: true } | { problem: string }): IdentityRead {
  if ("absent" in read) return { problem: "is gone" };
  if ("problem" in read) return read;
  if (read.text.trim() === "") return { problem: "is empty" };
  const identity = parseProcessIdentity(read.text);
  return identity ? { identity } : { problem: "holds no process identity" };
}

/** Reads an identity file (process-identity.ts): never blocks on a FIFO, never reads past its bound. */
export async function readIdentityFile(file: string): Promise<IdentityRead> {
  const read = await readRegularFile(file, MAX_IDENTITY_FILE_BYTES);
  return identityOf(read.ok ? read : read.absent ? { absent: true } : { problem: read.problem });
}

/** readIdentityFile, synchronously (the CLI, a lease taken in one go). */
export function readIdentityFileSync(file: string): IdentityRead {
  return identityOf(readRegularFileSync(file, MAX_IDENTITY_FILE_BYTES));
}

/** The arguments a live process was started with (Linux /proc), undefined when unreadable. */
export function processArgs(pid: number): string[] | undefined {
  const cmdline = readProc(`/proc/${pid}/cmdline`);
  return cmdline ? cmdline.split("\0").filter((arg) => arg !== "") : undefined;
}
