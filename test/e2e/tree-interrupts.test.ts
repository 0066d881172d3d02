/**
 * Stress scenarios 05–06 in depth — interrupt and resume, closing a running child, and failure
 * isolation — against the real pi CLI with scripted models. The stress table's own scripts for
 * 05 and 06 are played and judged in tree-scenarios-a.test.ts; these go further: the processes
 * of a stopped turn, an interrupt and a follow-up in one message, close_agent, a provider error.
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ONE_LINE_IS_ENOUGH } from "../support/pi-home.js";
import { waitForPidExit } from "../support/processes.js";
import { type ChatRequest, reply, userTexts } from "../support/scripted-llm.js";
import { diag, expectCleanExit, noticesOf, ROOT_RUN, SCENARIO_MS, scenarioProcs } from "../support/stress-scenarios.js";
import { describePid, readRunPids, type TreeHarness } from "../support/tree-harness.js";
import { expectNoSurvivors, type Json, noticesIn, useTrees } from "../support/tree-harness-extra.js";
import { toolResults } from "../support/tree-llm.js";

const tree = useTrees();

describe("stress scenarios 05–06 (real pi, scripted models)", () => {
  it(
    "05 interrupt/resume: a timed-out wait, interrupt a running sleep, resume on the same session",
    async () => {
      let sleepPids: number[] = [];
      let sleepGone: Promise<boolean[]> | undefined;
      let leftAfterInterrupt: number[] | undefined;
      let phase = 0;
      const h: TreeHarness = await tree({
        scripts: { "/root/slowpoke": [reply.toolCall("bash", { command: "sleep 60" }), reply.text("back_online")] },
      });
      const drive = () => {
        switch (phase) {
          case 0:
            phase = 1;
            return reply.toolCall("spawn_agent", {
              task_name: "slowpoke",
              message: "Run sleep 60",
              agent_type: "implementation",
              fork_turns: "none",
            });
          case 1:
            phase = 2;
            return reply.toolCall("wait_agent", { timeout_ms: 1000 });
          case 2:
            // Wait briefly until the child's `sleep 60` really runs, then interrupt it.
            sleepPids = scenarioProcs(h, "sleep 60");
            if (sleepPids.length === 0) return reply.toolCall("wait_agent", { timeout_ms: 250 });
            phase = 3;
            return reply.toolCall("interrupt_agent", { target: "slowpoke" });
          case 3:
            // interrupt_agent has returned: the stopped turn's wrapper and pi are already gone.
            leftAfterInterrupt = [
              ...scenarioProcs(h, "0001-spawn"),
              ...readRunPids(h.treeDir()).filter((pid) => h.scenarioPids().includes(pid)),
            ];
            sleepGone = Promise.all(sleepPids.map((pid) => waitForPidExit(pid, 3_000)));
            phase = 4;
            return reply.toolCall("list_agents", {});
          case 4:
            phase = 5;
            return reply.toolCall("wait_agent", { timeout_ms: 5_000 });
          case 5:
            phase = 6;
            return reply.toolCall("followup_task", { target: "slowpoke", message: "Are you back?" });
          case 6:
            phase = 7;
            return reply.toolCall("wait_agent", { timeout_ms: 20_000 });
          case 7:
            phase = 8;
            return reply.toolCall("list_agents", {});
          default:
            return reply.text("ROOT DONE");
        }
      };
      h.tree.add("/root", ...Array.from({ length: 200 }, () => drive));
      const run = await h.runRoot("interrupt", ROOT_RUN);
      expectCleanExit(run);
      expect(phase, diag(h)).toBe(8);

      const results = h.allResultsOf("/root") as Json[];
      const first = results[1]!;
      expect(first).toMatchObject({ notices: [], timed_out: true, timeout_ms: 1000 });
      const interrupt = results.find((r) => r?.previous_status !== undefined)!;
      expect(interrupt).toMatchObject({
        agent_name: "/root/slowpoke",
        previous_status: "running",
        agent_status: "interrupted",
      });
      const lists = results.filter((r) => r?.agents);
      expect(lists[0]!.agents[0]).toMatchObject({
        agent_name: "/root/slowpoke",
        agent_status: "interrupted",
        health: "healthy",
      });
      // The interrupted turn's processes went with it: wrapper and pi before interrupt_agent
      // returned, the bash tool's sleep within 3 s.
      expect(leftAfterInterrupt?.map(describePid)).toEqual([]);
      expect(sleepPids.length).toBeGreaterThan(0);
      expect(await sleepGone).toEqual(sleepPids.map(() => true));

      const notices = noticesOf(h);
      expect(
        notices.map((n) => [n.agent_name, n.type, n.agent_status]),
        diag(h),
      ).toEqual([
        ["/root/slowpoke", "interrupted", "interrupted"],
        ["/root/slowpoke", "completed", "completed"],
      ]);
      expect(notices[1]!.report).toBe("back_online");
      const followup = results.find((r) => r?.queued_behind_running_turn !== undefined)!;
      expect(followup).toMatchObject({
        agent_name: "/root/slowpoke",
        queued_behind_running_turn: false,
        agent_status: "running",
      });
      expect(lists[1]!.agents[0]).toMatchObject({
        agent_name: "/root/slowpoke",
        agent_status: "completed",
        health: "healthy",
      });

      // Resumed on its own session: the earlier task and its bash call are still in the conversation.
      const reqs = h.requestsOf("/root/slowpoke");
      expect(reqs).toHaveLength(2);
      const resumed = reqs[1]!;
      expect(userTexts(resumed)[0]).toBe("[NEW_TASK from /root · task slowpoke]\nRun sleep 60");
      expect(userTexts(resumed).at(-1)).toContain("[FOLLOWUP_TASK from /root · task slowpoke]\nAre you back?");
      expect(JSON.stringify(resumed.messages)).toContain("sleep 60");
      const [record] = await h.readRecords();
      expect(record!.runs).toEqual(["0001-spawn", "0002-followup"]);
      expect(record!.sessionPath).toBe(path.join(h.treeDir(), "agents", "slowpoke", "session.jsonl"));
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  // Package bookkeeping, the same on either line: pi 1.x only in npm test (ONE_LINE_IS_ENOUGH).
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "05b interrupt and followup_task in one message: the follow-up waits for the stopped turn",
    async () => {
      let sleepPids: number[] = [];
      let phase = 0;
      const h: TreeHarness = await tree({
        scripts: { "/root/slowpoke": [reply.toolCall("bash", { command: "sleep 60" }), reply.text("back_online")] },
      });
      const drive = (req: ChatRequest) => {
        switch (phase) {
          case 0:
            phase = 1;
            return reply.toolCall("spawn_agent", {
              task_name: "slowpoke",
              message: "Run sleep 60",
              agent_type: "implementation",
              fork_turns: "none",
            });
          case 1:
            sleepPids = scenarioProcs(h, "sleep 60");
            if (sleepPids.length === 0) return reply.toolCall("wait_agent", { timeout_ms: 250 });
            phase = 2;
            return reply.toolCalls([
              { name: "interrupt_agent", args: { target: "slowpoke" } },
              { name: "followup_task", args: { target: "slowpoke", message: "Are you back?" } },
            ]);
          case 2:
            if (noticesIn(req).length < 2) return reply.toolCall("wait_agent", { timeout_ms: 20_000 });
            phase = 3;
            return reply.toolCall("list_agents", {});
          default:
            return reply.text("ROOT DONE");
        }
      };
      h.tree.add("/root", ...Array.from({ length: 200 }, () => drive));
      const run = await h.runRoot("interrupt and resume", ROOT_RUN);
      expectCleanExit(run);
      expect(sleepPids.length).toBeGreaterThan(0);

      const results = h.allResultsOf("/root") as Json[];
      expect(results.find((r) => r?.previous_status !== undefined)).toMatchObject({
        previous_status: "running",
        agent_status: "interrupted",
      });
      expect(results.find((r) => r?.queued_behind_running_turn !== undefined)).toMatchObject({
        agent_name: "/root/slowpoke",
        queued_behind_running_turn: false,
      });
      expect(
        noticesOf(h).map((n) => [n.type, n.report]),
        diag(h),
      ).toEqual([
        ["interrupted", ""],
        ["completed", "back_online"],
      ]);
      expect((results.at(-1) as Json).agents[0]).toMatchObject({
        agent_name: "/root/slowpoke",
        agent_status: "completed",
        health: "healthy",
      });
      const reqs = h.requestsOf("/root/slowpoke");
      expect(reqs).toHaveLength(2);
      expect(userTexts(reqs[1]!)[0]).toBe("[NEW_TASK from /root · task slowpoke]\nRun sleep 60");
      expect(userTexts(reqs[1]!).at(-1)).toContain("[FOLLOWUP_TASK from /root · task slowpoke]\nAre you back?");
      const [record] = await h.readRecords();
      expect(record).toMatchObject({ status: "completed", runs: ["0001-spawn", "0002-followup"] });
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  it(
    "05c close_agent on a running child: the root carries on, the subtree's processes are gone",
    async () => {
      let sleepPids: number[] = [];
      let phase = 0;
      const h: TreeHarness = await tree({
        scripts: { "/root/slowpoke": [reply.toolCall("bash", { command: "sleep 60" }), reply.text("never")] },
      });
      const drive = () => {
        switch (phase) {
          case 0:
            phase = 1;
            return reply.toolCall("spawn_agent", {
              task_name: "slowpoke",
              message: "Run sleep 60",
              agent_type: "implementation",
              fork_turns: "none",
            });
          case 1:
            sleepPids = scenarioProcs(h, "sleep 60");
            if (sleepPids.length === 0) return reply.toolCall("wait_agent", { timeout_ms: 250 });
            phase = 2;
            return reply.toolCall("close_agent", { target: "slowpoke" });
          case 2:
            phase = 3;
            return reply.toolCall("wait_agent", { timeout_ms: 5_000 });
          case 3:
            phase = 4;
            return reply.toolCall("list_agents", {});
          default:
            return reply.text("ROOT DONE");
        }
      };
      h.tree.add("/root", ...Array.from({ length: 200 }, () => drive));
      const run = await h.runRoot("close", ROOT_RUN);
      expectCleanExit(run);
      expect(sleepPids.length).toBeGreaterThan(0);
      const results = h.allResultsOf("/root") as Json[];
      expect(results.find((r) => r?.previous_status !== undefined)).toMatchObject({ previous_status: "running" });
      expect(
        noticesOf(h).map((n) => [n.agent_name, n.type, n.agent_status]),
        diag(h),
      ).toEqual([["/root/slowpoke", "shutdown", "shutdown"]]);
      expect((results.at(-1) as Json).agents[0]).toMatchObject({
        agent_name: "/root/slowpoke",
        agent_status: "shutdown",
      });
      expect(h.requestsOf("/root/slowpoke")).toHaveLength(1);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  // Package bookkeeping, the same on either line: pi 1.x only in npm test (ONE_LINE_IS_ENOUGH).
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "06 failure isolation: failed work still completes healthy; a sibling is unaffected",
    async () => {
      const drive = (req: ChatRequest) => {
        if (noticesIn(req).length < 2) return reply.toolCall("wait_agent", { timeout_ms: 20_000 });
        if (!toolResults(req).some((r) => (r as Json)?.agents)) return reply.toolCall("list_agents", {});
        return reply.text("ROOT DONE");
      };
      const h = await tree({
        scripts: {
          "/root": [
            reply.toolCalls([
              {
                name: "spawn_agent",
                args: {
                  task_name: "doomed",
                  message: "Read missing.txt, then run exit 1",
                  agent_type: "implementation",
                  fork_turns: "none",
                },
              },
              {
                name: "spawn_agent",
                args: { task_name: "healthy", message: "List the directory", agent_type: "scout", fork_turns: "none" },
              },
            ]),
            ...Array.from({ length: 8 }, () => drive),
          ],
          "/root/doomed": [
            reply.toolCall("read", { path: "missing.txt" }),
            reply.toolCall("bash", { command: "exit 1" }),
            reply.text("DOOMED: the file is missing and the command failed"),
          ],
          "/root/healthy": [reply.toolCall("ls", {}), reply.text("HEALTHY: listed")],
        },
      });
      const run = await h.runRoot("isolate", ROOT_RUN);
      expectCleanExit(run);

      // The child really hit both errors, and said so.
      const doomed = h.requestsOf("/root/doomed");
      expect(doomed).toHaveLength(3);
      const doomedResults = toolResults(doomed[2]!).map((r) => String(typeof r === "string" ? r : JSON.stringify(r)));
      expect(doomedResults[0]).toMatch(/ENOENT|not found|no such file/i);
      expect(doomedResults[1]).toMatch(/exit(ed)? (with )?code 1|code 1/i);

      const notices = noticesOf(h);
      expect(notices.map((n) => n.agent_name).sort()).toEqual(["/root/doomed", "/root/healthy"]);
      const byName = Object.fromEntries(notices.map((n) => [n.agent_name, n]));
      expect(byName["/root/doomed"]).toMatchObject({
        type: "completed",
        agent_status: "completed",
        health: "healthy",
        report: "DOOMED: the file is missing and the command failed",
      });
      expect(byName["/root/doomed"]!.outcome).toBeUndefined();
      expect(byName["/root/healthy"]).toMatchObject({
        type: "completed",
        agent_status: "completed",
        health: "healthy",
        report: "HEALTHY: listed",
      });
      const list = h.allResultsOf("/root").at(-1) as Json;
      expect(list.agents.map((a: Json) => [a.agent_name, a.agent_status, a.health])).toEqual([
        ["/root/doomed", "completed", "healthy"],
        ["/root/healthy", "completed", "healthy"],
      ]);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  it(
    "06b failure isolation: a provider error makes a child errored and unhealthy; its sibling completes",
    async () => {
      const drive = (req: ChatRequest) => {
        if (noticesIn(req).length < 2) return reply.toolCall("wait_agent", { timeout_ms: 20_000 });
        if (!toolResults(req).some((r) => (r as Json)?.agents)) return reply.toolCall("list_agents", {});
        return reply.text("ROOT DONE");
      };
      const h = await tree({
        retry: false,
        scripts: {
          "/root": [
            reply.toolCalls([
              { name: "spawn_agent", args: { task_name: "broken", message: "Say hi", fork_turns: "none" } },
              {
                name: "spawn_agent",
                args: { task_name: "sibling", message: "Say hi", agent_type: "scout", fork_turns: "none" },
              },
            ]),
            ...Array.from({ length: 8 }, () => drive),
          ],
          "/root/broken": [reply.error(500, "scripted provider outage")],
          "/root/sibling": [reply.text("SIBLING OK")],
        },
      });
      const run = await h.runRoot("isolate", ROOT_RUN);
      expectCleanExit(run);

      expect(h.requestsOf("/root/broken")).toHaveLength(1);
      const notices = noticesOf(h);
      const byName = Object.fromEntries(notices.map((n) => [n.agent_name, n]));
      expect(notices, diag(h)).toHaveLength(2);
      expect(byName["/root/broken"]).toMatchObject({
        type: "errored",
        agent_status: "errored",
        health: "unhealthy",
        outcome: "failed",
      });
      expect(byName["/root/broken"]!.reason).toMatch(/500|scripted provider outage/);
      expect(byName["/root/sibling"]).toMatchObject({
        type: "completed",
        agent_status: "completed",
        health: "healthy",
        report: "SIBLING OK",
      });
      const list = h.allResultsOf("/root").at(-1) as Json;
      expect(list.agents.map((a: Json) => [a.agent_name, a.agent_status, a.health])).toEqual([
        ["/root/broken", "errored", "unhealthy"],
        ["/root/sibling", "completed", "healthy"],
      ]);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );
});
