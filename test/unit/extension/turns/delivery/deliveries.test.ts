/**
 * Exactly once: a turn's notice reaches the parent's mailbox once across any number of
 * restarts, whatever step of its delivery the parent was killed at. The kill is injected: the
 * runtime's fault hook throws at one step, and that process is dropped there (nothing it holds
 * in memory counts; only what it wrote does). A new runtime over the same tree directory
 * restores and reads its mailbox as wait_agent does (take, then the taken record on disk);
 * a third one must find nothing more.
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TREE_FILES } from "../../../../../src/contracts/layout.js";
import type { Notice } from "../../../../../src/contracts/notice.js";
import { TreeDir } from "../../../../../src/extension/tree/tree-dir.js";
import { childState } from "../../../../../src/extension/turns/child-state.js";
import { DeliveryLog, type DeliveryStep } from "../../../../../src/extension/turns/delivery/deliveries.js";
import { restore } from "../../../../../src/extension/turns/restore.js";
import { TreeRuntime } from "../../../../../src/extension/turns/runtime.js";
import { writeResultAtomic } from "../../../../../src/wrapper/artifacts.js";
import { FakeTurns, turnResult } from "../../../../support/fake-turns.js";
import { agentRecord } from "../../../../support/records.js";

const LIMITS = { maxActiveChildTurns: 3, maxDepth: 3, maxSpawns: 64, turnTimeoutMs: 60_000 };
const dirs: string[] = [];
const runtimes: TreeRuntime[] = [];

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((rt) => rt.writesSettled()));
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

class Killed extends Error {}

async function treeCase() {
  const root = await mkdtemp(path.join(os.tmpdir(), "deliveries-test-"));
  dirs.push(root);
  const tree = new TreeDir(root);
  await tree.init("session");
  const turns = new FakeTurns();
  const problems: string[] = [];
  const process = (fault?: DeliveryStep) => {
    const rt = new TreeRuntime({ self: "/root", isRoot: true, treeDir: root }, tree, LIMITS, root, {
      turns,
      hooks: { problem: (line) => problems.push(line) },
      ...(fault && {
        fault: (step: string) => {
          if (step === fault) throw new Killed(`killed at ${step}`);
        },
      }),
    });
    runtimes.push(rt);
    return rt;
  };
  /** pi's session entries, shared by every process of the case (the session file). */
  const session: unknown[] = [];
  return { root, tree, turns, problems, process, session };
}

/**
 * What wait_agent and pi do: take the notices, hand them to pi (which writes them to its
 * session), then record them taken. Undefined: killed before pi held them; the session
 * entries (`session`) hold what pi did.
 */
async function waitAgent(rt: TreeRuntime, session: unknown[]): Promise<Notice[] | undefined> {
  const notices = rt.mailbox.take(10);
  const keys = rt.deliveryKeysOf(notices);
  session.push({ type: "message", message: { role: "toolResult", details: { notices, delivery_keys: keys } } });
  try {
    await rt.noticesHeld(keys);
  } catch (err) {
    if (err instanceof Killed) return undefined;
    throw err;
  }
  return notices;
}

/** Process A: one child's turn runs and completes; the process is killed at `fault` (if given). */
async function firstProcess(c: Awaited<ReturnType<typeof treeCase>>, fault: DeliveryStep | undefined) {
  const a = c.process(fault);
  const record = agentRecord({
    path: "/root/worker",
    status: "pending_init",
    inbox: [{ kind: "NEW_TASK", from: "/root", text: "the task", sentAt: new Date().toISOString() }],
  });
  const state = childState(record);
  a.children.set(record.path, state);
  await c.tree.writeRecord(record);
  await a.requestTurn(state, "spawn");
  const result = turnResult({ status: "completed", finalText: "the answer" });
  await writeResultAtomic(path.join(c.turns.last.runDir, "result.json"), result);
  c.turns.last.finish(result);
  // The end is recorded (or the process is killed in it: its catch reports and gives up).
  await state.settled;
  // A kill before the mailbox: the rest of this process never ran.
  if (fault === "end_recorded" || fault === "given" || fault === "pushed") return [];
  const seen = await waitAgent(a, c.session);
  return seen ?? [];
}

async function restartAndRead(c: Awaited<ReturnType<typeof treeCase>>): Promise<Notice[]> {
  const rt = c.process();
  await restore(rt, c.session);
  await Promise.all([...rt.children.values()].map((state) => state.settled));
  return (await waitAgent(rt, c.session)) ?? [];
}

/** The notices of `agent` the session holds (what the model read), across every process. */
function inSession(session: unknown[], agent: string): Notice[] {
  return session
    .flatMap((entry) => (entry as { message: { details: { notices: Notice[] } } }).message.details.notices)
    .filter((notice) => notice.agent_name === agent);
}

async function deliveryEntries(root: string) {
  const text = await readFile(path.join(root, TREE_FILES.deliveries), "utf8");
  return (JSON.parse(text) as { given: Array<{ key: string; taken: boolean }> }).given;
}

