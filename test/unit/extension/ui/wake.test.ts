import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Notice } from "../../../../src/contracts/notice.js";
import { Mailbox } from "../../../../src/extension/turns/delivery/mailbox.js";
import { messageNotice, stopNotice, turnEndNotice } from "../../../../src/extension/turns/delivery/notices.js";
import { IdleWake, WAKE_BATCH_MS, wakeEnabled, wakesTheRoot, wakeText } from "../../../../src/extension/ui/wake.js";
import { FakeClock } from "../../../support/fake-clock.js";
import { agentRecord } from "../../../support/records.js";

const ended = (name: string, status: "completed" | "errored" | "aborted" = "completed"): Notice =>
  turnEndNotice(agentRecord({ path: `/root/${name}`, status }), {
    outcome: status === "errored" ? "failed" : status,
    text: `${name} done`,
    reportStored: true,
  });

describe("the idle wake", () => {
  let idle: boolean;
  let mailbox: Mailbox;
  let sent: Array<{ notices: Notice[]; pending: number }>;
  let wake: IdleWake;
  let clock: FakeClock;
  /** What pi does with a wake: takes it (its message_end comes), refuses it (throws), or drops it silently. */
  let pi: "takes" | "refuses" | "drops";
  let reached: Set<Notice>;

  beforeEach(() => {
    clock = new FakeClock();
    idle = true;
    mailbox = new Mailbox();
    sent = [];
    pi = "takes";
    reached = new Set();
    wake = new IdleWake({
      mailbox,
      isIdle: () => idle,
      send: (notices, pending) => {
        if (pi === "refuses") return false;
        sent.push({ notices, pending });
        if (pi === "takes") for (const notice of notices) reached.add(notice);
        return true;
      },
      reachedPi: (notice) => reached.has(notice),
      clock,
    });
  });
  afterEach(() => {
    wake.stop();
  });

  const arrive = (notice: Notice) => {
    mailbox.push(notice);
    wake.offer(notice);
  };

  it("wakes an idle root once for notices that arrive together, taking them out of the mailbox", async () => {
    arrive(ended("a"));
    arrive(ended("b", "errored"));
    expect(sent).toEqual([]);
    await clock.advance(WAKE_BATCH_MS);
    expect(sent.map((s) => s.notices.map((n) => n.agent_name))).toEqual([["/root/a", "/root/b"]]);
    expect(mailbox.pending).toBe(0);
  });

  it("waits while the root is busy and wakes it when it is idle again, unless a wait_agent took the notice first", async () => {
    idle = false;
    arrive(ended("a"));
    await clock.advance(WAKE_BATCH_MS);
    expect(sent).toEqual([]);
    idle = true;
    wake.tick();
    expect(sent).toHaveLength(1);

    idle = false;
    arrive(ended("b"));
    mailbox.take(5); // the model's wait_agent read it
    idle = true;
    await clock.advance(WAKE_BATCH_MS);
    wake.tick();
    expect(sent).toHaveLength(1);
  });

  it("does not wake for interrupts and shutdowns the root ordered itself; they stay for wait_agent", async () => {
    const record = agentRecord({ status: "interrupted" });
    arrive(stopNotice(record, "interrupt", undefined));
    arrive(stopNotice(agentRecord({ status: "shutdown" }), "close", undefined));
    await clock.advance(WAKE_BATCH_MS * 4);
    wake.tick();
    expect(sent).toEqual([]);
    expect(mailbox.pending).toBe(2);
    // A waking notice then brings the pending ones along, in mailbox order.
    arrive(messageNotice("/root/worker", undefined, "question"));
    await clock.advance(WAKE_BATCH_MS);
    expect(sent[0]!.notices.map((n) => n.type)).toEqual(["interrupted", "shutdown", "message"]);
  });

  it("sends at most 5 notices a wake, says how many remain, and sends the rest only after the woken turn ran", async () => {
    for (const name of ["a", "b", "c", "d", "e", "f", "g"]) arrive(ended(name));
    await clock.advance(WAKE_BATCH_MS);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.notices).toHaveLength(5);
    expect(sent[0]!.pending).toBe(2);
    wake.tick(); // still idle: the woken turn has not started yet
    expect(sent).toHaveLength(1);
    idle = false;
    wake.tick();
    idle = true;
    wake.tick();
    expect(sent).toHaveLength(2);
    expect(sent[1]!.notices.map((n) => n.agent_name)).toEqual(["/root/f", "/root/g"]);
  });

  it("a wake pi refused gives its notices back, first in the mailbox, and they are offered again", async () => {
    pi = "refuses";
    arrive(ended("a"));
    await clock.advance(WAKE_BATCH_MS);
    expect(sent).toEqual([]);
    expect(mailbox.list().map((n) => n.agent_name)).toEqual(["/root/a"]);
    pi = "takes";
    await clock.advance(WAKE_BATCH_MS);
    expect(sent.map((s) => s.notices.map((n) => n.agent_name))).toEqual([["/root/a"]]);
    expect(mailbox.pending).toBe(0);
  });

  it("a wake whose message never reached pi while the root stayed idle gives its notices back after the start wait", async () => {
    pi = "drops";
    arrive(ended("a"));
    await clock.advance(WAKE_BATCH_MS);
    expect(sent).toHaveLength(1);
    expect(mailbox.pending).toBe(0);
    await clock.advance(5000);
    wake.tick();
    expect(mailbox.list().map((n) => n.agent_name)).toEqual(["/root/a"]);
    pi = "takes";
    await clock.advance(WAKE_BATCH_MS);
    expect(sent).toHaveLength(2);
    expect(mailbox.pending).toBe(0);
    // Once pi holds it, the start wait gives nothing back.
    await clock.advance(5000);
    wake.tick();
    expect(mailbox.pending).toBe(0);
  });

  it("stop() leaves no timer", () => {
    arrive(ended("a"));
    wake.stop();
    expect(clock.pending().length).toBe(0);
  });
});

describe("wake settings and text", () => {
  it.each([
    [undefined, true],
    ["1", true],
    ["0", false],
    ["false", false],
    [" OFF ", false],
    ["no", false],
  ])("PI_SUBAGENTS_WAKE=%s wakes: %s", (value, on) => {
    expect(wakeEnabled(value === undefined ? {} : { PI_SUBAGENTS_WAKE: value })).toBe(on);
  });

  it("only turn ends, messages and questions wake", () => {
    expect(
      (["completed", "errored", "aborted", "message", "question", "interrupted", "shutdown"] as const).filter((type) =>
        wakesTheRoot({ type }),
      ),
    ).toEqual(["completed", "errored", "aborted", "message", "question"]);
  });

  it("the model reads the notices as wait_agent returns them", () => {
    const notice = ended("a");
    const [intro, json] = wakeText([notice], 3).split("\n");
    expect(intro).toMatch(/^While you were idle, your child agents sent these notices/);
    expect(JSON.parse(json!)).toEqual({ notices: [notice], pending: 3 });
  });
});
