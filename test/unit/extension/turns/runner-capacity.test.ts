/**
 * A runner's capacity holds across the whole tree: the root's runtime and a nested
 * agent's runtime (another process of the same tree in real life) share one tree directory and
 * its runner slots. Turns are fake and finished by hand; the slots are the real leases
 * (runner-slots.ts over lib/slot-lease.ts) and time is a FakeClock, so the poll that finds a
 * freed slot runs when the test moves the clock.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ResolvedRunner } from "../../../../src/contracts/runners.js";
import type { AgentRecordV1 } from "../../../../src/contracts/tree.js";
import type { TreeLimits } from "../../../../src/extension/config.js";
import { progressOf } from "../../../../src/extension/progress/progress.js";
import { TreeDir } from "../../../../src/extension/tree/tree-dir.js";
import { childState } from "../../../../src/extension/turns/child-state.js";
import { SLOT_POLL_MS, treeRunnerGate } from "../../../../src/extension/turns/runner-slots.js";
import { type ChildState, TreeRuntime } from "../../../../src/extension/turns/runtime.js";
import { FakeClock } from "../../../support/fake-clock.js";
import { FakeTurns, turnResult } from "../../../support/fake-turns.js";
import { agentRecord } from "../../../support/records.js";

const LIMITS: TreeLimits = { maxActiveChildTurns: 3, maxDepth: 3, maxSpawns: 64, turnTimeoutMs: 60_000 };
const box = (capacity: number): ResolvedRunner => ({ name: "box", kind: "sandbox", capacity, hide: [] });

const dirs: string[] = [];
const runtimes: TreeRuntime[] = [];
const processes: ChildProcess[] = [];
afterEach(async () => {
  for (const child of processes.splice(0)) {
    child.kill("SIGKILL");
    if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.once("exit", r));
  }
  for (const runtime of runtimes.splice(0)) {
    runtime.slots.close();
    await runtime.writesSettled();
  }
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** One tree directory, the processes of the tree as runtimes over it, fake turns for all. */
async function treeOf(options: { watch: boolean }) {
  const root = await mkdtemp(path.join(os.tmpdir(), "runner-capacity-"));
  dirs.push(root);
  const tree = new TreeDir(root);
  await tree.init("session");
  const clock = new FakeClock();
  const turns = new FakeTurns();
  let seq = 0;
  const runtime = (self: string) => {
    const made = new TreeRuntime({ self, isRoot: self === "/root", treeDir: root }, tree, LIMITS, root, {
      turns,
      clock,
      runnerGate: treeRunnerGate(root, { clock, ...(!options.watch && { watchDir: () => undefined }) }),
    });
    runtimes.push(made);
    return made;
  };
  /** A child of `parent`'s runtime, recorded, its first turn not requested yet. */
  const child = async (parent: TreeRuntime, name: string, overrides: Partial<AgentRecordV1> = {}) => {
    const agentPath = `${parent.self}/${name}`;
    const record = agentRecord({
      path: agentPath,
      nickname: `N${++seq}`,
      spawnSeq: seq,
      status: "pending_init",
      sessionPath: path.join(tree.agentDir(agentPath), "session.jsonl"),
      inbox: [{ kind: "NEW_TASK", from: parent.self, text: `task for ${name}`, sentAt: new Date().toISOString() }],
      ...overrides,
    });
    const state: ChildState = childState(record);
    parent.children.set(record.path, state);
    await tree.writeRecord(record);
    return state;
  };
  const startedPaths = () => turns.started.map((turn) => turn.spec.record.path);
  return { root, tree, clock, turns, runtime, child, startedPaths };
}

