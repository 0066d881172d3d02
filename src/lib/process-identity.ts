/**
 * A process identity as the files that name a live process hold it — a run's `wrapper.pid`,
 * a tree's owner lease, a runner's capacity slot, a user of a shared ssh connection: one JSON
 * object `{"pid":N,"startTicks":"…","bootId":"…"}` on one line. The pid alone does not name a
 * process: after a reboot, or once pids wrap, another process gets it. The start time (in
 * clock ticks since boot, from /proc) and the boot's id tell them apart; both are left out
 * where the writer had no /proc.
 */

export interface ProcessIdentity {
  pid: number;
  startTicks?: string;
  bootId?: string;
}

/** The longest identity file worth reading: anything longer is damage. */
export const MAX_IDENTITY_FILE_BYTES = 4096;

/** An identity file's text: the JSON object and a newline. */
export function formatProcessIdentity(identity: ProcessIdentity): string {
  return `${JSON.stringify(identity)}\n`;
}

/**
 * The identity an identity file's text holds; undefined for anything else (garbage, a pid
 * of 0 or 1). A file of an older version holds the bare pid: it reads as `{pid}` alone, an
 * identity that can never prove a live process is the one that wrote it (lib/process.ts
 * sameProcessAlive).
 */
export function parseProcessIdentity(text: string): ProcessIdentity | undefined {
  const trimmed = text.trim();
  let value: unknown;
  try {
    value = /^\d+$/.test(trimmed) ? { pid: Number(trimmed) } : JSON.parse(trimmed);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const { pid, startTicks, bootId } = value as Record<string, unknown>;
  if (typeof pid !== "number" || !Number.isSafeInteger(pid) || pid <= 1) return undefined;
  return {
    pid,
    ...(typeof startTicks === "string" && startTicks !== "" && { startTicks }),
    ...(typeof bootId === "string" && bootId !== "" && { bootId }),
  };
}

/** Whether two identities name the same process (the same pid, start time and boot). */
export function sameIdentity(a: ProcessIdentity, b: ProcessIdentity): boolean {
  return a.pid === b.pid && a.startTicks === b.startTicks && a.bootId === b.bootId;
}
