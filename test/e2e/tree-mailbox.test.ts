/**
 * Mailbox and capacity paths the stress scenarios do not reach: a child's message to its
 * parent, one wait collecting a fan-out, and interrupt/close freeing a slot at once for a
 * queued sibling.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ONE_LINE_IS_ENOUGH } from "../support/pi-home.js";
import { reply } from "../support/scripted-llm.js";
import {
  allNotices,
  expectCleanExit,
  expectNoSurvivors,
  type Json,
  lastList,
  Program,
  rootResult,
  spawn,
  useTrees,
  waitForAll,
} from "../support/tree-harness-extra.js";
import { lastToolResult } from "../support/tree-llm.js";

const tree = useTrees();
const SCENARIO_MS = 120_000;

describe("the mailbox and capacity", () => {
  it(
    "a child's send_message to its parent arrives as a `message` notice before its turn's notice",
    async () => {
      const root = new Program([
        spawn({ task_name: "reporter", fork_turns: "none", message: "Report progress, then finish." }),
        waitForAll(["/root/reporter"]),
        reply.text("ROOT DONE"),
      ]);
      const h = await tree({
        scripts: {
          "/root": root.steps(),
          "/root/reporter": [
            reply.toolCall("send_message", { target: "/root", message: "PROGRESS 50%" }),
            reply.text("final report"),
          ],
        },
      });
      expectCleanExit(await h.runRoot("go"));
      const notices = allNotices(h);
      expect(notices.map((n) => [n.agent_name, n.type, n.report])).toEqual([
        ["/root/reporter", "message", "PROGRESS 50%"],
        ["/root/reporter", "completed", "final report"],
      ]);
      expect(notices[0]).toMatchObject({ nickname: expect.any(String), agent_status: "running", model: "fake/fast" });
      expect(lastToolResult(h.requestsOf("/root/reporter")[1]!)).toEqual({
        delivered: "parent_mailbox",
        target: "/root",
      });
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  // Package bookkeeping, the same on either line: pi 1.x only in npm test (ONE_LINE_IS_ENOUGH).
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "a fan-out of three costs the root one wait: wait_agent all: true returns the three notices together",
    async () => {
      const names = ["one", "two", "three"];
      const root = [
        reply.toolCalls(
          names.map((name) => ({
            name: "spawn_agent",
            args: { task_name: name, fork_turns: "none", message: `work ${name}` },
          })),
        ),
        reply.toolCall("wait_agent", { all: true, timeout_ms: 60_000 }),
        reply.text("ROOT DONE"),
      ];
      // `one` answers only once the others have ended (their result.json written), however
      // slowly a loaded machine starts them: a plain wait would have returned before it.
      let othersEnded!: () => void;
      const gate = new Promise<void>((resolve) => {
        othersEnded = resolve;
      });
      const h = await tree({
        scripts: {
          "/root": root,
          "/root/one": [reply.toolCall("bash", { command: "sleep 1" }), reply.text("one done", { waitFor: gate })],
          "/root/two": [reply.text("two done")],
          "/root/three": [reply.text("three done")],
        },
      });
      const poll = setInterval(() => {
        if (["two", "three"].every((name) => runEnded(h, name))) othersEnded();
      }, 100);
      const run = await h.runRoot("go", { timeoutMs: 100_000 }).finally(() => clearInterval(poll));
      expectCleanExit(run);
      const waited = rootResult(h, "wait_agent", { all: true });
      expect(waited).toMatchObject({ pending: 0, timed_out: false, waiting_for: [], timeout_ms: 60_000 });
      const notices = waited.notices as Json[];
      expect(notices.map((n) => [n.agent_name, n.type, n.report]).sort()).toEqual(
        names.map((name) => [`/root/${name}`, "completed", `${name} done`]).sort(),
      );
      expect(notices.at(-1)!.agent_name).toBe("/root/one");
      // Spawn, one wait, the answer: three model requests of the root.
      expect(h.requestsOf("/root")).toHaveLength(3);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  it(
    "a fan-out of three with wait: true on its last spawn costs the root two model requests, the children in parallel",
    async () => {
      const names = ["one", "two", "three"];
      const root = [
        reply.toolCalls(
          names.map((name) => ({
            name: "spawn_agent",
            args: {
              task_name: name,
              fork_turns: "none",
              message: `work ${name}`,
              ...(name === "three" && { wait: true }),
            },
          })),
        ),
        reply.text("ROOT DONE"),
      ];
      // `one` ends only once `three` (the spawn that waits) has run: the three run side by side.
      // The three notices in one answer: the wait returned after its whole group, not the first.
      const waitForThree = "for i in $(seq 600); do [ -e three_ran ] && break; sleep 0.1; done; test -e three_ran";
      const h = await tree({
        scripts: {
          "/root": root,
          "/root/one": [reply.toolCall("bash", { command: waitForThree }), reply.text("one done")],
          "/root/two": [reply.text("two done")],
          "/root/three": [reply.toolCall("bash", { command: "touch three_ran" }), reply.text("three done")],
        },
      });
      expectCleanExit(await h.runRoot("go", { timeoutMs: 100_000 }));
      const spawned = rootResult(h, "spawn_agent", { task_name: "three" });
      expect(spawned).toMatchObject({ agent_name: "/root/three", agent_status: "running" });
      const waited = spawned.wait as Json;
      expect(waited).toMatchObject({ pending: 0, timed_out: false, waiting_for: [] });
      const notices = waited.notices as Json[];
      expect(notices.map((n) => [n.agent_name, n.type, n.report]).sort()).toEqual(
        names.map((name) => [`/root/${name}`, "completed", `${name} done`]).sort(),
      );
      // The spawns with their wait, then the answer: one request fewer than spawn, wait_agent, answer.
      expect(h.requestsOf("/root")).toHaveLength(2);
      // Read once pi held the spawn's result, as a wait_agent's: none is offered again after a restart.
      const logs = fs
        .readdirSync(h.treeDir(), { recursive: true })
        .map(String)
        .filter((file) => path.basename(file) === "deliveries.json");
      expect(logs).toHaveLength(1);
      const given = JSON.parse(fs.readFileSync(path.join(h.treeDir(), logs[0]!), "utf8")).given as Json[];
      const byAgent = given.map((entry) => [String(entry.key).split("#")[0], entry.taken]).sort();
      expect(byAgent).toEqual(names.map((name) => [`/root/${name}`, true]).sort());
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  // Package bookkeeping, the same on either line: pi 1.x only in npm test (ONE_LINE_IS_ENOUGH).
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "interrupting a running child frees its slot at once: the queued sibling starts before the interrupt returns",
    async () => {
      const slow = (name: string) => [reply.toolCall("bash", { command: "sleep 30" }), reply.text(`${name} done`)];
      const root = new Program([
        reply.toolCalls(
          ["a", "b", "c", "d"].map((name) => ({
            name: "spawn_agent",
            args: { task_name: name, fork_turns: "none", message: `work ${name}` },
          })),
        ),
        reply.toolCall("interrupt_agent", { target: "a" }),
        reply.toolCall("list_agents", {}),
        reply.toolCalls(["b", "c", "d"].map((name) => ({ name: "close_agent", args: { target: name } }))),
        reply.toolCall("list_agents", {}),
        reply.text("ROOT DONE"),
      ]);
      const h = await tree({
        scripts: {
          "/root": root.steps(),
          "/root/a": slow("a"),
          "/root/b": slow("b"),
          "/root/c": slow("c"),
          "/root/d": slow("d"),
        },
      });
      expectCleanExit(await h.runRoot("go", { timeoutMs: 100_000 }));
      const requests = h.requestsOf("/root");
      const spawned = requests[1]!.messages
        .filter((m) => m.role === "tool")
        .map((m) => JSON.parse(String(m.content))) as Json[];
      expect(spawned.map((s) => s.agent_status)).toEqual(["running", "running", "running", "pending_init"]);
      expect(rootResult(h, "interrupt_agent", { target: "a" })).toMatchObject({
        previous_status: "running",
        agent_status: "interrupted",
      });
      const afterInterrupt = lastList(h, requests[3]!);
      expect(afterInterrupt.map((a) => [a.agent_name, a.agent_status])).toEqual([
        ["/root/a", "interrupted"],
        ["/root/b", "running"],
        ["/root/c", "running"],
        ["/root/d", "running"],
      ]);
      expect(afterInterrupt.find((a) => a.agent_name === "/root/d")).not.toHaveProperty("queue_position");
      const final = lastList(h);
      expect(final.map((a) => a.agent_status)).toEqual(["interrupted", "shutdown", "shutdown", "shutdown"]);
      expect(final.slice(1).map((a) => a.last_outcome)).toEqual(["interrupted", "interrupted", "interrupted"]);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );
});

/** Whether a run of the agent `name` (a child of the root) has written its result.json. */
function runEnded(h: { treeDir(): string }, name: string): boolean {
  let runs: string;
  try {
    runs = path.join(h.treeDir(), "agents", name, "runs");
  } catch {
    return false; // no tree directory yet: the root has not spawned
  }
  return fs.existsSync(runs) && fs.readdirSync(runs).some((run) => fs.existsSync(path.join(runs, run, "result.json")));
}
