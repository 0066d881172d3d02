/**
 * A runner's slots taken by real processes at once (the built module, dist/lib/slot-lease.js):
 * of 8 processes released together on capacity 3, exactly 3 hold a slot, each a different one,
 * and once they are gone (killed, no release written) their slots are free for the next ones.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/pi-home.js";

const MODULE = pathToFileURL(path.join(REPO_ROOT, "dist", "lib", "slot-lease.js")).href;

/** Waits for "go" on stdin, takes a slot, prints its number (0: full), then holds it until stdin ends. */
const TAKER = `
import { takeSlot } from ${JSON.stringify(MODULE)};
const [dir, capacity] = process.argv.slice(1);
process.stdout.write("ready\\n");
let input = "";
process.stdin.on("data", (chunk) => {
  input += chunk;
  if (input.includes("go") && !globalThis.taken) {
    globalThis.taken = takeSlot(dir, Number(capacity)) ?? { slot: 0 };
    process.stdout.write(\`slot \${globalThis.taken.slot}\\n\`);
  }
});
process.stdin.on("end", () => process.exit(0));
`;

interface Taker {
  pid: number;
  ready: Promise<void>;
  slot: Promise<number>;
  go(): void;
  kill(): void;
  exited: Promise<void>;
}

function taker(dir: string, capacity: number): Taker {
  const child = spawn(process.execPath, ["--input-type=module", "-e", TAKER, dir, String(capacity)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  let out = "";
  let onReady!: () => void;
  let onSlot!: (slot: number) => void;
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  const slot = new Promise<number>((resolve) => (onSlot = resolve));
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
    if (out.includes("ready\n")) onReady();
    const match = /slot (\d+)\n/.exec(out);
    if (match) onSlot(Number(match[1]));
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    pid: child.pid!,
    ready,
    slot,
    go: () => child.stdin.write("go\n"),
    kill: () => child.kill("SIGKILL"),
    exited,
  };
}

const started: Taker[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const t of started.splice(0)) {
    t.kill();
    await t.exited;
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function race(dir: string, count: number, capacity: number): Promise<number[]> {
  const takers = Array.from({ length: count }, () => taker(dir, capacity));
  started.push(...takers);
  await Promise.all(takers.map((t) => t.ready));
  for (const t of takers) t.go();
  return Promise.all(takers.map((t) => t.slot));
}

describe("runner slots taken by racing processes", () => {
  it("8 processes at once on capacity 3: exactly 3 hold a slot, each its own; when they die, the slots free", async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "slot-race-"));
    dirs.push(root);
    const dir = path.join(root, "runners", "box");
    const first = await race(dir, 8, 3);
    expect(first.filter((slot) => slot > 0).sort()).toEqual([1, 2, 3]);

    // Every holder killed outright (no release written): the next racers find all 3 slots free.
    for (const t of started.splice(0)) {
      t.kill();
      await t.exited;
    }
    const second = await race(dir, 5, 3);
    expect(second.filter((slot) => slot > 0).sort()).toEqual([1, 2, 3]);
  });
});
