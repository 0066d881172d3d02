/**
 * One owner per tree: at most one live process drives a tree directory — starts, stops,
 * waits on and re-attaches its turns. The owner is named by a lease file at the top of the
 * tree directory, `owner.<generation>`, holding its ProcessIdentity (pid, start time, boot):
 * a reused pid is not the owner. The highest generation is the current lease.
 *
 * Taking the tree: no lease, or the current one's process is gone (or the file is damaged:
 * not JSON, empty, a FIFO) — the next generation is created by link(2) of a complete temp
 * file, which fails when the name exists, so of two roots racing to take over exactly one
 * wins; the loser reads the winner's lease and only reads the tree. A live owner's lease is
 * never touched. The owner removes its lease as it leaves; one killed leaves it, and its
 * dead identity is what lets the next root take over.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { processIdentity, readIdentityFile, readIdentityFileSync, sameProcessAlive } from "./process.js";
import { formatProcessIdentity, type ProcessIdentity, sameIdentity } from "./process-identity.js";
import { errorText } from "./values.js";

export type Ownership =
  /** This process drives the tree; `release` gives the lease back (as the process leaves the tree). */
  | { held: true; release(): Promise<void> }
  /** Another live process drives it: this one only reads. */
  | { held: false; owner: ProcessIdentity };

export interface LeaseDeps {
  /** This process (default: the running one). */
  self?: ProcessIdentity;
  /** Whether a recorded owner still runs (default: lib/process.ts's one rule, sameProcessAlive). */
  alive?: (owner: ProcessIdentity) => boolean;
  /** A damaged lease file is named here, once. */
  report?: (line: string) => void;
}

/** The lease files' names: `owner.<generation>` (TREE_FILES.ownerPrefix, contracts/layout.ts). */
export const LEASE_PREFIX = "owner.";
const GENERATION = /^owner\.(\d{1,15})$/;
const TRIES = 8;

/** The lease generations in `treeDir`, highest first. */
async function generations(treeDir: string): Promise<number[]> {
  const names = await fs.promises.readdir(treeDir).catch(() => [] as string[]);
  return names
    .map((name) => GENERATION.exec(name)?.[1])
    .filter((gen): gen is string => gen !== undefined)
    .map(Number)
    .sort((a, b) => b - a);
}

export function leaseFile(treeDir: string, generation: number): string {
  return path.join(treeDir, `${LEASE_PREFIX}${generation}`);
}

/** The identity a lease file holds; a string saying why there is none when it is damaged. */
export async function readLease(file: string): Promise<ProcessIdentity | string> {
  const read = await readIdentityFile(file);
  return "identity" in read ? read.identity : read.problem;
}

/** The process that holds the tree now, if one lives (for inspect). */
export async function currentOwner(
  treeDir: string,
  alive: (owner: ProcessIdentity) => boolean = sameProcessAlive,
): Promise<ProcessIdentity | undefined> {
  const [top] = await generations(treeDir);
  if (top === undefined) return undefined;
  const owner = await readLease(leaseFile(treeDir, top));
  return typeof owner !== "string" && alive(owner) ? owner : undefined;
}

/** Creates `file` with `identity` whole, or fails with EEXIST when it exists. */
async function createLease(file: string, identity: ProcessIdentity): Promise<boolean> {
  const temp = path.join(path.dirname(file), `.owner.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  const handle = await fs.promises.open(temp, "wx");
  try {
    await handle.writeFile(formatProcessIdentity(identity), "utf8");
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await fs.promises.link(temp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  } finally {
    await fs.promises.rm(temp, { force: true });
  }
}

/**
 * Takes the tree at this process's start, or says which live process holds it. Throws only
 * when the tree directory cannot be written (the caller drives the tree then, as before).
 */
export async function takeOwnership(treeDir: string, deps: LeaseDeps = {}): Promise<Ownership> {
  const self = deps.self ?? processIdentity(process.pid);
  const alive = deps.alive ?? sameProcessAlive;
  let named = false;
  for (let attempt = 0; attempt < TRIES; attempt++) {
    const [top] = await generations(treeDir);
    if (top !== undefined) {
      const file = leaseFile(treeDir, top);
      const owner = await readLease(file);
      if (typeof owner !== "string") {
        if (sameIdentity(owner, self)) return held(treeDir, top, self);
        if (alive(owner)) return { held: false, owner };
      } else if (owner !== "is gone" && !named) {
        named = true;
        deps.report?.(`the owner lease ${file} ${owner}: taken over`);
      }
    }
    const next = (top ?? 0) + 1;
    if (await createLease(leaseFile(treeDir, next), self)) {
      await dropOlder(treeDir, next);
      return held(treeDir, next, self);
    }
    // Another root made that generation first: read it on the next round.
  }
  throw new Error(`the owner lease of ${treeDir} keeps changing (${TRIES} tries)`);
}

/** The leases a taken-over tree no longer needs (a damaged one is a FIFO, a folder: removed all the same). */
async function dropOlder(treeDir: string, generation: number): Promise<void> {
  for (const gen of await generations(treeDir))
    if (gen < generation)
      await fs.promises.rm(leaseFile(treeDir, gen), { force: true, recursive: true }).catch(() => undefined);
}

function held(treeDir: string, generation: number, self: ProcessIdentity): Ownership {
  const file = leaseFile(treeDir, generation);
  return {
    held: true,
    release: async () => {
      try {
        const owner = await readLease(file);
        if (typeof owner !== "string" && sameIdentity(owner, self)) await fs.promises.rm(file, { force: true });
      } catch (err) {
        // the tree directory went away: nothing to give back
        void errorText(err);
      }
    },
  };
}

/** currentOwner, read synchronously (the CLI's inspect). */
export function currentOwnerSync(
  treeDir: string,
  alive: (owner: ProcessIdentity) => boolean = sameProcessAlive,
): ProcessIdentity | undefined {
  let names: string[];
  try {
    names = fs.readdirSync(treeDir);
  } catch {
    return undefined;
  }
  const [top] = names
    .map((name) => GENERATION.exec(name)?.[1])
    .filter((gen): gen is string => gen !== undefined)
    .map(Number)
    .sort((a, b) => b - a);
  if (top === undefined) return undefined;
  const read = readIdentityFileSync(leaseFile(treeDir, top));
  return "identity" in read && alive(read.identity) ? read.identity : undefined;
}
