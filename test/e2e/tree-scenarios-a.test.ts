/**
 * The user's stress report (seeds/003), scenarios 01–04, against the real pi CLI loading the
 * extension, with a scripted root model and scripted children (test/support/tree-harness.ts).
 * Each scenario asserts on what the root model received (its tool results), on each child's
 * LLM requests, on the tree directory's records, and that no process of the tree survives.
 * Scenarios 05–06 (interrupts, closing, failures) are in tree-interrupts.test.ts.
 */
import { describe, expect, it } from "vitest";
import { type ChatRequest, reply, systemText, userTexts } from "../support/scripted-llm.js";
import { diag, expectCleanExit, noticesOf, ROOT_RUN, runSpans, SCENARIO_MS } from "../support/stress-scenarios.js";
import type { TreeOptions } from "../support/tree-harness.js";
import { expectNoSurvivors, type Json, noticesIn, toolNames, useTrees } from "../support/tree-harness-extra.js";
import { lastToolResult, toolResults } from "../support/tree-llm.js";

const tree = useTrees();

describe("stress scenarios 01–04 (real pi, scripted models)", () => {
  it(
    "01 basic: list_models, spawn a scout, wait, list_agents",
    async () => {
      const h = await tree({
        scripts: {
          "/root": [
            reply.toolCall("list_models", {}),
            reply.toolCall("spawn_agent", {
              task_name: "scout_one",
              message: "Read README line 1",
              agent_type: "scout",
              fork_turns: "none",
            }),
            reply.toolCall("wait_agent", { timeout_ms: 20_000 }),
            reply.toolCall("list_agents", {}),
            reply.text("ROOT DONE"),
          ],
          "/root/scout_one": [reply.text("SCOUT REPORT: # hello")],
        },
      });
      const run = await h.runRoot("go", ROOT_RUN);
      expectCleanExit(run);
      const [, models, spawn, wait, list] = h.rootResults() as Json[];

      const fast = models!.models.find((m: Json) => m.model === "fake/fast");
      expect(fast).toMatchObject({
        reasoning_levels: ["off", "minimal", "low", "medium", "high"],
        context_window: expect.any(Number),
      });
      expect(models!.models.find((m: Json) => m.model === "fake/deep")?.reasoning_levels).toEqual([
        "off",
        "high",
        "xhigh",
      ]);
      expect(models!.scoped ?? false).toBe(false);

      expect(spawn).toMatchObject({
        agent_name: "/root/scout_one",
        role: "scout",
        model: "fake/fast",
        reasoning: "low",
      });
      expect(spawn!.nickname).toEqual(expect.any(String));
      expect(spawn!.agent_status).toBe("running");
      expect(spawn!.queue_position).toBeUndefined();

      expect(wait!.timed_out).toBe(false);
      expect(wait!.notices).toHaveLength(1);
      expect(wait!.notices[0]).toMatchObject({
        agent_name: "/root/scout_one",
        nickname: spawn!.nickname,
        type: "completed",
        agent_status: "completed",
        health: "healthy",
        model: "fake/fast",
        reasoning: "low",
        report: "SCOUT REPORT: # hello",
        report_chars: "SCOUT REPORT: # hello".length,
        report_stored: true,
      });
      expect(wait!.notices[0].outcome).toBeUndefined();

      expect(list!.agents).toHaveLength(1);
      expect(list!.agents[0]).toMatchObject({
        agent_name: "/root/scout_one",
        nickname: spawn!.nickname,
        agent_status: "completed",
        health: "healthy",
        role: "scout",
        model: "fake/fast",
        reasoning: "low",
      });

      // F-02: the scout gets the role's whole read-only tool set, nothing else.
      const scoutReqs = h.requestsOf("/root/scout_one");
      expect(scoutReqs).toHaveLength(1);
      expect(toolNames(scoutReqs[0]!)).toEqual(["find", "grep", "ls", "read"]);
      // F-07: its path is a coordination identifier, not a filesystem path.
      const sys = systemText(scoutReqs[0]!);
      expect(sys).toContain("/root/scout_one");
      expect(sys).toMatch(/coordination identifier[^.]*not a filesystem path/);
      // Its own effective model and reasoning are in its instructions, not the root's.
      expect(sys).toContain("fake/fast with reasoning low");
      expect(userTexts(scoutReqs[0]!).join("\n")).toContain("Read README line 1");

      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  it(
    "02 parallel: four scouts in one message, the fourth queued behind the per-parent limit of 3",
    async () => {
      const names = ["para_a", "para_b", "para_c", "para_d"];
      // The root waits until every scout's notice has arrived, then lists the tree.
      const drive = (req: ChatRequest) => {
        if (noticesIn(req).length < names.length) return reply.toolCall("wait_agent", { timeout_ms: 20_000 });
        if (toolResults(req).filter((r) => (r as Json)?.agents).length < 2) return reply.toolCall("list_agents", {});
        return reply.text("ROOT DONE");
      };
      const scripts: TreeOptions["scripts"] = {
        "/root": [
          reply.toolCalls(
            names.map((name) => ({
              name: "spawn_agent",
              args: { task_name: name, message: `recon ${name}`, agent_type: "scout", fork_turns: "none" },
            })),
          ),
          // Straight after the spawns (the scouts take over a second): the queue is visible.
          reply.toolCall("list_agents", {}),
          ...Array.from({ length: 12 }, () => drive),
        ],
      };
      // Each scout first looks around (a tool turn), then answers slowly (streamed over ~1 s).
      for (const name of names)
        scripts[`/root/${name}`] = [reply.toolCall("ls", {}), reply.text(`REPORT ${name}`, { chunkDelayMs: 250 })];
      const h = await tree({ scripts });
      const run = await h.runRoot("fan out", ROOT_RUN);
      expectCleanExit(run);

      const spawns = h.allResultsOf("/root").slice(0, 4) as Json[];
      expect(spawns.map((s) => s.agent_name)).toEqual(names.map((n) => `/root/${n}`));
      for (const s of spawns.slice(0, 3)) {
        expect(s.agent_status).toBe("running");
        expect(s.queue_position).toBeUndefined();
      }
      expect(spawns[3]).toMatchObject({ agent_status: "pending_init", queue_position: 1, role: "scout" });
      expect(new Set(spawns.map((s) => s.nickname)).size).toBe(4);
      const early = h.allResultsOf("/root")[4] as Json;
      expect(early.agents.map((a: Json) => [a.agent_name, a.agent_status, a.queue_position])).toEqual([
        ["/root/para_a", "running", undefined],
        ["/root/para_b", "running", undefined],
        ["/root/para_c", "running", undefined],
        ["/root/para_d", "pending_init", 1],
      ]);

      const notices = noticesOf(h);
      expect(notices, diag(h)).toHaveLength(4);
      expect(notices.map((n) => n.agent_name).sort()).toEqual(names.map((n) => `/root/${n}`));
      for (const n of notices)
        expect(n).toMatchObject({
          type: "completed",
          agent_status: "completed",
          health: "healthy",
          report: n.agent_name.replace("/root/", "REPORT "),
        });
      // Every wait returned as soon as something was there: no timed-out waits were needed.
      for (const r of h.allResultsOf("/root").filter((r) => (r as Json)?.notices))
        expect((r as Json).timed_out).toBe(false);

      const list = h.allResultsOf("/root").at(-1) as Json;
      expect(list.agents.map((a: Json) => [a.agent_name, a.agent_status, a.health])).toEqual(
        names.map((n) => [`/root/${n}`, "completed", "healthy"]),
      );

      // The limit held: never more than 3 runs at once, and the fourth started only after one ended.
      const spans = names.map((n) => runSpans(h.treeDir(), n)[0]!);
      for (const s of spans) {
        const overlapping = spans.filter((o) => o.start <= s.start && o.end > s.start).length;
        expect(overlapping).toBeLessThanOrEqual(3);
      }
      expect(spans[3]!.start).toBeGreaterThanOrEqual(Math.min(...spans.slice(0, 3).map((s) => s.end)));
      for (const name of names)
        expect(toolNames(h.requestsOf(`/root/${name}`)[0]!)).toEqual(["find", "grep", "ls", "read"]);

      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  it(
    "03 nested: root → mid → leaf, the leaf's report travels up",
    async () => {
      const h = await tree({
        scripts: {
          "/root": [
            reply.toolCall("spawn_agent", {
              task_name: "mid",
              message: "Delegate the line-1 lookup to a leaf and relay its answer",
              fork_turns: "none",
            }),
            reply.toolCall("wait_agent", { timeout_ms: 30_000 }),
            reply.toolCall("list_agents", {}),
            reply.text("ROOT DONE"),
          ],
          "/root/mid": [
            reply.toolCall("spawn_agent", { task_name: "leaf", message: "Report line 1", fork_turns: "none" }),
            reply.toolCall("wait_agent", { timeout_ms: 30_000 }),
            (req) => reply.text(`MID RELAYS: ${noticesIn(req)[0]?.report ?? JSON.stringify(lastToolResult(req))}`),
          ],
          "/root/mid/leaf": [reply.text("LEAF SAYS line-1")],
        },
      });
      const run = await h.runRoot("nest", ROOT_RUN);
      expectCleanExit(run);

      const [, spawn, wait, list] = h.rootResults() as [unknown, Json, Json, Json];
      expect(spawn).toMatchObject({ agent_name: "/root/mid", role: "default", model: "fake/fast" });
      // mid is a plain child: the root's tools, coordination tools included.
      const midReqs = h.requestsOf("/root/mid");
      expect(toolNames(midReqs[0]!)).toEqual(
        expect.arrayContaining(["bash", "read", "spawn_agent", "wait_agent", "list_agents"]),
      );
      // mid's spawn and wait results.
      expect(lastToolResult(midReqs[1]!)).toMatchObject({ agent_name: "/root/mid/leaf", role: "default" });
      const midWait = lastToolResult(midReqs[2]!) as Json;
      expect(midWait.notices, JSON.stringify(midWait)).toHaveLength(1);
      expect(midWait.notices[0]).toMatchObject({
        agent_name: "/root/mid/leaf",
        type: "completed",
        report: "LEAF SAYS line-1",
      });
      expect(userTexts(h.requestsOf("/root/mid/leaf")[0]!).join("\n")).toContain(
        "[NEW_TASK from /root/mid · task leaf]\nReport line 1",
      );

      expect(wait.notices).toHaveLength(1);
      expect(wait.notices[0]).toMatchObject({ agent_name: "/root/mid", type: "completed", health: "healthy" });
      expect(wait.notices[0].report).toContain("LEAF SAYS line-1");
      expect(wait.notices[0].report).toBe("MID RELAYS: LEAF SAYS line-1");

      expect(list.agents.map((a: Json) => [a.agent_name, a.agent_status, a.health])).toEqual([
        ["/root/mid", "completed", "healthy"],
        ["/root/mid/leaf", "completed", "healthy"],
      ]);
      expect(h.requestsOf("/root/mid/leaf")).toHaveLength(1);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  it(
    "04 ordering: NEW_TASK first; a MESSAGE to the busy child arrives in its running turn, before the FOLLOWUP_TASK's turn; send_message starts no turn",
    async () => {
      const drive = (req: ChatRequest) => {
        const notices = noticesIn(req);
        if (notices.length < 2) return reply.toolCall("wait_agent", { timeout_ms: 20_000 });
        if (!toolResults(req).some((r) => (r as Json)?.delivered && (r as Json).agent_status === "completed")) {
          // A message to an idle child stays queued: no turn starts, so the next wait is idle.
          return reply.toolCall("send_message", { target: "worker", message: "LATE NOTE" });
        }
        const last = lastToolResult(req) as Json;
        if (last?.delivered) return reply.toolCall("wait_agent", { timeout_ms: 5_000 });
        return reply.text("ROOT DONE");
      };
      const h = await tree({
        scripts: {
          "/root": [
            reply.toolCalls([
              {
                name: "spawn_agent",
                args: {
                  task_name: "worker",
                  message: "FIRST TASK: sleep then report",
                  agent_type: "implementation",
                  fork_turns: "none",
                },
              },
              { name: "send_message", args: { target: "worker", message: "NOTE" } },
              { name: "followup_task", args: { target: "worker", message: "SECOND TASK" } },
            ]),
            ...Array.from({ length: 8 }, () => drive),
          ],
          "/root/worker": [
            reply.toolCall("bash", { command: "sleep 2" }),
            reply.text("first turn done"),
            reply.text("followup_received"),
          ],
        },
      });
      const run = await h.runRoot("queue", ROOT_RUN);
      expectCleanExit(run);

      const [spawn, send, followup] = h.allResultsOf("/root") as Json[];
      expect(spawn).toMatchObject({
        agent_name: "/root/worker",
        role: "implementation",
        reasoning: "medium",
        agent_status: "running",
      });
      expect(send).toMatchObject({
        delivered: "live",
        target: "/root/worker",
        message_id: "msg-1",
        agent_status: "running",
      });
      expect(followup).toMatchObject({ agent_name: "/root/worker", queued_behind_running_turn: true });

      const reqs = h.requestsOf("/root/worker");
      expect(reqs).toHaveLength(3);
      const first = userTexts(reqs[0]!);
      expect(first[0]).toBe("[NEW_TASK from /root · task worker]\nFIRST TASK: sleep then report");
      // The note reached the first turn (right after the task, or after the bash call), once.
      const note = "[MESSAGE from /root · task worker · id msg-1]\nNOTE";
      expect(userTexts(reqs[1]!).filter((t) => t === note)).toHaveLength(1);
      // The second turn continues the same conversation with the follow-up alone.
      const second = userTexts(reqs[2]!);
      expect(second[0]).toBe(first[0]);
      expect(second.at(-1)).toBe("[FOLLOWUP_TASK from /root · task worker]\nSECOND TASK");
      expect(second.filter((t) => t.includes("NOTE"))).toEqual([note]);
      expect(second.join("\n")).not.toContain("LATE NOTE");

      const notices = noticesOf(h);
      expect(
        notices.map((n) => [n.agent_name, n.type, n.report]),
        diag(h),
      ).toEqual([
        ["/root/worker", "completed", "first turn done"],
        ["/root/worker", "completed", "followup_received"],
      ]);
      // LATE NOTE was queued for the next turn; it started none: the following wait is idle.
      const results = h.allResultsOf("/root") as Json[];
      const late = results.find((r) => r?.delivered && r.agent_status === "completed");
      expect(late).toMatchObject({ delivered: "queued", queued_messages: 1, pending_messages: 1, message_id: "msg-2" });
      expect(results.at(-1)).toMatchObject({ notices: [], idle: true });
      const [record] = await h.readRecords();
      expect(record!.runs).toEqual(["0001-spawn", "0002-followup"]);
      expect(record!.inbox.map((p) => [p.kind, p.text])).toEqual([["MESSAGE", "LATE NOTE"]]);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );
});
