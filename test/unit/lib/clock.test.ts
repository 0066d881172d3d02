import { describe, expect, it } from "vitest";
import { settledWithin } from "../../../src/lib/clock.js";
import { FakeClock } from "../../support/fake-clock.js";

describe("settledWithin", () => {
  it("returns when the promise settles, and leaves no timer", async () => {
    const clock = new FakeClock();
    let resolve!: () => void;
    const waiting = settledWithin(new Promise<void>((r) => (resolve = r)), 8000, clock);
    expect(clock.pending().length).toBe(1);
    resolve();
    await waiting;
    expect(clock.pending().length).toBe(0);
  });

  it("returns after `ms` when the promise never settles, at once when there is none", async () => {
    const clock = new FakeClock();
    let done = false;
    const waiting = settledWithin(new Promise<void>(() => undefined), 8000, clock).then(() => (done = true));
    await clock.advance(7999);
    expect(done).toBe(false);
    await clock.advance(1);
    await waiting;
    expect(done).toBe(true);
    await settledWithin(undefined, 8000, clock);
    expect(clock.pending().length).toBe(0);
  });
});
