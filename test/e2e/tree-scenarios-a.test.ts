/**
 * The user's stress report (seeds/003), scenarios 01–06, against the real pi CLI loading the
 * extension, with a scripted root model and scripted children (test/support/tree-harness.ts).
 * Each scenario asserts on what the root model received (its tool results), on each child's
 * LLM requests, on the tree directory's records, and that no process of the tree survives.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { waitForPidExit } from "../support/processes.js";
import { reply, systemText, userTexts, type ChatRequest } from "../support/scripted-llm.js";
import { describePid, readRunPids, type TreeHarness, type TreeOptions } from "../support/tree-harness.js";
import { expectCleanExit as expectExit0, expectNoSurvivors, noticesIn, toolNames, useTrees, type Json } from "../support/tree-harness-extra.js";
import { lastToolResult, toolResults } from "../support/tree-llm.js";

const tree = useTrees();

/** What the root received, for failure messages. */
function diag(h: TreeHarness): string {
  return JSON.stringify(h.allResultsOf("/root")).slice(0, 6000);
}

/** Generous: two cores shared with other e2e files; each scenario takes a few seconds alone. */
const SCENARIO_MS = 120_000;
const ROOT_RUN = { timeoutMs: 100_000 };

/** The root ran to its scripted end: exit 0 after its final answer (not in the middle of a tool). */
function expectCleanExit(run: { code: number | null; timedOut: boolean; stderr: string; stdout: string }): void {
  expectExit0(run);
  expect(run.stdout).toContain("ROOT DONE");
}

/** Every notice the agent received through wait_agent, in order. */
function noticesOf(h: TreeHarness, agent = "/root"): Json[] {
  return h.allResultsOf(agent).flatMap((r) => (r && typeof r === "object" && Array.isArray((r as Json).notices) ? (r as Json).notices : []));
}

