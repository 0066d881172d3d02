import { describe, expect, it } from "vitest";
import type { Notice } from "../../../../../src/contracts/notice.js";
import { Mailbox } from "../../../../../src/extension/turns/delivery/mailbox.js";
import { FakeClock, settle } from "../../../../support/fake-clock.js";

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

  it("takes the notices of some agents, oldest first, at most N; the others stay in order", () => {
    const box = new Mailbox();
    for (const name of ["a", "x", "b", "a", "y", "c"]) box.push(notice(name));
    expect([...box.senders()].sort()).toEqual(["/root/a", "/root/b", "/root/c", "/root/x", "/root/y"]);
    const wanted = new Set(["/root/a", "/root/b", "/root/c"]);
    expect(box.takeFrom(wanted, 3).map((n) => n.nickname)).toEqual(["a", "b", "a"]);
    expect(box.pending).toBe(3);
    expect(box.takeFrom(wanted, 5).map((n) => n.nickname)).toEqual(["c"]);
    expect(box.takeFrom(wanted, 5)).toEqual([]);
    expect(box.take(5).map((n) => n.nickname)).toEqual(["x", "y"]);
    expect(box.senders().size).toBe(0);
  });

  it("a waiter wakes when a notice arrives, before its timeout, and leaves no timer behind", async () => {
    const clock = new FakeClock();
    const box = new Mailbox(clock);
    let woke = false;
    const waiting = box.waitForNotice(5000).then(() => (woke = true));
    await clock.advance(4999);
    expect(woke).toBe(false);
    box.push(notice("late"));
    await waiting;
    expect(woke).toBe(true);
    expect(clock.pending().length).toBe(0);
    expect(box.pending).toBe(1);
  });

  it("a waiter that names the arrivals it has seen sleeps past them, and wakes for a later notice", async () => {
    const clock = new FakeClock();
    const box = new Mailbox(clock);
    box.push(notice("seen"));
    const seen = box.arrivals;
    let woke = false;
    const waiting = box.waitForNotice(5000, undefined, seen).then(() => (woke = true));
    await clock.advance(4999);
    expect(woke).toBe(false); // the pending notice it has seen does not wake it
    box.push(notice("new"));
    await waiting;
    expect(clock.pending().length).toBe(0);
    // Taking notices does not lower the count: a notice that arrived after `seen` still wakes at once.
    box.take(5);
    expect(box.arrivals).toBe(2);
    let again = false;
    void box.waitForNotice(5000, undefined, seen).then(() => (again = true));
    await settle();
    expect(again).toBe(true);
  });

  it("a waiter returns at its timeout, at once when notices are pending, and on abort", async () => {
    const clock = new FakeClock();
    const box = new Mailbox(clock);
    let timedOut = false;
    const waiting = box.waitForNotice(50).then(() => (timedOut = true));
    await clock.advance(49);
    expect(timedOut).toBe(false);
    await clock.advance(1);
    await waiting;
    expect(timedOut).toBe(true);

    const controller = new AbortController();
    const aborted = box.waitForNotice(5000, controller.signal);
    expect(clock.pending().length).toBe(1);
    controller.abort();
    await aborted;
    expect(clock.pending().length).toBe(0);

    box.push(notice("x"));
    await box.waitForNotice(5000);
    expect(clock.pending().length).toBe(0);
  });

  it("wakeAll releases every waiter (a process that ends keeps no timer)", async () => {
    const clock = new FakeClock();
    const box = new Mailbox(clock);
    const waiters = [box.waitForNotice(5000), box.waitForNotice(9000)];
    expect(clock.pending().length).toBe(2);
    box.wakeAll();
    await Promise.all(waiters);
    expect(clock.pending().length).toBe(0);
    expect(box.pending).toBe(0);
  });
});
