/**
 * The user's stress report (seeds/003), scenarios 01–06, against the real pi CLI loading the
 * extension, with a scripted root model and scripted children (test/support/tree-harness.ts).
 * Each scenario asserts on what the root model received (its tool results), on each child's
 * LLM requests, on the tree directory's records, and that no process of the tree survives.
 */
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { waitForPidExit } from "../support/processes.js";
import { reply, systemText, userTexts, type ChatRequest } from "../support/scripted-llm.js";
import { describePid, startTree, type TreeHarness, type TreeOptions } from "../support/tree-harness.js";
import { lastToolResult, toolResults } from "../support/tree-llm.js";

let harnesses: TreeHarness[] = [];
afterEach(async () => {
  for (const h of harnesses.reverse()) await h.cleanup();
  harnesses = [];
});

async function tree(opts: TreeOptions): Promise<TreeHarness> {
  const h = await startTree(opts);
  harnesses.push(h);
  return h;
}

type Json = Record<string, any>;

async function expectNoSurvivors(h: TreeHarness): Promise<void> {
  const alive = await h.survivors();
  expect(alive.map(describePid)).toEqual([]);
}

function expectCleanExit(run: { code: number | null; timedOut: boolean; stderr: string }): void {
  expect(run.timedOut, run.stderr.slice(-2000)).toBe(false);
  expect(run.code, run.stderr.slice(-2000)).toBe(0);
}

/** Every notice the agent received through wait_agent, in order. */
function noticesOf(h: TreeHarness, agent = "/root"): Json[] {
  return h.allResultsOf(agent).flatMap((r) => (r && typeof r === "object" && Array.isArray((r as Json).notices) ? (r as Json).notices : []));
}

