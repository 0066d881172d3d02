/**
 * Counted slots shared by every process of a machine (a runner's capacity across a whole agent
 * tree): a folder holds at most `capacity` live leases, whoever took them. Like the
 * owner lease (owner-lease.ts), a lease is a file naming its holder's ProcessIdentity (pid,
 * start time, boot), so a holder that died — however it died — holds nothing, and a reused pid
 * is not the holder.
 *
 * Files: `slot.<n>.<generation>` for slot n = 1…capacity. The highest generation of slot n is
 * its current lease; the slot is free when there is none, or its holder is gone, or it says
 * `released`, or it is damaged (a release is written in place). Taking slot n creates the next generation by link(2) of a
 * complete temp file, which fails when the name exists: of takers racing for one slot exactly
 * one wins, and the others try the next slot. A lease file is never removed while it is the
 * current one (a release rewrites it to `released`; a holder hands it over by rewriting it), so
 * generations only grow; a taker that read an old generation, after newer ones were made and
 * the old ones dropped, creates a lease that is not the highest and gives it up at once.
 *
 * Synchronous on purpose: a take is a readdir and a few small files, and the caller (the
 * extension's turn slots) decides in one step whether a turn starts.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { createComplete } from "./atomic-file.js";
import { folderNames } from "./folder-names.js";
import { processIdentity, sameProcessAlive } from "./process.js";
import { formatProcessIdentity, type ProcessIdentity, parseProcessIdentity } from "./process-identity.js";

/** The file operations of slot leases (tests inject them to stage races). */
export interface SlotFileOperations {
  /** The names in `dir`; [] when it does not exist. */
  list(dir: string): string[];
  /** A small regular file's text; undefined when it is absent or not a regular file. */
  read(file: string): string | undefined;
  /** Creates `file` holding `text` whole; false when the name exists. */
  create(file: string, text: string): boolean;
  /** Replaces `file`'s content by `text` at once (a rename over it). */
  replace(file: string, text: string): void;
  /**
   * Writes `text` over `file` in place, never creating it: false when it is gone. A reader may
   * see it half written, which reads as a free slot — right only for a release.
   */
  overwrite(file: string, text: string): boolean;
  remove(file: string): void;
  makeDir(dir: string): void;
}

export interface SlotDeps {
  ops?: SlotFileOperations;
  /** Who takes the slot (default: this process). */
  self?: ProcessIdentity;
  /** Whether a recorded holder still runs (default: same pid and start time, not a zombie). */
  alive?: (holder: ProcessIdentity) => boolean;
}

/** A slot this process took. */
export interface SlotLease {
  /** 1…capacity. */
  readonly slot: number;
  readonly file: string;
  /** Makes another process the holder (the wrapper of the turn): the slot is free once that one is gone. */
  handOver(holder: ProcessIdentity): void;
  /**
   * Frees the slot now — unless it was handed over to a process that still runs: that one holds
   * it until it ends. Idempotent.
   */
  release(): void;
}

const SLOT_FILE = /^slot\.(\d{1,6})\.(\d{1,15})$/;
const RELEASED = `${JSON.stringify({ released: true })}\n`;
const MAX_LEASE_BYTES = 4096;

export function slotFile(dir: string, slot: number, generation: number): string {
  return path.join(dir, `slot.${slot}.${generation}`);
}

