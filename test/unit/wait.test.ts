import { afterEach, describe, expect, it, vi } from "vitest";
import { settledWithin } from "../../src/lib/clock.js";

afterEach(() => {
  vi.useRealTimers();
});

describe("settledWithin", () => {
  it("returns when the promise settles, and leaves no timer", async () => {
    vi.useFakeTimers();
    let resolve!: () => void;
    const waiting = settledWithin(new Promise<void>((r) => (resolve = r)), 8000);
    expect(vi.getTimerCount()).toBe(1);
    resolve();
    await waiting;
    expect(vi.getTimerCount()).toBe(0);
  });

  it("returns after `ms` when the promise never settles, at once when there is none", async () => {
    vi.useFakeTimers();
    let done = false;
    const waiting = settledWithin(new Promise<void>(() => undefined), 8000).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(7999);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await waiting;
    expect(done).toBe(true);
    await settledWithin(undefined, 8000);
    expect(vi.getTimerCount()).toBe(0);
  });
});
