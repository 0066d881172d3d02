/**
 * TreeRuntime through its launcher seam: turns are fake and finished by hand, the tree
 * directory is real (a temp folder), so every record, report and notice is what a parent
 * process would write and give.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Notice } from "../../../../src/contracts/notice.js";
import { readReportPage } from "../../../../src/extension/turns/delivery/reports.js";
import type { ChildState } from "../../../../src/extension/turns/runtime.js";
import { turnResult } from "../../../support/fake-turns.js";
import { cleanupRuntimes, runtimeHarness } from "../../../support/runtime-harness.js";

afterEach(cleanupRuntimes);

const usage = (tokens: number) => ({
  input: tokens,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: tokens,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
});

async function settled(state: ChildState): Promise<void> {
  await state.settled;
}

describe("a turn", () => {
  it("that finishes is recorded, its answer stored and one notice given; its slot is free again", async () => {
    const h = await runtimeHarness();
    const worker = await h.child("worker", "count the files");
    await h.runtime.requestTurn(worker, "spawn");
    expect(h.turns.started).toHaveLength(1);
    expect(h.turns.last.spec).toMatchObject({ kind: "spawn", cwd: h.tree.root });
    expect(h.turns.last.spec.prompt).toBe("[NEW_TASK from /root · task worker]\ncount the files");
    expect((await h.tree.readRecord("/root/worker"))?.status).toBe("running");
    expect(h.runtime.hasActiveTurns()).toBe(true);

    h.turns.last.finish(turnResult({ finalText: "42 files", usage: usage(7) }));
    await settled(worker);

    const stored = await h.tree.readRecord("/root/worker");
    expect(stored).toMatchObject({
      status: "completed",
      lastOutcome: "completed",
      runs: ["0001-spawn"],
      notifiedRun: "0001-spawn",
    });
    expect(stored?.usage.totalTokens).toBe(7);
    expect(h.runtime.mailbox.take(5)).toEqual([
      expect.objectContaining({
        agent_name: "/root/worker",
        type: "completed",
        report: "42 files",
        report_stored: true,
        usage: expect.objectContaining({ total_tokens: 7 }),
      }),
    ]);
    expect(await readReportPage(h.tree.agentDir("/root/worker"))).toMatchObject({
      available: true,
      text: "42 files",
      turn_number: 1,
    });
    expect(h.runtime.slots.activeCount).toBe(0);
    expect(h.runtime.hasActiveTurns()).toBe(false);
  });

  it("whose wrapper dies without a result ends errored, unhealthy, with the reason", async () => {
    const h = await runtimeHarness();
    const worker = await h.child("worker");
    await h.runtime.requestTurn(worker, "spawn");
    h.turns.last.finish(undefined);
    await settled(worker);
    expect(worker.record).toMatchObject({ status: "errored", health: "unhealthy", lastOutcome: "failed" });
    const [notice] = h.runtime.mailbox.take(5);
    expect(notice).toMatchObject({
      type: "errored",
      outcome: "failed",
      reason: "wrapper exited (exit code 1) without writing result.json",
    });
  });

  it("that could not start keeps the previous turn's report", async () => {
    const h = await runtimeHarness();
    const worker = await h.child("worker");
    await h.runtime.requestTurn(worker, "spawn");
    h.turns.last.finish(turnResult({ finalText: "the first answer" }));
    await settled(worker);
    h.runtime.mailbox.take(5);

    h.turns.failNextStart = new Error("no space left on device");
    await h.runtime.followup(worker, "and now this");

    expect(h.turns.started).toHaveLength(1);
    expect(worker.record).toMatchObject({
      status: "errored",
      lastReason: "could not start the turn: no space left on device",
      runs: ["0001-spawn"],
    });
    // Nothing ran: the follow-up waits for the next turn.
    expect(worker.record.undelivered.map((part) => [part.kind, part.text])).toEqual([
      ["FOLLOWUP_TASK", "and now this"],
    ]);
    const [notice] = h.runtime.mailbox.take(5);
    expect(notice).toMatchObject({
      type: "errored",
      reason: "could not start the turn: no space left on device",
      report: "",
      report_stored: false,
    });
    expect(await readReportPage(h.tree.agentDir("/root/worker"))).toMatchObject({
      available: true,
      text: "the first answer",
      turn_number: 1,
    });
    expect(h.runtime.slots.activeCount).toBe(0);
  });
});

describe("interrupt_agent", () => {
  it("stops a running turn: one notice, the slot free at once, the unseen task kept for the next turn", async () => {
    const h = await runtimeHarness({ maxActiveChildTurns: 1 });
    const worker = await h.child("worker", "the task");
    const next = await h.child("next");
    await h.runtime.requestTurn(worker, "spawn");
    await h.runtime.requestTurn(next, "spawn");
    expect(h.runtime.queuePosition("/root/next")).toBe(1);

    const previous = await h.runtime.interrupt(worker);

    expect(previous).toBe("running");
    expect(h.turns.started[0]!.stops).toBe(1);
    expect(worker.record).toMatchObject({ status: "interrupted", lastTurnStatus: "interrupted" });
    // The stopped turn got no assistant message, so pi never wrote its prompt: it goes first next time.
    expect(worker.record.undelivered.map((part) => part.text)).toEqual(["the task"]);
    // Its slot went to the queued turn.
    expect(h.turns.started.map((turn) => turn.spec.record.path)).toEqual(["/root/worker", "/root/next"]);
    const notices = h.runtime.mailbox.take(5);
    expect(notices).toEqual([
      expect.objectContaining({
        agent_name: "/root/worker",
        type: "interrupted",
        outcome: "interrupted",
        reason: "interrupted by its parent",
      }),
    ]);
  });

  it("takes a queued turn out of the queue; it never starts", async () => {
    const h = await runtimeHarness({ maxActiveChildTurns: 1 });
    const first = await h.child("first");
    const queued = await h.child("queued");
    await h.runtime.requestTurn(first, "spawn");
    await h.runtime.requestTurn(queued, "spawn");

    expect(await h.runtime.interrupt(queued)).toBe("pending_init");
    expect(queued.record.status).toBe("interrupted");
    expect(h.runtime.queuePosition("/root/queued")).toBeUndefined();
    expect(h.runtime.mailbox.take(5)).toEqual([
      expect.objectContaining({ agent_name: "/root/queued", type: "interrupted" }),
    ]);

    h.turns.last.finish(turnResult());
    await settled(first);
    expect(h.turns.started.map((turn) => turn.spec.record.path)).toEqual(["/root/first"]);
    expect(h.runtime.hasActiveTurns()).toBe(false);
  });

  it("changes nothing on a child with no running or queued turn", async () => {
    const h = await runtimeHarness();
    const idle = await h.child("idle", "x", { status: "completed" });
    expect(await h.runtime.interrupt(idle)).toBe("completed");
    expect(idle.record.status).toBe("completed");
    expect(h.runtime.mailbox.pending).toBe(0);
  });
});

describe("close_agent", () => {
  it("stops the child and turns its whole subtree shutdown, keeping each last status", async () => {
    const h = await runtimeHarness();
    const worker = await h.child("worker");
    await h.runtime.requestTurn(worker, "spawn");
    const descendant = (path: string, status: "completed" | "running", spawnSeq: number) =>
      h.tree.writeRecord({
        ...worker.record,
        path,
        parent: path.slice(0, path.lastIndexOf("/")),
        taskName: path.slice(path.lastIndexOf("/") + 1),
        status,
        spawnSeq,
        runs: [],
      });
    await descendant("/root/worker/sub", "completed", 10);
    await descendant("/root/worker/sub/leaf", "running", 11);

    expect(await h.runtime.close(worker)).toBe("running");

    expect(h.turns.last.stops).toBe(1);
    expect(worker.record).toMatchObject({ status: "shutdown", lastTurnStatus: "interrupted" });
    expect((await h.tree.subtree("/root/worker")).map((r) => [r.path, r.status, r.lastTurnStatus])).toEqual([
      ["/root/worker/sub", "shutdown", "completed"],
      ["/root/worker/sub/leaf", "shutdown", "running"],
    ]);
    expect(h.runtime.mailbox.take(5)).toEqual([
      expect.objectContaining({ type: "shutdown", agent_status: "shutdown", reason: "closed by its parent" }),
    ]);
    expect(h.runtime.slots.activeCount).toBe(0);
    await expect(h.runtime.followup(worker, "more")).rejects.toThrow(
      "/root/worker is shut down; it takes no follow-up",
    );
    await expect(h.runtime.queueMessage(worker, "hello")).rejects.toThrow(
      "/root/worker is shut down; it takes no messages",
    );
  });
});

describe("capacity", () => {
  it("a finished turn releases its slot to the next queued turn, in order", async () => {
    const h = await runtimeHarness({ maxActiveChildTurns: 1 });
    const [a, b, c] = [await h.child("a"), await h.child("b"), await h.child("c")];
    for (const state of [a, b, c]) await h.runtime.requestTurn(state, "spawn");
    expect([h.runtime.queuePosition("/root/b"), h.runtime.queuePosition("/root/c")]).toEqual([1, 2]);
    expect(b.record.status).toBe("pending_init");

    h.turns.last.finish(turnResult());
    await settled(a);
    expect(h.turns.last.spec.record.path).toBe("/root/b");
    expect(b.record.status).toBe("running");
    expect(h.runtime.queuePosition("/root/c")).toBe(1);
    expect(h.runtime.slots.activeCount).toBe(1);
  });
});

describe("followup_task and send_message", () => {
  it("a follow-up behind a running turn starts when that turn ends, after its notice, with the live message its turn did not read first", async () => {
    const h = await runtimeHarness();
    const worker = await h.child("worker");
    await h.runtime.requestTurn(worker, "spawn");

    expect(await h.runtime.queueMessage(worker, "note this")).toEqual({
      delivered: "live",
      messageId: "msg-1",
      pendingMessages: 1,
      queuedMessages: 0,
      status: "running",
    });
    expect(await h.runtime.followup(worker, "then do that")).toEqual({
      status: "running",
      queuedBehindRunningTurn: true,
    });
    expect(worker.record.followupQueued).toBe(true);
    expect(h.turns.started).toHaveLength(1);

    const noticed: Notice[] = [];
    const first = h.turns.last;
    first.finish(turnResult({ finalText: "first done" }));
    await settled(worker);
    // The follow-up is requested once the first turn's end is recorded, which takes file writes
    // (the delivery record among them): under load its start can come after `settled`.
    await vi.waitFor(() => expect(h.turns.started).toHaveLength(2));
    noticed.push(...h.runtime.mailbox.take(5));
    expect(noticed.map((n) => [n.type, n.report])).toEqual([["completed", "first done"]]);
    expect(h.turns.last).toMatchObject({ runName: "0002-followup", spec: { kind: "followup" } });
    expect(h.turns.last.spec.prompt).toBe(
      "[MESSAGE from /root · task worker · id msg-1]\nnote this\n\n[FOLLOWUP_TASK from /root · task worker]\nthen do that",
    );
    expect(worker.record).toMatchObject({
      status: "running",
      followupQueued: false,
      inbox: [],
      runs: ["0001-spawn", "0002-followup"],
    });
  });

  it("a follow-up to an idle child starts its turn now; one refused by `admit` changes nothing", async () => {
    const h = await runtimeHarness();
    const idle = await h.child("idle", "x", { status: "completed", runs: ["0001-spawn"], inbox: [] });
    await expect(
      h.runtime.followup(idle, "nope", async () => Promise.reject(new Error("tree budget spent"))),
    ).rejects.toThrow("tree budget spent");
    expect(idle.record.inbox).toEqual([]);
    expect(h.turns.started).toHaveLength(0);

    expect(await h.runtime.followup(idle, "go on")).toEqual({ status: "running", queuedBehindRunningTurn: false });
    expect(h.turns.last).toMatchObject({ runName: "0002-followup" });
  });
});

describe("TreeRuntime: a turn's limits", () => {
  it("every turn, follow-ups included, runs with the agent's stored limits and the turn limit as time_limit's default", async () => {
    const h = await runtimeHarness({ turnTimeoutMs: 90_000 });
    const worker = await h.child("worker", "task", { limits: { max_turns: 7, grace_seconds: 5 } });
    await h.runtime.requestTurn(worker, "spawn");
    expect(h.turns.last.spec.limits).toEqual({ max_turns: 7, grace_seconds: 5, time_limit: 90 });
    h.turns.last.finish(turnResult({ finalText: "first" }));
    await settled(worker);
    await h.runtime.followup(worker, "and now this");
    expect(h.turns.started).toHaveLength(2);
    expect(h.turns.last.spec.kind).toBe("followup");
    expect(h.turns.last.spec.limits).toEqual({ max_turns: 7, grace_seconds: 5, time_limit: 90 });
  });

  it("an agent's own time_limit wins over the turn limit; an agent without limits gets only the turn limit", async () => {
    const h = await runtimeHarness({ turnTimeoutMs: 90_000 });
    const capped = await h.child("capped", "task", { limits: { time_limit: 20 } });
    const plain = await h.child("plain");
    await h.runtime.requestTurn(capped, "spawn");
    expect(h.turns.last.spec.limits).toEqual({ time_limit: 20 });
    await h.runtime.requestTurn(plain, "spawn");
    expect(h.turns.last.spec.limits).toEqual({ time_limit: 90 });
  });
});
