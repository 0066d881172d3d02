/**
 * A turn whose start or end cannot be written to the tree directory (a full disk, a folder
 * turned read-only): no promise of the runtime rejects unhandled, the parent still gets one
 * notice per turn — `errored`, with the write's failure as its reason — the user sees one
 * line, the slot is freed and a wait never hangs. Failures come from the TreeDir seam
 * (test/support/failing-tree.ts), so no disk is filled here.
 */
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Notice } from "../../../../src/contracts/notice.js";
import { listAgentsTool } from "../../../../src/extension/tools/list-agents.js";
import { waitAgentTool } from "../../../../src/extension/tools/wait-agent.js";
import { FailingTree } from "../../../support/failing-tree.js";
import { turnResult } from "../../../support/fake-turns.js";
import { cleanupRuntimes, type RuntimeHarness, runtimeHarness } from "../../../support/runtime-harness.js";

afterEach(cleanupRuntimes);

/** Rejections nobody handled while a test ran (before the fix: ENOSPC from writeRecord ← persist ← settle ← finishTurn). */
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeEach(() => {
  unhandled.length = 0;
  process.on("unhandledRejection", onUnhandled);
});
afterEach(() => {
  process.off("unhandledRejection", onUnhandled);
});

/** Lets every pending promise settle (an unhandled rejection is reported after the microtasks). */
const drain = () => new Promise((resolve) => setImmediate(resolve));

async function failingHarness(limits = {}): Promise<{ h: RuntimeHarness; tree: FailingTree }> {
  let tree!: FailingTree;
  const h = await runtimeHarness(limits, (root) => (tree = new FailingTree(root)));
  return { h, tree };
}

function tools(h: RuntimeHarness) {
  const deps = { pi: {} as ExtensionAPI, runtime: () => h.runtime };
  return { list: listAgentsTool(deps), wait: waitAgentTool(deps) };
}

