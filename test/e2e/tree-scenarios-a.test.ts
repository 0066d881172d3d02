/**
 * Stress scenarios 01–06 of the stress table (test/support/stress/scenarios-a.ts), played as
 * scripts/stress-test plays them — the real pi CLI loading the extension, a scripted root model
 * and scripted children — and judged as it judges them (exit 0, the strict marker, the
 * scenario's check). Then, deeper: what the root model received (its tool results), each
 * child's LLM requests, the tree directory's records, and that no process of the tree survives.
 * tree-interrupts.test.ts goes further on interrupts, closing and failures.
 */
import { describe, expect, it } from "vitest";
import { ONE_LINE_IS_ENOUGH } from "../support/pi-home.js";
import { systemText, userTexts } from "../support/scripted-llm.js";
import {
  basicSpawnWait,
  failureIsolation,
  interruptResume,
  nestedChain,
  parallelSpawns,
  queueFollowup,
} from "../support/stress/scenarios-a.js";
import {
  diag,
  expectScenarioPassed,
  noticesOf,
  playScenario,
  runSpans,
  SCENARIO_MS,
} from "../support/stress-scenarios.js";
import { expectNoSurvivors, type Json, toolNames, useTrees } from "../support/tree-harness-extra.js";
import { lastToolResult } from "../support/tree-llm.js";

const tree = useTrees();

describe("stress scenarios 01–06 (real pi, scripted models)", () => {
  it(
    "01 basic: list_models, spawn a scout, wait, list_agents",
    async () => {
      const play = await playScenario(tree, basicSpawnWait);
      expectScenarioPassed(play, basicSpawnWait);
      const { h } = play;
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

      // The scout gets the role's whole read-only tool set (grep, find and ls too, although pi
      // leaves them inactive by default), nothing else.
      const scoutReqs = h.requestsOf("/root/scout_one");
      expect(scoutReqs).toHaveLength(1);
      expect(toolNames(scoutReqs[0]!)).toEqual(["find", "grep", "ls", "read"]);
      // Its path is a coordination identifier, not a filesystem path: a model once took
      // /root/scout_one for a folder to look in.
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

  // Package bookkeeping, the same on either line: pi 1.x only in npm test (ONE_LINE_IS_ENOUGH).
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "02 parallel: four scouts in one message, the fourth queued behind the per-parent limit of 3",
    async () => {
      const names = ["para_a", "para_b", "para_c", "para_d"];
      const play = await playScenario(tree, parallelSpawns);
      expectScenarioPassed(play, parallelSpawns);
      const { h } = play;

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
      const play = await playScenario(tree, nestedChain);
      expectScenarioPassed(play, nestedChain);
      const { h } = play;

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
      const play = await playScenario(tree, queueFollowup);
      expectScenarioPassed(play, queueFollowup);
      const { h } = play;

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

  // tree-interrupts.test.ts plays these deeper on both lines: pi 1.x only here (ONE_LINE_IS_ENOUGH).
  for (const scenario of [interruptResume, failureIsolation])
    it.skipIf(ONE_LINE_IS_ENOUGH)(
      `${scenario.id} ${scenario.name}, as the stress script plays it (tree-interrupts.test.ts goes deeper)`,
      async () => {
        const play = await playScenario(tree, scenario);
        expectScenarioPassed(play, scenario);
        await expectNoSurvivors(play.h);
      },
      SCENARIO_MS,
    );
});
