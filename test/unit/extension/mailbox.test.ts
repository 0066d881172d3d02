import { afterEach, describe, expect, it, vi } from "vitest";
import type { Notice } from "../../../src/contracts/tree.js";
import { Mailbox } from "../../../src/extension/turns/mailbox.js";

const notice = (name: string): Notice => ({
  agent_name: `/root/${name}`,
  nickname: name,
  type: "completed",
  agent_status: "completed",
  health: "healthy",
  model: "fake/fast",
  reasoning: "low",
  report_chars: 0,
  report_stored: false,
  report: "",
});

afterEach(() => {
  vi.useRealTimers();
});

describe("Mailbox", () => {
  it("hands notices out once, oldest first, at most N at a time", () => {
    const box = new Mailbox();
    for (const name of ["a", "b", "c"]) box.push(notice(name));
    expect(box.take(2).map((n) => n.nickname)).toEqual(["a", "b"]);
    expect(box.pending).toBe(1);
    expect(box.take(5).map((n) => n.nickname)).toEqual(["c"]);
    expect(box.take(5)).toEqual([]);
  });

  it("a waiter wakes when a notice arrives, before its timeout, and leaves no timer behind", async () => {
    vi.useFakeTimers();
    const box = new Mailbox();
    let woke = false;
    const waiting = box.waitForNotice(5000).then(() => (woke = true));
    await vi.advanceTimersByTimeAsync(4999);
    expect(woke).toBe(false);
    box.push(notice("late"));
    await waiting;
    expect(woke).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
    expect(box.pending).toBe(1);
  });

  it("a waiter returns at its timeout, at once when notices are pending, and on abort", async () => {
    vi.useFakeTimers();
    const box = new Mailbox();
    let timedOut = false;
    const waiting = box.waitForNotice(50).then(() => (timedOut = true));
    await vi.advanceTimersByTimeAsync(49);
    expect(timedOut).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await waiting;
    expect(timedOut).toBe(true);

    const controller = new AbortController();
    const aborted = box.waitForNotice(5000, controller.signal);
    expect(vi.getTimerCount()).toBe(1);
    controller.abort();
    await aborted;
    expect(vi.getTimerCount()).toBe(0);

    box.push(notice("x"));
    await box.waitForNotice(5000);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("wakeAll releases every waiter (a process that ends keeps no timer)", async () => {
    vi.useFakeTimers();
    const box = new Mailbox();
    const waiters = [box.waitForNotice(5000), box.waitForNotice(9000)];
    expect(vi.getTimerCount()).toBe(2);
    box.wakeAll();
    await Promise.all(waiters);
    expect(vi.getTimerCount()).toBe(0);
    expect(box.pending).toBe(0);
  });
});