describe("a runner's capacity across the tree", () => {
  it("a nested agent's turns on the root's runner count against the same capacity; a freed slot starts the waiting one", async () => {
    const t = await treeOf({ watch: false });
    const rootRt = t.runtime("/root");
    const leadRt = t.runtime("/root/lead");
    await t.child(rootRt, "lead");
    const a = await t.child(rootRt, "a", { runner: box(2) });
    const b = await t.child(rootRt, "b", { runner: box(2) });
    const c = await t.child(leadRt, "c", { runner: box(2) });
    const local = await t.child(leadRt, "local");
    await rootRt.requestTurn(a, "spawn");
    await rootRt.requestTurn(b, "spawn");
    await leadRt.requestTurn(c, "spawn");
    // The lead's process has room for 3 turns, but the runner's 2 slots are the root's children's.
    expect(t.startedPaths()).toEqual(["/root/a", "/root/b"]);
    expect(c.record.status).toBe("pending_init");
    expect(leadRt.runnerWait("/root/lead/c")).toEqual({ runner: "box", inUse: 2, capacity: 2 });
    const [listed] = await progressOf(leadRt).snapshot("/root/lead", t.clock);
    expect(listed).toMatchObject({ queuePosition: 1, waitingFor: "runner box (2/2 in use)" });
    // A full runner holds up no local turn.
    await leadRt.requestTurn(local, "spawn");
    expect(t.startedPaths()).toEqual(["/root/a", "/root/b", "/root/lead/local"]);

    t.turns.started[0]!.finish(turnResult({ finalText: "done" }));
    await a.settled;
    // The release is in the tree directory; the lead's process finds it at its next look.
    expect(t.startedPaths()).not.toContain("/root/lead/c");
    await t.clock.advance(SLOT_POLL_MS);
    expect(t.startedPaths()).toEqual(["/root/a", "/root/b", "/root/lead/local", "/root/lead/c"]);
    expect(leadRt.runnerWait("/root/lead/c")).toBeUndefined();
  });

  it("a release is heard at once through the folder watch, without waiting for the poll", async () => {
    const t = await treeOf({ watch: true });
    const rootRt = t.runtime("/root");
    const leadRt = t.runtime("/root/lead");
    await t.child(rootRt, "lead");
    const a = await t.child(rootRt, "a", { runner: box(1) });
    const c = await t.child(leadRt, "c", { runner: box(1) });
    await rootRt.requestTurn(a, "spawn");
    await leadRt.requestTurn(c, "spawn");
    expect(t.startedPaths()).toEqual(["/root/a"]);
    t.turns.started[0]!.finish(turnResult({ finalText: "done" }));
    await a.settled;
    // The clock never moves: only the watch can start it.
    await vi.waitFor(() => expect(t.startedPaths()).toEqual(["/root/a", "/root/lead/c"]), { timeout: 5000 });
  });

  it("a turn whose wrapper outlives its root keeps its slot: the next root's turn waits until that wrapper ends", async () => {
    const t = await treeOf({ watch: false });
    const first = t.runtime("/root");
    const a = await t.child(first, "a", { runner: box(1) });
    // The turn's wrapper: a real process the slot is handed to.
    const wrapper = spawn("sleep", ["60"], { stdio: "ignore" });
    processes.push(wrapper);
    t.turns.nextPid = wrapper.pid;
    await first.requestTurn(a, "spawn");
    expect(t.startedPaths()).toEqual(["/root/a"]);
    // The root leaves with its turn detached; a new root of the tree queues another turn on box.
    first.slots.close();
    const next = t.runtime("/root");
    const b = await t.child(next, "b", { runner: box(1) });
    await next.requestTurn(b, "spawn");
    await t.clock.advance(SLOT_POLL_MS * 3);
    expect(t.startedPaths()).toEqual(["/root/a"]);
    expect(next.runnerWait("/root/b")).toEqual({ runner: "box", inUse: 1, capacity: 1 });
    // The wrapper ends (killed: no release written); the poll finds its slot free.
    const exited = new Promise((resolve) => wrapper.once("exit", resolve));
    wrapper.kill("SIGKILL");
    await exited;
    await t.clock.advance(SLOT_POLL_MS);
    expect(t.startedPaths()).toEqual(["/root/a", "/root/b"]);
  });
});