/** Notices (so far) in the tool results a request carries. */
function noticesIn(req: ChatRequest): Json[] {
  return toolResults(req).flatMap((r) => (r && typeof r === "object" && Array.isArray((r as Json).notices) ? (r as Json).notices : []));
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

const toolNames = (req: { tools?: Array<{ function: { name: string } }> }) => (req.tools ?? []).map((t) => t.function.name).sort();

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
    const run = await h.runRoot("go");
    expectCleanExit(run);
    const [, models, spawn, wait, list] = h.rootResults() as Json[];

    const fast = models!.models.find((m: Json) => m.model === "fake/fast");
    expect(fast).toMatchObject({ reasoning_levels: ["off", "minimal", "low", "medium", "high"], context_window: expect.any(Number) });
    expect(models!.models.find((m: Json) => m.model === "fake/deep")?.reasoning_levels).toEqual(["off", "high", "xhigh"]);
    expect(models!.scoped ?? false).toBe(false);

    expect(spawn).toMatchObject({ agent_name: "/root/scout_one", role: "scout", model: "fake/fast", reasoning: "low" });
    expect(spawn!.nickname).toEqual(expect.any(String));
    expect(["running", "pending_init"]).toContain(spawn!.agent_status);

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
    });

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
    expect(userTexts(scoutReqs[0]!).join("\n")).toContain("Read README line 1");

    await expectNoSurvivors(h);
  });

  it("02 parallel: four scouts in one message, the fourth queued behind the per-parent limit of 3", async () => {
    const names = ["para_a", "para_b", "para_c", "para_d"];
    // The root waits until every scout's notice has arrived, then lists the tree.
    const drive = (req: ChatRequest) => {
      if (noticesIn(req).length < names.length) return reply.toolCall("wait_agent", { timeout_ms: 20_000 });
      if (!toolResults(req).some((r) => (r as Json)?.agents)) return reply.toolCall("list_agents", {});
      return reply.text("ROOT DONE");
    };
    const scripts: TreeOptions["scripts"] = {
      "/root": [
        reply.toolCalls(names.map((name) => ({ name: "spawn_agent", args: { task_name: name, message: `recon ${name}`, agent_type: "scout", fork_turns: "none" } }))),
        ...Array.from({ length: 12 }, () => drive),
      ],
    };
    // Each scout first looks around (a tool turn), then answers slowly (streamed over ~1 s).
    for (const name of names) scripts[`/root/${name}`] = [reply.toolCall("ls", {}), reply.text(`REPORT ${name}`, { chunkDelayMs: 250 })];
    const h = await tree({ scripts });
    const run = await h.runRoot("fan out");
    expectCleanExit(run);

    const spawns = h.allResultsOf("/root").slice(0, 4) as Json[];
    expect(spawns.map((s) => s.agent_name)).toEqual(names.map((n) => `/root/${n}`));
    for (const s of spawns.slice(0, 3)) {
      expect(s.agent_status).toBe("running");
      expect(s.queue_position).toBeUndefined();
    }
    expect(spawns[3]).toMatchObject({ agent_status: "pending_init", queue_position: 1, role: "scout" });
    expect(new Set(spawns.map((s) => s.nickname)).size).toBe(4);

    const notices = noticesOf(h);
    expect(notices).toHaveLength(4);
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
  });

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
          (req) => reply.text(`MID RELAYS: ${(lastToolResult(req) as Json).notices[0].report}`),
        ],
        "/root/mid/leaf": [reply.text("LEAF SAYS line-1")],
      },
    });
    const run = await h.runRoot("nest");
    expectCleanExit(run);

    const [, spawn, wait, list] = h.rootResults() as Json[];
    expect(spawn).toMatchObject({ agent_name: "/root/mid", role: "default", model: "fake/fast" });
    // mid is a plain child: the root's tools, coordination tools included.
    const midReqs = h.requestsOf("/root/mid");
    expect(toolNames(midReqs[0]!)).toEqual(expect.arrayContaining(["bash", "read", "spawn_agent", "wait_agent", "list_agents"]));
    // mid's spawn and wait results.
    expect(lastToolResult(midReqs[1]!)).toMatchObject({ agent_name: "/root/mid/leaf", role: "default" });
    const midWait = lastToolResult(midReqs[2]!) as Json;
    expect(midWait.notices).toHaveLength(1);
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
  });

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
    const run = await h.runRoot("queue");
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
    expect(notices.map((n) => [n.agent_name, n.type, n.report])).toEqual([
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
  });

  it("05 interrupt/resume: a timed-out wait, interrupt a running sleep, resume on the same session", async () => {
    let sleepPids: number[] = [];
    let sleepGone: Promise<boolean[]> | undefined;
    let phase = 0;
    const h: TreeHarness = await tree({ scripts: { "/root/slowpoke": [reply.toolCall("bash", { command: "sleep 60" }), reply.text("back_online")] } });
    const drive = (req: ChatRequest) => {
      const last = lastToolResult(req) as Json | undefined;
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
          if (sleepPids.length === 0) return reply.toolCall("wait_agent", { timeout_ms: 200 });
          phase = 3;
          return reply.toolCall("interrupt_agent", { target: "slowpoke" });
        case 3:
          sleepGone = Promise.all(sleepPids.map((pid) => waitForPidExit(pid, 5_000)));
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
          return reply.text(`ROOT DONE ${JSON.stringify(last ?? null).length}`);
      }
    };
    h.tree.add("/root", ...Array.from({ length: 30 }, () => drive));
    const run = await h.runRoot("interrupt");
    expectCleanExit(run);
    expect(phase).toBe(8);

    const results = h.allResultsOf("/root") as Json[];
    const first = results[1]!;
    expect(first).toMatchObject({ notices: [], timed_out: true, timeout_ms: 1000 });
    const interrupt = results.find((r) => r?.previous_status !== undefined)!;
    expect(interrupt).toMatchObject({ agent_name: "/root/slowpoke", previous_status: "running", agent_status: "interrupted" });
    const lists = results.filter((r) => r?.agents);
    expect(lists[0]!.agents[0]).toMatchObject({ agent_name: "/root/slowpoke", agent_status: "interrupted", health: "healthy" });
    // The sleep went with the interrupted turn (within 5 s of interrupt_agent returning).
    expect(sleepPids.length).toBeGreaterThan(0);
    expect(await sleepGone).toEqual(sleepPids.map(() => true));

    const notices = noticesOf(h);
    expect(notices.map((n) => [n.agent_name, n.type, n.agent_status])).toEqual([
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
  });
});
