/**
 * A runner's slots across a tree: leases in a folder, at most `capacity` held by
 * live processes. Identities and liveness are injected (pid + start time), so a dead holder, a
 * reused pid and takers racing inside one take are decided here without a process; the file
 * operations are the real ones in a temp folder, wrapped where a race is staged.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ProcessIdentity } from "../../../src/lib/process.js";
import {
  leaseHolder,
  nodeSlotFiles,
  type SlotFileOperations,
  slotFile,
  slotHolders,
  takeSlot,
} from "../../../src/lib/slot-lease.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function slotsDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slot-lease-"));
  dirs.push(dir);
  return path.join(dir, "runners", "box");
}

const id = (pid: number, startTicks = "100"): ProcessIdentity => ({ pid, startTicks, bootId: "b" });
const A = id(1001);
const B = id(1002);
const C = id(1003);
const D = id(1004);
/** A's pid, started later: another process. */
const A_REUSED = id(1001, "900");

/** A world where the processes in `live` run (by full identity). */
const world =
  (...live: ProcessIdentity[]) =>
  (holder: ProcessIdentity) =>
    live.some((p) => p.pid === holder.pid && p.startTicks === holder.startTicks);

const leaseFiles = (dir: string) => readdirSync(dir).filter((name) => name.startsWith("slot."));

