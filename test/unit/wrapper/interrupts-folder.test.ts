/** A detached turn whose tree directory is deleted under it still ends. */
import { describe, expect, it } from "vitest";
import { PARENT_CHECK_MS, watchResultFolder } from "../../../src/wrapper/interrupts.js";
import { FakeClock } from "../../support/fake-clock.js";

describe("watchResultFolder", () => {
  it("interrupts once the folder that was there is gone, once; a folder not made yet is not news", async () => {
    const clock = new FakeClock();
    let exists = false;
    const reasons: string[] = [];
    const stop = watchResultFolder(
      "/t/run",
      clock,
      () => exists,
      (reason) => reasons.push(reason),
    );
    await clock.advance(PARENT_CHECK_MS * 3);
    expect(reasons).toEqual([]);
    exists = true;
    await clock.advance(PARENT_CHECK_MS);
    exists = false;
    await clock.advance(PARENT_CHECK_MS * 3);
    expect(reasons).toEqual(["its run folder /t/run was removed"]);
    stop();
  });
});
