/**
 * A turn's end is seen when its result.json is renamed into place, not when its wrapper exits:
 * a whole result is taken at once (watch event), a damaged one is left to the wrapper's exit,
 * and a stopped watch takes nothing.
 */
import { mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { resultInPlace } from "../../../../../src/extension/turns/wrapper/result-watch.js";
import { systemClock } from "../../../../../src/lib/clock.js";
import { turnResult } from "../../../../support/fake-turns.js";

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function runDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "result-watch-"));
  dirs.push(dir);
  return dir;
}

/** As the wrapper writes it: whole, under another name, then renamed into place. */
async function placeResult(dir: string, text: string): Promise<void> {
  await writeFile(path.join(dir, "result.json.tmp"), text);
  await rename(path.join(dir, "result.json.tmp"), path.join(dir, "result.json"));
}

describe("a run's result.json in place", () => {
  it("is taken as soon as it is renamed there (a watch event, long before the poll)", async () => {
    const dir = await runDir();
    // A poll of an hour: only the watch can see it within the test's time.
    const watch = resultInPlace(dir, systemClock, 3_600_000);
    await placeResult(dir, JSON.stringify(turnResult({ finalText: "done" })));
    const read = await watch.found;
    expect(read.result?.finalText).toBe("done");
  });

  it("is found by the poll where no watch event comes (it was there before the watch started)", async () => {
    const dir = await runDir();
    await placeResult(dir, JSON.stringify(turnResult({ finalText: "early" })));
    const watch = resultInPlace(dir, systemClock, 20);
    expect((await watch.found).result?.finalText).toBe("early");
  });

  it("a damaged one is not taken: the wrapper's exit says why; a whole one after it is", async () => {
    const dir = await runDir();
    const watch = resultInPlace(dir, systemClock, 20);
    let taken = false;
    void watch.found.then(() => {
      taken = true;
    });
    await placeResult(dir, '{"version":1,"status":');
    // Several polls have read the damaged file by now (the poll is every 20 ms).
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(taken).toBe(false);
    await placeResult(dir, JSON.stringify(turnResult({ status: "failed", errorMessage: "boom" })));
    expect((await watch.found).result?.status).toBe("failed");
    watch.stop();
  });

  it("once stopped, takes nothing", async () => {
    const dir = await runDir();
    const watch = resultInPlace(dir, systemClock, 20);
    let taken = false;
    void watch.found.then(() => {
      taken = true;
    });
    watch.stop();
    await placeResult(dir, JSON.stringify(turnResult()));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(taken).toBe(false);
  });
});
