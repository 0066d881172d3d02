/**
 * One owner per tree: the lease a root takes at its start. Identities are injected
 * (pid + start time), so a reused pid, a dead owner and two racing roots are all decided here
 * without a process; one case reads the real /proc identity of this process.
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { currentOwner, leaseFile, takeOwnership } from "../../../src/lib/owner-lease.js";
import type { ProcessIdentity } from "../../../src/lib/process.js";

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function treeDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "owner-lease-"));
  dirs.push(dir);
  return dir;
}

const A: ProcessIdentity = { pid: 1001, startTicks: "500", bootId: "b" };
const B: ProcessIdentity = { pid: 1002, startTicks: "600", bootId: "b" };
/** The same pid as A, started later: another process. */
const A_REUSED: ProcessIdentity = { pid: 1001, startTicks: "900", bootId: "b" };

/** A world where the processes in `live` run (by full identity). */
const world =
  (...live: ProcessIdentity[]) =>
  (owner: ProcessIdentity) =>
    live.some((p) => p.pid === owner.pid && p.startTicks === owner.startTicks);

describe("the owner lease", () => {
  it("a first root takes the tree; a second while it lives only reads, told the owner's pid", async () => {
    const dir = await treeDir();
    const first = await takeOwnership(dir, { self: A, alive: world(A, B) });
    expect(first.held).toBe(true);
    const second = await takeOwnership(dir, { self: B, alive: world(A, B) });
    expect(second).toEqual({ held: false, owner: A });
    expect(await currentOwner(dir, world(A, B))).toEqual(A);
  });

  it("a dead owner is taken over at the next start; a reused pid owns nothing", async () => {
    const dir = await treeDir();
    await takeOwnership(dir, { self: A, alive: world(A) });
    // A died; its pid now belongs to another process (A_REUSED).
    const next = await takeOwnership(dir, { self: B, alive: world(A_REUSED, B) });
    expect(next.held).toBe(true);
    expect(await currentOwner(dir, world(A_REUSED, B))).toEqual(B);
    // The old generation is gone: one lease file.
    expect((await readdir(dir)).filter((name) => name.startsWith("owner."))).toEqual(["owner.2"]);
  });

  it("the same process taking its tree again (a new session, then back) holds it", async () => {
    const dir = await treeDir();
    await takeOwnership(dir, { self: A, alive: world(A) });
    expect((await takeOwnership(dir, { self: A, alive: world(A) })).held).toBe(true);
  });

  it("released, the lease is gone and the next root takes the tree", async () => {
    const dir = await treeDir();
    const first = await takeOwnership(dir, { self: A, alive: world(A, B) });
    if (first.held) await first.release();
    expect((await takeOwnership(dir, { self: B, alive: world(A, B) })).held).toBe(true);
  });

  it("two roots racing to take over a dead owner's tree: exactly one wins, the other reads the winner", async () => {
    for (let round = 0; round < 20; round++) {
      const dir = await treeDir();
      await takeOwnership(dir, { self: { pid: 999, startTicks: "1" }, alive: () => true });
      const racers = Array.from({ length: 4 }, (_, i) => ({ pid: 2000 + i, startTicks: "7" }));
      const alive = world(...racers);
      const outcomes = await Promise.all(racers.map((self) => takeOwnership(dir, { self, alive })));
      const winners = outcomes.filter((o) => o.held);
      expect(winners).toHaveLength(1);
      const owner = await currentOwner(dir, alive);
      for (const o of outcomes) if (!o.held) expect(o.owner).toEqual(owner);
    }
  });

  it.each([
    ["not JSON", (file: string) => writeFile(file, "{ pid")],
    ["empty", (file: string) => writeFile(file, "")],
    ["a FIFO", async (file: string) => void execFileSync("mkfifo", [file])],
  ])("a lease file that is %s: named once, taken over, no hang", async (_name, damage) => {
    const dir = await treeDir();
    await damage(leaseFile(dir, 1));
    const lines: string[] = [];
    const taken = await takeOwnership(dir, { self: B, alive: world(B), report: (line) => lines.push(line) });
    expect(taken.held).toBe(true);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(leaseFile(dir, 1));
    expect(await currentOwner(dir, world(B))).toEqual(B);
  });

  it("this process's real identity (pid + start time from /proc) is what the lease holds", async () => {
    const dir = await treeDir();
    const taken = await takeOwnership(dir);
    expect(taken.held).toBe(true);
    const owner = await currentOwner(dir);
    expect(owner?.pid).toBe(process.pid);
    expect(owner?.startTicks).toMatch(/^\d+$/);
  });
});

describe("the lease's name", () => {
  it("is the one the layout names (TREE_FILES.ownerPrefix)", async () => {
    const { TREE_FILES } = await import("../../../src/contracts/layout.js");
    const { LEASE_PREFIX } = await import("../../../src/lib/owner-lease.js");
    expect(LEASE_PREFIX).toBe(TREE_FILES.ownerPrefix);
  });
});
