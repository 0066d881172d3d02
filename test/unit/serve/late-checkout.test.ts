/**
 * The rest of a far workspace's checkout waits for pi's start-up to be over (its `.started`
 * file), for the run to stop waiting, or for its time bound — on the injected clock.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cwdStartedPath } from "../../../src/contracts/meta.js";
import { lateCheckout } from "../../../src/serve/late-checkout.js";
import type { Scratch } from "../../../src/serve/workspace.js";
import { FakeClock } from "../../support/fake-clock.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A scratch space that only counts its checkout and writes run files into a temp folder. */
function fakeScratch(fail?: string) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "late-checkout-"));
  dirs.push(dir);
  const scratch = {
    checkouts: 0,
    async finishCheckout() {
      scratch.checkouts++;
      if (fail) throw new Error(fail);
    },
    writeRunFile(name: string, data: string) {
      const file = path.join(dir, name);
      fs.writeFileSync(file, data);
      return file;
    },
  };
  return { scratch, readyFile: path.join(dir, "cwd-ready") };
}

describe("serve: the late checkout", () => {
  it("waits for pi's start-up to be over, then checks out and says ready", async () => {
    const clock = new FakeClock();
    const { scratch, readyFile } = fakeScratch();
    const done = lateCheckout(scratch as unknown as Scratch, readyFile, () => true, clock);
    await clock.advance(500);
    expect(scratch.checkouts).toBe(0);
    fs.writeFileSync(cwdStartedPath(readyFile), "");
    await clock.advance(20);
    await done;
    expect(scratch.checkouts).toBe(1);
    expect(fs.readFileSync(readyFile, "utf8")).toBe("ready");
  });

  it("goes on without the word after its 10 s bound, or at once when the run stops waiting", async () => {
    const clock = new FakeClock();
    const slow = fakeScratch();
    const bounded = lateCheckout(slow.scratch as unknown as Scratch, slow.readyFile, () => true, clock);
    await clock.advance(9_900);
    expect(slow.scratch.checkouts).toBe(0);
    await clock.advance(200);
    await bounded;
    expect(slow.scratch.checkouts).toBe(1);

    let waiting = true;
    const gone = fakeScratch();
    const stopped = lateCheckout(gone.scratch as unknown as Scratch, gone.readyFile, () => waiting, clock);
    waiting = false;
    await clock.advance(20);
    await stopped;
    expect(gone.scratch.checkouts).toBe(1);
  });

  it("a checkout that fails is said in the ready file, not thrown", async () => {
    const clock = new FakeClock();
    const { scratch, readyFile } = fakeScratch("disk full");
    const done = lateCheckout(scratch as unknown as Scratch, readyFile, () => false, clock);
    await clock.advance(20);
    await done;
    expect(fs.readFileSync(readyFile, "utf8")).toBe("the workspace could not be checked out: disk full");
  });
});
