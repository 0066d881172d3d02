import { describe, expect, it } from "vitest";
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

describe("Mailbox", () => {
  it("hands notices out once, oldest first, at most N at a time", () => {
    const box = new Mailbox();
    for (const name of ["a", "b", "c"]) box.push(notice(name));
    expect(box.take(2).map((n) => n.nickname)).toEqual(["a", "b"]);
    expect(box.pending).toBe(1);
    expect(box.take(5).map((n) => n.nickname)).toEqual(["c"]);
    expect(box.take(5)).toEqual([]);
  });

  it("a waiter wakes when a notice arrives, before its timeout", async () => {
    const box = new Mailbox();
    const started = Date.now();
    const waiting = box.waitForNotice(5000);
    setTimeout(() => box.push(notice("late")), 30);
    await waiting;
    expect(Date.now() - started).toBeLessThan(2000);
    expect(box.pending).toBe(1);
  });

  it("a waiter returns at its timeout, at once when notices are pending, and on abort", async () => {
    const box = new Mailbox();
    let started = Date.now();
    await box.waitForNotice(50);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    const controller = new AbortController();
    started = Date.now();
    setTimeout(() => controller.abort(), 20);
    await box.waitForNotice(5000, controller.signal);
    expect(Date.now() - started).toBeLessThan(2000);
    box.push(notice("x"));
    started = Date.now();
    await box.waitForNotice(5000);
    expect(Date.now() - started).toBeLessThan(50);
  });
});
