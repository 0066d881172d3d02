/**
 * Restore on session_start through the launcher seam: a restarted parent settles the turns
 * its previous process left running, as their result says (waiting for a wrapper still
 * finishing), and gives each turn's notice once.
 */
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TREE_FILES } from "../../../../src/contracts/layout.js";
import type { AgentRecordV1, PendingPart } from "../../../../src/contracts/tree.js";
import { readReportPage } from "../../../../src/extension/turns/delivery/reports.js";
import { restore } from "../../../../src/extension/turns/restore.js";
import { FailingTree } from "../../../support/failing-tree.js";
import { turnResult } from "../../../support/fake-turns.js";
import { agentRecord } from "../../../support/records.js";
import { cleanupRuntimes, runtimeHarness } from "../../../support/runtime-harness.js";

afterEach(cleanupRuntimes);

const task: PendingPart = { kind: "NEW_TASK", from: "/root", text: "the task", sentAt: "2026-01-01T00:00:00.000Z" };

function leftRunning(overrides: Partial<AgentRecordV1> = {}): AgentRecordV1 {
  return agentRecord({ status: "running", runs: ["0001-spawn"], runningParts: [task], ...overrides });
}

describe("restore", () => {
  it("a turn that finished while its parent was away ends as its result says, with its notice given once", async () => {
    const h = await runtimeHarness();
    await h.tree.writeRecord(leftRunning());
    const runDir = path.join(h.tree.agentDir("/root/worker"), TREE_FILES.runs, "0001-spawn");
    h.turns.previousResults.set(runDir, turnResult({ finalText: "found it", runId: "r1" }));

    const first = h.restarted();
    await restore(first, []);

    expect(h.turns.settledCalls).toEqual([{ runDirs: [runDir], waitMs: 0 }]);
    expect(first.children.get("/root/worker")?.record).toMatchObject({
      status: "completed",
      notifiedRun: "0001-spawn",
      lastOutcome: "completed",
    });
    expect(first.children.get("/root/worker")?.record.runningParts).toBeUndefined();
    const taken = first.mailbox.take(5);
    expect(taken).toEqual([
      expect.objectContaining({
        agent_name: "/root/worker",
        type: "completed",
        report: "found it",
        report_stored: true,
      }),
    ]);
    // As wait_agent's result does once pi holds it: the notices it returned are recorded as taken.
    await first.noticesHeld(first.deliveryKeysOf(taken));
    expect(await readReportPage(h.tree.agentDir("/root/worker"))).toMatchObject({ text: "found it", turn_number: 1 });

    const second = h.restarted();
    await restore(second, []);
    expect(second.children.get("/root/worker")?.record.status).toBe("completed");
    expect(second.mailbox.pending).toBe(0);
  });

  it("a turn that left no result becomes interrupted and keeps its prompt for the next turn", async () => {
    const h = await runtimeHarness();
    await h.tree.writeRecord(leftRunning());
    const rt = h.restarted();
    await restore(rt, []);
    const record = rt.children.get("/root/worker")!.record;
    expect(record).toMatchObject({
      status: "interrupted",
      lastTurnStatus: "interrupted",
      lastReason: "the parent went away and the turn's wrapper left no result.json",
    });
    expect(record.undelivered).toEqual([task]);
    expect(rt.mailbox.pending).toBe(0);
    expect((await h.tree.readRecord("/root/worker"))?.status).toBe("interrupted");
  });

  it("a queued turn is queued again under the usual capacity rules (a slot is free: it starts), without waiting for any wrapper", async () => {
    const h = await runtimeHarness();
    await h.tree.writeRecord(agentRecord({ status: "pending_init", runs: [], inbox: [task] }));
    const rt = h.restarted();
    await restore(rt, []);
    expect(h.turns.settledCalls).toEqual([]);
    expect(rt.children.get("/root/worker")?.record).toMatchObject({ status: "running", inbox: [] });
    expect(h.turns.last.spec).toMatchObject({ kind: "spawn" });
    expect(h.turns.last.spec.prompt).toContain("the task");
  });

  it("a turn recorded running whose wrapper never started is started again, once, its prompt intact, the unstarted run dropped", async () => {
    const h = await runtimeHarness();
    await h.tree.writeRecord(leftRunning({ runs: ["0001-spawn", "0002-followup"], runningParts: [task] }));
    h.turns.neverStarted.add(path.join(h.tree.agentDir("/root/worker"), TREE_FILES.runs, "0002-followup"));
    const rt = h.restarted();
    await restore(rt, []);
    expect(h.turns.started).toHaveLength(1);
    expect(h.turns.last.spec).toMatchObject({ kind: "followup" });
    expect(h.turns.last.spec.prompt).toContain("the task");
    const record = rt.children.get("/root/worker")!.record;
    expect(record).toMatchObject({ status: "running", runs: ["0001-spawn", h.turns.last.runName], undelivered: [] });
    expect(rt.children.get("/root/worker")!.phase.name).toBe("running");
    expect(rt.mailbox.pending).toBe(0);
  });

  it("a deeper agent's turn that never started is not started by the root: interrupted, its prompt kept, the run dropped", async () => {
    const h = await runtimeHarness();
    const deeper = agentRecord({
      path: "/root/worker/sub",
      parent: "/root/worker",
      nickname: "Sub",
      status: "running",
      runs: ["0001-spawn"],
      runningParts: [task],
    });
    await h.tree.writeRecord(agentRecord({ status: "completed", runs: ["0001-spawn"], notifiedRun: "0001-spawn" }));
    await h.tree.writeRecord(deeper);
    h.turns.neverStarted.add(path.join(h.tree.agentDir("/root/worker/sub"), TREE_FILES.runs, "0001-spawn"));
    const rt = h.restarted();
    await restore(rt, []);
    expect(h.turns.started).toEqual([]);
    expect(await h.tree.readRecord("/root/worker/sub")).toMatchObject({
      status: "interrupted",
      runs: [],
      undelivered: [task],
    });
  });

  it("a restored child takes a follow-up through the same launcher", async () => {
    const h = await runtimeHarness();
    await h.tree.writeRecord(agentRecord({ status: "completed", runs: ["0001-spawn"] }));
    const rt = h.restarted();
    await restore(rt, []);
    await rt.followup(rt.children.get("/root/worker")!, "again");
    expect(h.turns.last).toMatchObject({
      runName: "0002-followup",
      spec: { prompt: "[FOLLOWUP_TASK from /root · task worker]\nagain" },
    });
  });

  it("a restore whose writes fail (a full disk) still starts: the turn is settled in memory, reported, and written at shutdown", async () => {
    let tree!: FailingTree;
    const h = await runtimeHarness({}, (root) => (tree = new FailingTree(root)));
    await h.tree.writeRecord(leftRunning());
    tree.fillDisk();
    const rt = h.restarted();
    await restore(rt, []);
    expect(rt.children.get("/root/worker")?.record.status).toBe("interrupted");
    expect(h.problems).toEqual([
      expect.stringMatching(
        /^pi-subagent-tree: could not record how the turn \/root\/worker left running ended: ENOSPC/,
      ),
    ]);
    expect((await h.tree.readRecord("/root/worker"))?.status).toBe("running");
    tree.heal();
    await rt.shutdown();
    expect((await h.tree.readRecord("/root/worker"))?.status).toBe("interrupted");
  });
});