describe("a turn that ends while its record cannot be written", () => {
  it("gives one errored notice with the reason and the answer, one line for the user, frees its slot, rejects nothing", async () => {
    const { h, tree } = await failingHarness();
    const worker = await h.child("worker");
    await h.runtime.requestTurn(worker, "spawn");
    tree.fillDisk();
    h.turns.last.finish(turnResult({ finalText: "42 files" }));
    await worker.settled;
    await drain();

    expect(unhandled).toEqual([]);
    const [notice, ...more] = h.runtime.mailbox.take(5);
    expect(more).toEqual([]);
    expect(notice).toMatchObject({
      agent_name: "/root/worker",
      type: "errored",
      agent_status: "errored",
      outcome: "completed",
      reason:
        "the turn ended completed, but its record could not be written: ENOSPC: no space left on device, open 'agent.json'",
      report: "42 files",
    });
    expect(h.problems).toEqual([
      "pi-subagent-tree: could not record the end of a turn (completed) of /root/worker: ENOSPC: no space left on device, open 'agent.json'",
    ]);
    expect(h.runtime.slots.activeCount).toBe(0);
    expect(h.runtime.hasActiveTurns()).toBe(false);
    // The disk still says running; list_agents shows what this process knows.
    expect((await h.tree.readRecord("/root/worker"))?.status).toBe("running");
    const listed = (await tools(h).list.execute("c", {}, undefined, undefined, {} as never)).details as {
      agents: Array<{ agent_status: string }>;
    };
    expect(listed.agents.map((agent) => agent.agent_status)).toEqual(["errored"]);
  });

  it("a wait_agent already waiting returns that notice instead of waiting forever", async () => {
    const { h, tree } = await failingHarness();
    const worker = await h.child("worker");
    await h.runtime.requestTurn(worker, "spawn");
    const waiting = tools(h).wait.execute("c", { timeout_ms: 60_000 }, undefined, undefined, {} as never);
    tree.fillDisk();
    h.turns.last.finish(turnResult({ status: "failed", errorMessage: "pi crashed", finalText: "" }));
    const result = (await waiting).details as { notices: Notice[]; timed_out: boolean };
    expect(result.timed_out).toBe(false);
    expect(result.notices).toMatchObject([
      {
        agent_name: "/root/worker",
        type: "errored",
        outcome: "failed",
        reason: expect.stringMatching(
          /^the turn ended failed, but its record could not be written: ENOSPC.*; pi crashed$/,
        ),
      },
    ]);
    await drain();
    expect(unhandled).toEqual([]);
  });

  it("a queued turn started by the slot's release whose run cannot be recorded does not start (a wrapper never runs unrecorded): an errored notice, its prompt kept, no unhandled rejection", async () => {
    const { h, tree } = await failingHarness({ maxActiveChildTurns: 1 });
    const first = await h.child("first");
    const second = await h.child("second", "the second task");
    await h.runtime.requestTurn(first, "spawn");
    await h.runtime.requestTurn(second, "spawn");
    expect(h.runtime.queuePosition("/root/second")).toBe(1);

    tree.fillDisk();
    h.turns.started[0]!.finish(turnResult({ finalText: "first done" }));
    await first.settled;
    await drain();
    // Nobody awaits the queued turn's launch: a failed write must not be an unhandled rejection.
    expect(unhandled).toEqual([]);
    expect(h.turns.started.map((turn) => turn.spec.record.path)).toEqual(["/root/first"]);
    expect(second.record).toMatchObject({ status: "errored", runs: [] });
    expect(second.record.undelivered.map((part) => part.text)).toEqual(["the second task"]);
    const notices = h.runtime.mailbox.take(5);
    expect(notices.map((n) => [n.agent_name, n.type]).sort()).toEqual([
      ["/root/first", "errored"],
      ["/root/second", "errored"],
    ]);
    expect(notices.find((n) => n.agent_name === "/root/second")!.reason).toContain("could not start the turn: ENOSPC");
    expect(h.runtime.slots.activeCount).toBe(0);

    // Once the disk has room, the kept prompt starts with the next turn.
    tree.heal();
    await h.runtime.followup(second, "again");
    expect(h.turns.last.spec.prompt).toContain("the second task");
  });

  it("a turn that can neither start nor be recorded still gives its errored notice", async () => {
    const { h, tree } = await failingHarness();
    const worker = await h.child("worker");
    tree.fillDisk();
    h.turns.failNextStart = new Error("ENOSPC: no space left on device, mkdir 'runs/0001-spawn'");
    await h.runtime.requestTurn(worker, "spawn");
    await drain();
    expect(unhandled).toEqual([]);
    expect(h.runtime.mailbox.take(5)).toMatchObject([
      {
        type: "errored",
        reason: expect.stringMatching(
          /^the turn ended failed, but its record could not be written: ENOSPC.*; could not start the turn: ENOSPC/,
        ),
      },
    ]);
    expect(h.runtime.hasActiveTurns()).toBe(false);
  });

  it("shutdown writes what a failed write left unsaved, once the disk has room", async () => {
    const { h, tree } = await failingHarness();
    const worker = await h.child("worker");
    await h.runtime.requestTurn(worker, "spawn");
    tree.fillDisk();
    h.turns.last.finish(turnResult({ finalText: "done" }));
    await worker.settled;
    tree.heal();
    await h.runtime.shutdown();
    expect(await h.tree.readRecord("/root/worker")).toMatchObject({
      status: "errored",
      lastOutcome: "completed",
      notifiedRun: "0001-spawn",
    });
  });

  it("a wrapper that leaves a damaged result.json ends the turn errored with why", async () => {
    const { h } = await failingHarness();
    const worker = await h.child("worker");
    h.turns.damageNextResult = 'result.json is damaged: field "usage" is missing';
    await h.runtime.requestTurn(worker, "spawn");
    h.turns.last.finish(undefined);
    await worker.settled;
    expect(h.runtime.mailbox.take(5)).toMatchObject([
      {
        type: "errored",
        outcome: "failed",
        reason: `wrapper exited (exit code 1); the run's result.json is damaged: field "usage" is missing`,
      },
    ]);
  });

  it("a turn whose end fails in a way recording did not foresee still frees its slot and gives its one notice", async () => {
    const { h } = await failingHarness();
    const worker = await h.child("worker");
    await h.runtime.requestTurn(worker, "spawn");
    // A launcher that hands back what no checked result.json can be: usage missing.
    h.turns.last.finish(turnResult({ usage: undefined as never }));
    await worker.settled;
    await drain();
    expect(unhandled).toEqual([]);
    expect(h.runtime.mailbox.take(5)).toMatchObject([
      { type: "errored", outcome: "failed", reason: expect.stringMatching(/^recording the end of the turn failed: /) },
    ]);
    expect(h.problems).toEqual([
      expect.stringMatching(/^pi-subagent-tree: recording the end of \/root\/worker's turn 0001-spawn failed: /),
    ]);
    expect(h.runtime.hasActiveTurns()).toBe(false);
    expect(h.runtime.slots.activeCount).toBe(0);
  });
});