/** The run records of one agent's runs, from events.jsonl: [run_start ts, run_end ts]. */
function runSpans(treeDir: string, agentFolder: string): Array<{ run: string; start: number; end: number }> {
  const runsDir = path.join(treeDir, "agents", agentFolder, "runs");
  return fs.readdirSync(runsDir).sort().map((run) => {
    const lines = fs.readFileSync(path.join(runsDir, run, "events.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as Json);
    return { run, start: lines.find((l) => l.type === "run_start")!.ts, end: lines.find((l) => l.type === "run_end")!.ts };
  });
}

/** Live processes of the scenario whose command line contains `needle`. */
function scenarioProcs(h: TreeHarness, needle: string): number[] {
  return h.scenarioPids().filter((pid) => describePid(pid).includes(needle));
}


describe("stress scenarios 01–06 (real pi, scripted models)", () => {
  it("01 basic: list_models, spawn a scout, wait, list_agents", async () => {
    const h = await tree({
      scripts: {
        "/root": [
          reply.toolCall("list_models", {}),
          reply.toolCall("spawn_agent", { task_name: "scout_one", message: "Read README line 1", agent_type: "scout", fork_turns: "none" }),
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
    expect(fast).toMatchObject({ reasoning_levels: ["off", "minimal", "low", "medium", "high"], context_window: expect.any(Number) });
    expect(models!.models.find((m: Json) => m.model === "fake/deep")?.reasoning_levels).toEqual(["off", "high", "xhigh"]);
    expect(models!.scoped ?? false).toBe(false);

    expect(spawn).toMatchObject({ agent_name: "/root/scout_one", role: "scout", model: "fake/fast", reasoning: "low" });
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
  }, SCENARIO_MS);

  it("02 parallel: four scouts in one message, the fourth queued behind the per-parent limit of 3", async () => {
    const names = ["para_a", "para_b", "para_c", "para_d"];
    // The root waits until every scout's notice has arrived, then lists the tree.
    const drive = (req: ChatRequest) => {
      if (noticesIn(req).length < names.length) return reply.toolCall("wait_agent", { timeout_ms: 20_000 });
      if (toolResults(req).filter((r) => (r as Json)?.agents).length < 2) return reply.toolCall("list_agents", {});
      return reply.text("ROOT DONE");
    };
    const scripts: TreeOptions["scripts"] = {
      "/root": [
        reply.toolCalls(names.map((name) => ({ name: "spawn_agent", args: { task_name: name, message: `recon ${name}`, agent_type: "scout", fork_turns: "none" } }))),
        // Straight after the spawns (the scouts take over a second): the queue is visible.
        reply.toolCall("list_agents", {}),
        ...Array.from({ length: 12 }, () => drive),
      ],
    };
    // Each scout first looks around (a tool turn), then answers slowly (streamed over ~1 s).
    for (const name of names) scripts[`/root/${name}`] = [reply.toolCall("ls", {}), reply.text(`REPORT ${name}`, { chunkDelayMs: 250 })];
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
    for (const n of notices) expect(n).toMatchObject({ type: "completed", agent_status: "completed", health: "healthy", report: n.agent_name.replace("/root/", "REPORT ") });
    // Every wait returned as soon as something was there: no timed-out waits were needed.
    for (const r of h.allResultsOf("/root").filter((r) => (r as Json)?.notices)) expect((r as Json).timed_out).toBe(false);

    const list = h.allResultsOf("/root").at(-1) as Json;
    expect(list.agents.map((a: Json) => [a.agent_name, a.agent_status, a.health])).toEqual(names.map((n) => [`/root/${n}`, "completed", "healthy"]));

    // The limit held: never more than 3 runs at once, and the fourth started only after one ended.
    const spans = names.map((n) => runSpans(h.treeDir(), n)[0]!);
    for (const s of spans) {
      const overlapping = spans.filter((o) => o.start <= s.start && o.end > s.start).length;
      expect(overlapping).toBeLessThanOrEqual(3);
    }
    expect(spans[3]!.start).toBeGreaterThanOrEqual(Math.min(...spans.slice(0, 3).map((s) => s.end)));
    for (const name of names) expect(toolNames(h.requestsOf(`/root/${name}`)[0]!)).toEqual(["find", "grep", "ls", "read"]);

    await expectNoSurvivors(h);
  }, SCENARIO_MS);

  it("03 nested: root → mid → leaf, the leaf's report travels up", async () => {
    const h = await tree({
      scripts: {
        "/root": [
          reply.toolCall("spawn_agent", { task_name: "mid", message: "Delegate the line-1 lookup to a leaf and relay its answer", fork_turns: "none" }),
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
    expect(toolNames(midReqs[0]!)).toEqual(expect.arrayContaining(["bash", "read", "spawn_agent", "wait_agent", "list_agents"]));
    // mid's spawn and wait results.
    expect(lastToolResult(midReqs[1]!)).toMatchObject({ agent_name: "/root/mid/leaf", role: "default" });
    const midWait = lastToolResult(midReqs[2]!) as Json;
    expect(midWait.notices, JSON.stringify(midWait)).toHaveLength(1);
    expect(midWait.notices[0]).toMatchObject({ agent_name: "/root/mid/leaf", type: "completed", report: "LEAF SAYS line-1" });
    expect(userTexts(h.requestsOf("/root/mid/leaf")[0]!).join("\n")).toContain("[NEW_TASK from /root/mid · task leaf]\nReport line 1");

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
  }, SCENARIO_MS);

  it("04 ordering: NEW_TASK first; then MESSAGE before FOLLOWUP_TASK in the next turn; send_message starts no turn", async () => {
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
            { name: "spawn_agent", args: { task_name: "worker", message: "FIRST TASK: sleep then report", agent_type: "implementation", fork_turns: "none" } },
            { name: "send_message", args: { target: "worker", message: "NOTE" } },
            { name: "followup_task", args: { target: "worker", message: "SECOND TASK" } },
          ]),
          ...Array.from({ length: 8 }, () => drive),
        ],
        "/root/worker": [reply.toolCall("bash", { command: "sleep 2" }), reply.text("first turn done"), reply.text("followup_received")],
      },
    });
    const run = await h.runRoot("queue", ROOT_RUN);
    expectCleanExit(run);

    const [spawn, send, followup] = h.allResultsOf("/root") as Json[];
    expect(spawn).toMatchObject({ agent_name: "/root/worker", role: "implementation", reasoning: "medium", agent_status: "running" });
    expect(send).toMatchObject({ delivered: "queued", target: "/root/worker", agent_status: "running" });
    expect(followup).toMatchObject({ agent_name: "/root/worker", queued_behind_running_turn: true });

    const reqs = h.requestsOf("/root/worker");
    expect(reqs).toHaveLength(3);
    const first = userTexts(reqs[0]!);
    expect(first).toEqual(["[NEW_TASK from /root · task worker]\nFIRST TASK: sleep then report"]);
    // The second turn continues the same conversation and gets both pieces, in the order sent.
    const second = userTexts(reqs[2]!);
    expect(second[0]).toBe(first[0]);
    const latest = second.at(-1)!;
    expect(latest).toContain("[MESSAGE from /root · task worker]\nNOTE");
    expect(latest).toContain("[FOLLOWUP_TASK from /root · task worker]\nSECOND TASK");
    expect(latest.indexOf("NOTE")).toBeLessThan(latest.indexOf("SECOND TASK"));
    expect(second.join("\n")).not.toContain("LATE NOTE");

    const notices = noticesOf(h);
    expect(notices.map((n) => [n.agent_name, n.type, n.report]), diag(h)).toEqual([
      ["/root/worker", "completed", "first turn done"],
      ["/root/worker", "completed", "followup_received"],
    ]);
    // LATE NOTE was queued for the next turn; it started none: the following wait is idle.
    const results = h.allResultsOf("/root") as Json[];
    const late = results.find((r) => r?.delivered && r.agent_status === "completed");
    expect(late).toMatchObject({ delivered: "queued", queued_messages: 1 });
    expect(results.at(-1)).toMatchObject({ notices: [], idle: true });
    const [record] = await h.readRecords();
    expect(record!.runs).toEqual(["0001-spawn", "0002-followup"]);
    expect(record!.inbox.map((p) => [p.kind, p.text])).toEqual([["MESSAGE", "LATE NOTE"]]);
    await expectNoSurvivors(h);
  }, SCENARIO_MS);

  it("05 interrupt/resume: a timed-out wait, interrupt a running sleep, resume on the same session", async () => {
    let sleepPids: number[] = [];
    let sleepGone: Promise<boolean[]> | undefined;
    let leftAfterInterrupt: number[] | undefined;
    let phase = 0;
    const h: TreeHarness = await tree({ scripts: { "/root/slowpoke": [reply.toolCall("bash", { command: "sleep 60" }), reply.text("back_online")] } });
    const drive = () => {
      switch (phase) {
        case 0:
          phase = 1;
          return reply.toolCall("spawn_agent", { task_name: "slowpoke", message: "Run sleep 60", agent_type: "implementation", fork_turns: "none" });
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
          leftAfterInterrupt = [...scenarioProcs(h, "0001-spawn"), ...readRunPids(h.treeDir()).filter((pid) => h.scenarioPids().includes(pid))];
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
    expect(interrupt).toMatchObject({ agent_name: "/root/slowpoke", previous_status: "running", agent_status: "interrupted" });
    const lists = results.filter((r) => r?.agents);
    expect(lists[0]!.agents[0]).toMatchObject({ agent_name: "/root/slowpoke", agent_status: "interrupted", health: "healthy" });
    // The interrupted turn's processes went with it: wrapper and pi before interrupt_agent
    // returned, the bash tool's sleep within 3 s.
    expect(leftAfterInterrupt?.map(describePid)).toEqual([]);
    expect(sleepPids.length).toBeGreaterThan(0);
    expect(await sleepGone).toEqual(sleepPids.map(() => true));

    const notices = noticesOf(h);
    expect(notices.map((n) => [n.agent_name, n.type, n.agent_status]), diag(h)).toEqual([
      ["/root/slowpoke", "interrupted", "interrupted"],
      ["/root/slowpoke", "completed", "completed"],
    ]);
    expect(notices[1]!.report).toBe("back_online");
    const followup = results.find((r) => r?.queued_behind_running_turn !== undefined)!;
    expect(followup).toMatchObject({ agent_name: "/root/slowpoke", queued_behind_running_turn: false, agent_status: "running" });
    expect(lists[1]!.agents[0]).toMatchObject({ agent_name: "/root/slowpoke", agent_status: "completed", health: "healthy" });

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
  }, SCENARIO_MS);

  it("05b interrupt and followup_task in one message: the follow-up waits for the stopped turn", async () => {
    let sleepPids: number[] = [];
    let phase = 0;
    const h: TreeHarness = await tree({ scripts: { "/root/slowpoke": [reply.toolCall("bash", { command: "sleep 60" }), reply.text("back_online")] } });
    const drive = (req: ChatRequest) => {
      switch (phase) {
        case 0:
          phase = 1;
          return reply.toolCall("spawn_agent", { task_name: "slowpoke", message: "Run sleep 60", agent_type: "implementation", fork_turns: "none" });
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
    expect(results.find((r) => r?.previous_status !== undefined)).toMatchObject({ previous_status: "running", agent_status: "interrupted" });
    expect(results.find((r) => r?.queued_behind_running_turn !== undefined)).toMatchObject({ agent_name: "/root/slowpoke", queued_behind_running_turn: false });
    expect(noticesOf(h).map((n) => [n.type, n.report]), diag(h)).toEqual([
      ["interrupted", ""],
      ["completed", "back_online"],
    ]);
    expect((results.at(-1) as Json).agents[0]).toMatchObject({ agent_name: "/root/slowpoke", agent_status: "completed", health: "healthy" });
    const reqs = h.requestsOf("/root/slowpoke");
    expect(reqs).toHaveLength(2);
    expect(userTexts(reqs[1]!)[0]).toBe("[NEW_TASK from /root · task slowpoke]\nRun sleep 60");
    expect(userTexts(reqs[1]!).at(-1)).toContain("[FOLLOWUP_TASK from /root · task slowpoke]\nAre you back?");
    const [record] = await h.readRecords();
    expect(record).toMatchObject({ status: "completed", runs: ["0001-spawn", "0002-followup"] });
    await expectNoSurvivors(h);
  }, SCENARIO_MS);

  it("05c close_agent on a running child: the root carries on, the subtree's processes are gone", async () => {
    let sleepPids: number[] = [];
    let phase = 0;
    const h: TreeHarness = await tree({ scripts: { "/root/slowpoke": [reply.toolCall("bash", { command: "sleep 60" }), reply.text("never")] } });
    const drive = () => {
      switch (phase) {
        case 0:
          phase = 1;
          return reply.toolCall("spawn_agent", { task_name: "slowpoke", message: "Run sleep 60", agent_type: "implementation", fork_turns: "none" });
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
    expect(noticesOf(h).map((n) => [n.agent_name, n.type, n.agent_status]), diag(h)).toEqual([["/root/slowpoke", "shutdown", "shutdown"]]);
    expect((results.at(-1) as Json).agents[0]).toMatchObject({ agent_name: "/root/slowpoke", agent_status: "shutdown" });
    expect(h.requestsOf("/root/slowpoke")).toHaveLength(1);
    await expectNoSurvivors(h);
  }, SCENARIO_MS);

  it("06 failure isolation: failed work still completes healthy; a sibling is unaffected", async () => {
    const drive = (req: ChatRequest) => {
      if (noticesIn(req).length < 2) return reply.toolCall("wait_agent", { timeout_ms: 20_000 });
      if (!toolResults(req).some((r) => (r as Json)?.agents)) return reply.toolCall("list_agents", {});
      return reply.text("ROOT DONE");
    };
    const h = await tree({
      scripts: {
        "/root": [
          reply.toolCalls([
            { name: "spawn_agent", args: { task_name: "doomed", message: "Read missing.txt, then run exit 1", agent_type: "implementation", fork_turns: "none" } },
            { name: "spawn_agent", args: { task_name: "healthy", message: "List the directory", agent_type: "scout", fork_turns: "none" } },
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
    expect(byName["/root/doomed"]).toMatchObject({ type: "completed", agent_status: "completed", health: "healthy", report: "DOOMED: the file is missing and the command failed" });
    expect(byName["/root/doomed"]!.outcome).toBeUndefined();
    expect(byName["/root/healthy"]).toMatchObject({ type: "completed", agent_status: "completed", health: "healthy", report: "HEALTHY: listed" });
    const list = h.allResultsOf("/root").at(-1) as Json;
    expect(list.agents.map((a: Json) => [a.agent_name, a.agent_status, a.health])).toEqual([
      ["/root/doomed", "completed", "healthy"],
      ["/root/healthy", "completed", "healthy"],
    ]);
    await expectNoSurvivors(h);
  }, SCENARIO_MS);

  it("06b failure isolation: a provider error makes a child errored and unhealthy; its sibling completes", async () => {
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
            { name: "spawn_agent", args: { task_name: "sibling", message: "Say hi", agent_type: "scout", fork_turns: "none" } },
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
    expect(byName["/root/broken"]).toMatchObject({ type: "errored", agent_status: "errored", health: "unhealthy", outcome: "failed" });
    expect(byName["/root/broken"]!.reason).toMatch(/500|scripted provider outage/);
    expect(byName["/root/sibling"]).toMatchObject({ type: "completed", agent_status: "completed", health: "healthy", report: "SIBLING OK" });
    const list = h.allResultsOf("/root").at(-1) as Json;
    expect(list.agents.map((a: Json) => [a.agent_name, a.agent_status, a.health])).toEqual([
      ["/root/broken", "errored", "unhealthy"],
      ["/root/sibling", "completed", "healthy"],
    ]);
    await expectNoSurvivors(h);
  }, SCENARIO_MS);
});