describe("exactly once: the parent killed at each step of a notice's delivery", () => {
  const steps: Array<DeliveryStep | undefined> = [undefined, "end_recorded", "given", "pushed", "taking", "taken"];
  it.each(steps.map((step) => [step ?? "no kill", step] as const))(
    "%s: one notice reaches the mailbox and pi's session, once; a second restart gives none",
    async (_name, fault) => {
      const c = await treeCase();
      await firstProcess(c, fault);
      await restartAndRead(c);
      const seenC = await restartAndRead(c);
      // Killed after pi held it (taking, taken): its session's copy counts, none is returned again.
      const seen = inSession(c.session, "/root/worker");
      expect(seen.length).toBe(1);
      expect(seen[0]).toMatchObject({ type: "completed", report: "the answer" });
      expect(seenC).toEqual([]);
      expect(await deliveryEntries(c.root)).toEqual([{ key: "/root/worker#0001-spawn", taken: true }]);
      expect((await c.tree.readRecord("/root/worker"))?.notifiedRun).toBe("0001-spawn");
    },
  );
});

describe("a notice counts as read only once pi holds it", () => {
  it("taken from the mailbox and never held by pi (the process died first): the next process offers it again", async () => {
    const c = await treeCase();
    const a = c.process();
    const record = agentRecord({
      path: "/root/worker",
      status: "pending_init",
      inbox: [{ kind: "NEW_TASK", from: "/root", text: "the task", sentAt: new Date().toISOString() }],
    });
    const state = childState(record);
    a.children.set(record.path, state);
    await c.tree.writeRecord(record);
    await a.requestTurn(state, "spawn");
    c.turns.last.finish(turnResult({ finalText: "the answer" }));
    await state.settled;
    expect(a.mailbox.take(10)).toHaveLength(1);
    await a.writesSettled();

    const b = c.process();
    await restore(b, []);
    expect(b.mailbox.list()).toMatchObject([{ agent_name: "/root/worker", report: "the answer" }]);
  });
});

describe("a damaged delivery record", () => {
  const damages: Array<[string, (file: string) => Promise<void>]> = [
    ["not JSON", (file) => writeFile(file, "{ half")],
    ["empty", (file) => writeFile(file, "")],
    ["a FIFO", async (file) => void execFileSync("mkfifo", [file])],
    ["another shape", (file) => writeFile(file, JSON.stringify({ version: 1, given: [{ key: 3 }] }))],
  ];
  it.each(damages)("%s: named once, the tree restores, no notice twice, no hang", async (_name, damage) => {
    const c = await treeCase();
    const seenA = await firstProcess(c, undefined);
    expect(seenA).toHaveLength(1);
    await rm(path.join(c.root, TREE_FILES.deliveries), { force: true });
    await damage(path.join(c.root, TREE_FILES.deliveries));
    const seenB = await restartAndRead(c);
    expect(seenB).toEqual([]);
    const named = c.problems.filter((line) => line.includes(TREE_FILES.deliveries));
    expect(named).toHaveLength(1);
    expect((await restartAndRead(c)).length).toBe(0);
    expect(c.problems.filter((line) => line.includes(TREE_FILES.deliveries))).toHaveLength(1);
  });
});

describe("DeliveryLog", () => {
  it("gives a key once, keeps a notice until taken, and forgets its body once taken", async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), "deliveries-log-"));
    dirs.push(root);
    const log = DeliveryLog.in(root, TREE_FILES.deliveries);
    const notice = { agent_name: "/root/a" } as Notice;
    expect(await log.give("/root/a#0001-spawn", notice)).toBe(true);
    expect(await log.give("/root/a#0001-spawn", { ...notice })).toBe(false);
    const again = DeliveryLog.in(root, TREE_FILES.deliveries);
    const pending = await again.load();
    expect(pending).toEqual([notice]);
    await again.taken(pending.map((n) => again.keyOf(n)!));
    const third = DeliveryLog.in(root, TREE_FILES.deliveries);
    expect(await third.load()).toEqual([]);
    expect(third.has("/root/a#0001-spawn")).toBe(true);
    expect(await deliveryEntries(root)).toEqual([{ key: "/root/a#0001-spawn", taken: true }]);
  });
});

describe("one owner: a runtime that only reads the tree", () => {
  it("restores without settling, re-attaching or re-queueing anything, and refuses to act, naming the owner's pid", async () => {
    const c = await treeCase();
    const running = agentRecord({ path: "/root/busy", status: "running", runs: ["0001-spawn"] });
    const queued = agentRecord({ path: "/root/waiting", nickname: "W", status: "pending_init" });
    await c.tree.writeRecord(running);
    await c.tree.writeRecord(queued);
    const reader = c.process();
    reader.readOnly = 4242;
    await restore(reader, [], { readOnly: true });
    expect([...reader.children.values()].map((s) => [s.record.path, s.record.status, s.phase.name])).toEqual([
      ["/root/busy", "running", "idle"],
      ["/root/waiting", "pending_init", "idle"],
    ]);
    expect(c.turns.started).toHaveLength(0);
    expect((await c.tree.readRecord("/root/busy"))?.status).toBe("running");
    const state = reader.children.get("/root/busy")!;
    await expect(reader.followup(state, "more")).rejects.toThrow("pid 4242 drives this agent tree");
    await expect(reader.queueMessage(state, "hi")).rejects.toThrow("pid 4242");
    await expect(reader.interrupt(state)).rejects.toThrow("pid 4242");
    await expect(reader.close(state)).rejects.toThrow("pid 4242");
  });
});