function tempName(dir: string): string {
  return path.join(dir, `.slot.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
}

function writeTemp(dir: string, text: string): string {
  const temp = tempName(dir);
  const fd = fs.openSync(temp, "wx");
  try {
    fs.writeSync(fd, text);
  } finally {
    fs.closeSync(fd);
  }
  return temp;
}

/** The real file system. */
export const nodeSlotFiles: SlotFileOperations = {
  list: folderNames,
  read: (file) => {
    let fd: number;
    try {
      // O_NONBLOCK: a FIFO where a lease belongs is refused, not waited on.
      fd = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0));
    } catch {
      return undefined;
    }
    try {
      if (!fs.fstatSync(fd).isFile()) return undefined;
      const buffer = Buffer.alloc(MAX_LEASE_BYTES);
      const bytes = fs.readSync(fd, buffer, 0, MAX_LEASE_BYTES, 0);
      return buffer.subarray(0, bytes).toString("utf8");
    } finally {
      fs.closeSync(fd);
    }
  },
  create: (file, text) => createComplete(file, text),
  replace: (file, text) => {
    const temp = writeTemp(path.dirname(file), text);
    try {
      fs.renameSync(temp, file);
    } catch (err) {
      fs.rmSync(temp, { force: true });
      throw err;
    }
  },
  overwrite: (file, text) => {
    let fd: number;
    try {
      fd = fs.openSync(file, "r+");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
      throw err;
    }
    try {
      fs.ftruncateSync(fd, 0);
      fs.writeSync(fd, text, 0);
      return true;
    } finally {
      fs.closeSync(fd);
    }
  },
  remove: (file) => fs.rmSync(file, { force: true, recursive: true }),
  makeDir: (dir) => fs.mkdirSync(dir, { recursive: true }),
};

/** The holder a lease file's text names; undefined when released or damaged. */
export function leaseHolder(text: string | undefined): ProcessIdentity | undefined {
  return text === undefined ? undefined : parseProcessIdentity(text);
}

/** Each slot number's generations in `dir`, highest first. */
function generations(names: string[]): Map<number, number[]> {
  const slots = new Map<number, number[]>();
  for (const name of names) {
    const match = SLOT_FILE.exec(name);
    if (!match) continue;
    const slot = Number(match[1]);
    const list = slots.get(slot) ?? [];
    list.push(Number(match[2]));
    slots.set(slot, list);
  }
  for (const list of slots.values()) list.sort((a, b) => b - a);
  return slots;
}

/** The live holders of `dir`'s slots, by slot number (any number, not only up to one capacity). */
export function slotHolders(dir: string, deps: SlotDeps = {}): Map<number, ProcessIdentity> {
  const ops = deps.ops ?? nodeSlotFiles;
  const alive = deps.alive ?? sameProcessAlive;
  const holders = new Map<number, ProcessIdentity>();
  for (const [slot, [top]] of generations(ops.list(dir))) {
    const holder = leaseHolder(ops.read(slotFile(dir, slot, top!)));
    if (holder && alive(holder)) holders.set(slot, holder);
  }
  return holders;
}

/**
 * Takes a free slot of `dir` (1…capacity) for `self`; undefined when all are held by live
 * processes. Throws only when the folder cannot be made or written.
 */
export function takeSlot(dir: string, capacity: number, deps: SlotDeps = {}): SlotLease | undefined {
  const ops = deps.ops ?? nodeSlotFiles;
  const alive = deps.alive ?? sameProcessAlive;
  const self = deps.self ?? processIdentity(process.pid);
  ops.makeDir(dir);
  const found = generations(ops.list(dir));
  for (let slot = 1; slot <= capacity; slot++) {
    const top = found.get(slot)?.[0];
    if (top !== undefined) {
      const holder = leaseHolder(ops.read(slotFile(dir, slot, top)));
      if (holder && alive(holder)) continue;
    }
    const generation = (top ?? 0) + 1;
    const file = slotFile(dir, slot, generation);
    // Another taker made this generation first: it holds the slot.
    if (!ops.create(file, formatProcessIdentity(self))) continue;
    const now = generations(ops.list(dir)).get(slot) ?? [];
    if (now[0] !== generation) {
      // A newer generation exists: this one was made from an old reading and holds nothing.
      ops.remove(file);
      continue;
    }
    for (const older of now.slice(1)) ops.remove(slotFile(dir, slot, older));
    return heldLease(ops, alive, slot, file);
  }
  return undefined;
}

function heldLease(
  ops: SlotFileOperations,
  alive: (holder: ProcessIdentity) => boolean,
  slot: number,
  file: string,
): SlotLease {
  let handedTo: ProcessIdentity | undefined;
  let released = false;
  return {
    slot,
    file,
    handOver(holder) {
      // While this process holds the slot its lease stays the newest: nobody removes it.
      if (released || ops.read(file) === undefined) return;
      ops.replace(file, formatProcessIdentity(holder));
      handedTo = holder;
    },
    release() {
      if (released) return;
      if (handedTo && alive(handedTo)) return;
      released = true;
      // In place: a newer taker may have dropped this lease already (its holder gone), and a
      // rename would make it again.
      ops.overwrite(file, RELEASED);
    },
  };
}