describe("runner slot leases", () => {
  it.each([
    { capacity: 1, takers: [A, B], winners: [A] },
    { capacity: 2, takers: [A, B, C], winners: [A, B] },
    { capacity: 3, takers: [A, B, C, D], winners: [A, B, C] },
  ])(
    "capacity $capacity: the first $capacity takers get a slot each, the next finds the runner full",
    ({ capacity, takers, winners }) => {
      const dir = slotsDir();
      const alive = world(A, B, C, D);
      const leases = takers.map((self) => takeSlot(dir, capacity, { self, alive }));
      expect(leases.map((lease) => lease !== undefined)).toEqual(takers.map((t) => winners.includes(t)));
      expect(leases.filter(Boolean).map((lease) => lease!.slot)).toEqual(winners.map((_, i) => i + 1));
      expect([...slotHolders(dir, { alive }).values()]).toEqual(winners);
    },
  );

  it("a released slot is free at once for the next taker; releasing twice changes nothing", () => {
    const dir = slotsDir();
    const alive = world(A, B, C);
    const a = takeSlot(dir, 2, { self: A, alive })!;
    takeSlot(dir, 2, { self: B, alive });
    expect(takeSlot(dir, 2, { self: C, alive })).toBeUndefined();
    a.release();
    a.release();
    expect(slotHolders(dir, { alive }).size).toBe(1);
    const c = takeSlot(dir, 2, { self: C, alive });
    expect(c?.slot).toBe(a.slot);
    // One lease file per slot: the released generation is dropped once a newer one is made.
    expect(leaseFiles(dir).sort()).toEqual(["slot.1.2", "slot.2.1"]);
  });

  it("a dead holder's slot is taken; a reused pid holds nothing", () => {
    const dir = slotsDir();
    takeSlot(dir, 1, { self: A, alive: world(A) });
    // A died; its pid now belongs to another process.
    const alive = world(A_REUSED, B);
    expect(slotHolders(dir, { alive }).size).toBe(0);
    const b = takeSlot(dir, 1, { self: B, alive });
    expect(b?.slot).toBe(1);
    expect(leaseHolder(readFileSync(b!.file, "utf8"))).toEqual(B);
  });

  it("handed over, the slot is the new holder's: the taker's death frees nothing, the holder's death frees it", () => {
    const dir = slotsDir();
    const wrapper = id(2001);
    const lease = takeSlot(dir, 1, { self: A, alive: world(A, wrapper) })!;
    lease.handOver(wrapper);
    expect(takeSlot(dir, 1, { self: B, alive: world(B, wrapper) })).toBeUndefined();
    expect(takeSlot(dir, 1, { self: B, alive: world(A, B) })?.slot).toBe(1);
  });

  it("a release while the wrapper it was handed to still runs leaves the slot to that wrapper", () => {
    const dir = slotsDir();
    const wrapper = id(2001);
    let wrapperRuns = true;
    const alive = (holder: ProcessIdentity) => (holder.pid === wrapper.pid ? wrapperRuns : world(A, B)(holder));
    const lease = takeSlot(dir, 1, { self: A, alive })!;
    lease.handOver(wrapper);
    lease.release();
    expect(takeSlot(dir, 1, { self: B, alive })).toBeUndefined();
    wrapperRuns = false;
    lease.release();
    expect(JSON.parse(readFileSync(lease.file, "utf8"))).toEqual({ released: true });
    expect(takeSlot(dir, 1, { self: B, alive })?.slot).toBe(1);
  });

  it("a release after a newer taker dropped the lease (its wrapper gone) does not make the file again", () => {
    const dir = slotsDir();
    const wrapper = id(2001);
    let live = [A, wrapper];
    const alive = (holder: ProcessIdentity) => world(...live)(holder);
    const lease = takeSlot(dir, 1, { self: A, alive })!;
    lease.handOver(wrapper);
    // The wrapper ended; another process takes the slot before this one writes the release.
    live = [A, B];
    expect(takeSlot(dir, 1, { self: B, alive })?.slot).toBe(1);
    expect(leaseFiles(dir)).toEqual(["slot.1.2"]);
    lease.release();
    expect(leaseFiles(dir)).toEqual(["slot.1.2"]);
    expect([...slotHolders(dir, { alive }).values()]).toEqual([B]);
  });

  it.each([
    ["not JSON", (file: string) => writeFileSync(file, "{ pid")],
    ["empty", (file: string) => writeFileSync(file, "")],
    ["a FIFO", (file: string) => void execFileSync("mkfifo", [file])],
  ])("a lease file that is %s holds nothing: taken, no hang", (_name, damage) => {
    const dir = slotsDir();
    nodeSlotFiles.makeDir(dir);
    damage(slotFile(dir, 1, 1));
    expect(takeSlot(dir, 1, { self: B, alive: world(B) })?.slot).toBe(1);
    expect(leaseFiles(dir)).toEqual(["slot.1.2"]);
  });

  it("takers racing for the last slot: one wins, the loser finds the runner full", () => {
    const dir = slotsDir();
    const alive = world(A, B, C);
    takeSlot(dir, 2, { self: A, alive });
    // B reads the folder, then C takes slot 2 before B's create: B's create of that name fails.
    let raced = false;
    const racing: SlotFileOperations = {
      ...nodeSlotFiles,
      create(file, text) {
        if (!raced) {
          raced = true;
          expect(takeSlot(dir, 2, { self: C, alive })?.slot).toBe(2);
        }
        return nodeSlotFiles.create(file, text);
      },
    };
    expect(takeSlot(dir, 2, { self: B, alive, ops: racing })).toBeUndefined();
    expect([...slotHolders(dir, { alive }).values()]).toEqual([A, C]);
  });

  it("a taker that read an old generation, made again after newer ones were dropped, gives it up", () => {
    const dir = slotsDir();
    // Slot 1 has had three holders, all dead; only its newest generation, 3, is left.
    nodeSlotFiles.makeDir(dir);
    writeFileSync(slotFile(dir, 1, 3), `${JSON.stringify(C)}\n`);
    const alive = world(A, B);
    // A read the folder when generation 1 was the newest (C's) and now makes generation 2 —
    // while B, reading generation 3, makes generation 4 first.
    let readOnce = false;
    const staleReading: SlotFileOperations = {
      ...nodeSlotFiles,
      list(folder) {
        if (folder !== dir || readOnce) return nodeSlotFiles.list(folder);
        readOnce = true;
        return ["slot.1.1"];
      },
      create(file, text) {
        expect(takeSlot(dir, 1, { self: B, alive })?.file).toBe(slotFile(dir, 1, 4));
        return nodeSlotFiles.create(file, text);
      },
    };
    expect(takeSlot(dir, 1, { self: A, alive, ops: staleReading })).toBeUndefined();
    expect(leaseFiles(dir)).toEqual(["slot.1.4"]);
    expect([...slotHolders(dir, { alive }).values()]).toEqual([B]);
  });

  it("holds this process's real identity (pid + start time from /proc)", () => {
    const dir = slotsDir();
    const lease = takeSlot(dir, 1)!;
    const holder = leaseHolder(readFileSync(lease.file, "utf8"));
    expect(holder?.pid).toBe(process.pid);
    expect(holder?.startTicks).toMatch(/^\d+$/);
    expect(takeSlot(dir, 1)).toBeUndefined();
    lease.release();
    expect(slotHolders(dir).size).toBe(0);
  });
});

describe("the slots' folder", () => {
  it("is the one the layout names (TREE_FILES.runners)", async () => {
    const { TREE_FILES } = await import("../../../src/contracts/layout.js");
    expect(TREE_FILES.runners).toBe("runners");
  });
});
