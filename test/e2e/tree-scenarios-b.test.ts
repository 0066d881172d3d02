/**
 * Stress scenarios 07–11 of the stress table (test/support/stress/scenarios-b.ts), played as
 * scripts/stress-test plays them — the real pi CLI loading the extension, a scripted root model
 * and scripted children — and judged as it judges them (exit 0, the strict marker, the
 * scenario's check). Then, deeper: what the root model received, the children's LLM requests,
 * list_agents, and that no process survives. Two more tests go past scenario 09: every
 * validation message with the depth and spawn limits set low, and what the root may not do to a
 * grandchild. Regressions for defects once found are in tree-regressions.test.ts.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ONE_LINE_IS_ENOUGH } from "../support/pi-home.js";
import { type ChatRequest, reply, systemText, userTexts } from "../support/scripted-llm.js";
import {
  crossProvider,
  extensionInheritance,
  limitBehavior,
  modelReasoningOverrides,
  probeFile,
  restartResume,
} from "../support/stress/scenarios-b.js";
import { expectScenarioPassed, playScenario } from "../support/stress-scenarios.js";
import type { TreeHarness } from "../support/tree-harness.js";
import {
  agentEntries,
  allNotices,
  expectCleanExit,
  expectNoSurvivors,
  type Json,
  lastList,
  Program,
  rootResult,
  rootText,
  sinceLastPrompt,
  spawn,
  toolNames,
  toolResultFor,
  useTrees,
  waitForAll,
} from "../support/tree-harness-extra.js";
import { lastToolResult } from "../support/tree-llm.js";

const tree = useTrees();

describe("stress scenarios 07–11 (real pi, scripted models)", { timeout: 120_000 }, () => {
  it("07 cross-provider: children on other/alt and fake/deep complete on the right model", async () => {
    const play = await playScenario(tree, crossProvider);
    expectScenarioPassed(play, crossProvider);
    const { h } = play;

    const alt = rootResult(h, "spawn_agent", { task_name: "child_a" });
    const deep = rootResult(h, "spawn_agent", { task_name: "child_b" });
    expect(alt).toMatchObject({ agent_name: "/root/child_a", role: "default", model: "other/alt", reasoning: "off" });
    expect(deep).toMatchObject({
      agent_name: "/root/child_b",
      role: "specialist",
      model: "fake/deep",
      reasoning: "high",
    });

    const notices = allNotices(h);
    expect(notices.find((n) => n.agent_name === "/root/child_a")).toMatchObject({
      type: "completed",
      model: "other/alt",
      reasoning: "off",
      report: "ALT REPORT",
    });
    expect(notices.find((n) => n.agent_name === "/root/child_b")).toMatchObject({
      type: "completed",
      model: "fake/deep",
      reasoning: "high",
      report: "DEEP REPORT",
    });
    expect(notices).toHaveLength(2);

    const list = lastList(h);
    expect(list.map((a) => [a.agent_name, a.agent_status, a.role, a.model, a.reasoning, a.health])).toEqual([
      ["/root/child_a", "completed", "default", "other/alt", "off", "healthy"],
      ["/root/child_b", "completed", "specialist", "fake/deep", "high", "healthy"],
    ]);

    // Each child asked its own provider (URL path, key) for its own model id, at its reasoning.
    const byAgent = (agent: string) =>
      h.llm.allRequests.filter((r) => r.body && systemText(r.body).includes(`You are the agent ${agent} `));
    const [altReq] = byAgent("/root/child_a");
    expect(altReq).toMatchObject({ path: "/v1/other/chat/completions", body: { model: "alt" } });
    expect(altReq!.headers.authorization).toBe("Bearer other-key");
    expect(altReq!.body!.reasoning_effort).toBeUndefined();
    const [deepReq] = byAgent("/root/child_b");
    expect(deepReq).toMatchObject({ path: "/v1/chat/completions", body: { model: "deep", reasoning_effort: "high" } });
    expect(deepReq!.headers.authorization).toBe("Bearer fake-key");
    expect(systemText(altReq!.body!)).toContain("Your own model is other/alt with reasoning off.");
    expect(systemText(deepReq!.body!)).toContain("Your own model is fake/deep with reasoning high.");
    expect(userTexts(altReq!.body!).join("\n")).toContain("ALT TASK");

    await expectNoSurvivors(h);
  });

  it("08 model/reasoning overrides: explicit unsupported levels are refused, role levels clamped", async () => {
    const play = await playScenario(tree, modelReasoningOverrides);
    expectScenarioPassed(play, modelReasoningOverrides);
    const { h } = play;

    expect(rootText(h, "spawn_agent", { task_name: "plain_low" })).toBe(
      "reasoning_effort low is not supported by fake/deep",
    );
    // `max` is pi 1.x's level, supported only by a model that maps it (neither test model does).
    expect(rootText(h, "spawn_agent", { task_name: "plain_max" })).toMatch(
      /^reasoning_effort max is not supported by fake\/\w+$/,
    );
    expect(rootResult(h, "spawn_agent", { task_name: "scout_clamped" })).toMatchObject({
      role: "scout",
      model: "fake/deep",
      reasoning: "high",
    });
    expect(rootResult(h, "spawn_agent", { task_name: "scout_high" })).toMatchObject({
      role: "scout",
      model: "fake/fast",
      reasoning: "high",
    });
    expect(rootResult(h, "spawn_agent", { task_name: "plain_minimal" })).toMatchObject({
      role: "default",
      model: "fake/fast",
      reasoning: "minimal",
    });
    expect(rootResult(h, "spawn_agent", { task_name: "deep_xhigh" })).toMatchObject({
      role: "default",
      model: "fake/deep",
      reasoning: "xhigh",
    });

    const notices = allNotices(h);
    expect(notices.map((n) => [n.agent_name, n.type, n.model, n.reasoning]).sort()).toEqual([
      ["/root/deep_xhigh", "completed", "fake/deep", "xhigh"],
      ["/root/plain_minimal", "completed", "fake/fast", "minimal"],
      ["/root/scout_clamped", "completed", "fake/deep", "high"],
      ["/root/scout_high", "completed", "fake/fast", "high"],
    ]);
    // The refused spawns left nothing behind.
    expect(lastList(h).map((a) => [a.agent_name, a.agent_status, a.role, a.model, a.reasoning])).toEqual([
      ["/root/scout_high", "completed", "scout", "fake/fast", "high"],
      ["/root/scout_clamped", "completed", "scout", "fake/deep", "high"],
      ["/root/plain_minimal", "completed", "default", "fake/fast", "minimal"],
      ["/root/deep_xhigh", "completed", "default", "fake/deep", "xhigh"],
    ]);
    expect((await h.readRecords()).map((r) => r.path)).toEqual([
      "/root/scout_high",
      "/root/scout_clamped",
      "/root/plain_minimal",
      "/root/deep_xhigh",
    ]);
    expect(h.requestsOf("/root/plain_low")).toEqual([]);
    expect(h.requestsOf("/root/plain_max")).toEqual([]);

    // What each child's provider was asked for (deep maps xhigh to "max").
    expect(h.requestsOf("/root/scout_high")[0]).toMatchObject({ model: "fast", reasoning_effort: "high" });
    expect(h.requestsOf("/root/scout_clamped")[0]).toMatchObject({ model: "deep", reasoning_effort: "high" });
    expect(h.requestsOf("/root/plain_minimal")[0]).toMatchObject({ model: "fast", reasoning_effort: "minimal" });
    expect(h.requestsOf("/root/deep_xhigh")[0]).toMatchObject({ model: "deep", reasoning_effort: "max" });

    await expectNoSurvivors(h);
  });

  it("09 limit-behavior, as the stress script plays it", async () => {
    const play = await playScenario(tree, limitBehavior);
    expectScenarioPassed(play, limitBehavior);
    await expectNoSurvivors(play.h);
  });

  // Package bookkeeping, the same on either line: pi 1.x only in npm test (ONE_LINE_IS_ENOUGH).
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "beyond 09, limits: every spawn_agent validation message (docs/tools.md) verbatim, the depth and spawn limits set low; a rejected spawn leaves no agent",
    async () => {
      const bad = (args: Json) => spawn({ message: "never runs", ...args });
      const root = new Program([
        bad({ task_name: "Bad-Name", fork_turns: "none" }),
        bad({ task_name: "scout_all", agent_type: "scout", fork_turns: "all" }),
        bad({ task_name: "impl_default", agent_type: "implementation" }),
        bad({ task_name: "ghost_role", agent_type: "nonexistent_role", fork_turns: "none" }),
        bad({ task_name: "bad_model", model: "fake/nope", fork_turns: "none" }),
        bad({ task_name: "bad_level", reasoning_effort: "turbo", fork_turns: "none" }),
        bad({ task_name: "low_deep", model: "fake/deep", reasoning_effort: "low", fork_turns: "none" }),
        bad({ task_name: "bad_fork", fork_turns: "some" }),
        bad({ task_name: "zero_fork", fork_turns: 0 }),
        spawn({ task_name: "a", message: "TRY TO DELEGATE", fork_turns: "none" }),
        bad({ task_name: "a", fork_turns: "none" }),
        spawn({ task_name: "second", message: "SECOND TASK", agent_type: "scout", fork_turns: "none" }),
        bad({ task_name: "third", fork_turns: "none" }),
        waitForAll(["/root/a", "/root/second"]),
        reply.toolCall("list_agents", {}),
        reply.text("ROOT DONE"),
      ]);
      const h = await tree({
        env: { PI_SUBAGENTS_MAX_DEPTH: "1", PI_SUBAGENTS_MAX_SPAWNS: "2" },
        scripts: {
          "/root": root.steps(),
          "/root/a": [
            spawn({ task_name: "b", message: "TOO DEEP", fork_turns: "none" }),
            (req: ChatRequest) => reply.text(`A GOT: ${String(lastToolResult(req))}`),
          ],
          "/root/second": [reply.text("SECOND REPORT")],
        },
      });
      const run = await h.runRoot("go");
      expectCleanExit(run);
      expect(root.remaining).toBe(0);

      const message = (task_name: string, extra: Json = {}) => rootText(h, "spawn_agent", { task_name, ...extra });
      expect(message("Bad-Name")).toBe("agent_name must use only lowercase letters, digits, and underscores");
      expect(message("scout_all")).toBe("scout agents require fork_turns `none`");
      expect(message("impl_default")).toBe(
        "Full-history forked agents inherit the parent agent type; omit agent_type, or spawn without a full-history fork.",
      );
      expect(message("ghost_role")).toBe("unknown agent_type: nonexistent_role");
      expect(message("bad_model")).toBe("unknown model: fake/nope");
      expect(message("bad_level")).toBe("unknown reasoning_effort: turbo");
      expect(message("low_deep")).toBe("reasoning_effort low is not supported by fake/deep");
      expect(message("bad_fork")).toBe('fork_turns must be "none", "all", or a positive integer');
      expect(message("zero_fork")).toBe('fork_turns must be "none", "all", or a positive integer');
      expect(message("a", { message: "never runs" })).toBe("agent task path already exists: /root/a");
      expect(message("third")).toBe("spawn limit reached: this tree has spawned 2 agents (limit 2)");

      // The depth limit, as the child that tried to go deeper was told, and relayed to the root.
      const depth = "agent depth limit reached: /root/a/b would be 2 levels below the root (limit 1)";
      expect(lastToolResult(h.requestsOf("/root/a")[1]!)).toBe(depth);
      expect(allNotices(h).find((n) => n.agent_name === "/root/a")).toMatchObject({
        type: "completed",
        report: `A GOT: ${depth}`,
      });

      expect(lastList(h).map((a) => [a.agent_name, a.agent_status])).toEqual([
        ["/root/a", "completed"],
        ["/root/second", "completed"],
      ]);
      expect((await h.readRecords()).map((r) => r.path)).toEqual(["/root/a", "/root/second"]);
      const agentsDir = path.join(h.treeDir(), "agents");
      expect(fs.readdirSync(agentsDir).sort()).toEqual(["a", "second"]);
      expect(fs.readdirSync(path.join(agentsDir, "a")).filter((e) => e === "b")).toEqual([]);
      expect(fs.readdirSync(path.join(h.treeDir(), "spawns"))).toHaveLength(2);

      await expectNoSurvivors(h);
    },
  );

  // Package bookkeeping, the same on either line: pi 1.x only in npm test (ONE_LINE_IS_ENOUGH).
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "beyond 09, targets: unknown targets, and a grandchild the root may not act on (only its parent may)",
    async () => {
      const grandchild = "/root/a/b is not a direct child of /root; its parent /root/a can act on it";
      const root = new Program([
        spawn({ task_name: "a", message: "DELEGATE TO B", fork_turns: "none" }),
        waitForAll(["/root/a"]),
        reply.toolCall("wait_agent", { target: "ghost", timeout_ms: 0 }),
        reply.toolCall("wait_agent", { target: "/root/a/b", timeout_ms: 0 }),
        reply.toolCall("followup_task", { target: "/root/a/b", message: "HI B" }),
        reply.toolCall("followup_task", { target: "a/b", message: "HI B AGAIN" }),
        reply.toolCall("send_message", { target: "/root/a/b", message: "NOTE" }),
        reply.toolCall("interrupt_agent", { target: "/root/a/b" }),
        reply.toolCall("close_agent", { target: "/root/a/b" }),
        reply.toolCall("followup_task", { target: "ghost", message: "HI" }),
        reply.toolCall("get_agent_report", { target: "/root/a/b" }),
        reply.toolCall("list_agents", {}),
        reply.text("ROOT DONE"),
      ]);
      const a = new Program([
        spawn({ task_name: "b", message: "LEAF TASK", fork_turns: "none" }),
        waitForAll(["/root/a/b"]),
        reply.text("A DONE"),
      ]);
      const h = await tree({
        scripts: { "/root": root.steps(), "/root/a": a.steps(), "/root/a/b": [reply.text("B REPORT")] },
      });
      const run = await h.runRoot("go");
      expectCleanExit(run);
      expect(root.remaining).toBe(0);
      expect(a.remaining).toBe(0);

      expect(rootText(h, "wait_agent", { target: "ghost" })).toBe("agent not found");
      expect(rootResult(h, "wait_agent", { target: "/root/a/b" })).toMatchObject({
        notices: [],
        timed_out: false,
        idle: true,
      });
      expect(rootText(h, "followup_task", { target: "/root/a/b" })).toBe(grandchild);
      expect(rootText(h, "followup_task", { target: "a/b" })).toBe(grandchild);
      expect(rootText(h, "send_message", { target: "/root/a/b" })).toBe(grandchild);
      expect(rootText(h, "interrupt_agent", { target: "/root/a/b" })).toBe(grandchild);
      expect(rootText(h, "close_agent", { target: "/root/a/b" })).toBe(grandchild);
      expect(rootText(h, "followup_task", { target: "ghost" })).toBe("agent not found");
      expect(rootResult(h, "get_agent_report", { target: "/root/a/b" })).toMatchObject({
        agent_name: "/root/a/b",
        available: true,
        text: "B REPORT",
      });

      // Nothing the root was refused reached the grandchild, which ran its one turn only.
      expect(lastList(h).map((x) => [x.agent_name, x.agent_status])).toEqual([
        ["/root/a", "completed"],
        ["/root/a/b", "completed"],
      ]);
      expect(h.requestsOf("/root/a/b")).toHaveLength(1);
      await expectNoSurvivors(h);
    },
  );

  // tree-durable restores on both lines; this plays it as the stress script does: pi 1.x only in npm test (ONE_LINE_IS_ENOUGH).
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "10 restart/resume: a second pi process on the same session sees, reads and resumes its children",
    async () => {
      const latest = (entries: Json[], agent: string) => entries.filter((e) => e.path === agent).at(-1);
      let aRequests = 0;
      // Between the two root processes: what process A saw and left behind.
      const afterPhase = async (index: number) => {
        if (index !== 0) return;
        aRequests = h.requestsOf("/root").length;
        const endA = h.requestsOf("/root").at(-1)!;
        expect(lastList(h, endA).map((a) => [a.agent_name, a.agent_status])).toEqual([
          ["/root/persisted_worker", "completed"],
        ]);
        expect(allNotices(h, endA).map((n) => [n.agent_name, n.type])).toEqual([
          ["/root/persisted_worker", "completed"],
        ]);
        // What process A left in its session: the last record of each agent keeps its real status.
        expect(latest(agentEntries(session), "/root/persisted_worker")).toMatchObject({ status: "completed" });
        expect(latest(agentEntries(session), "/root/slow")).toMatchObject({ status: "interrupted" });
        expect(await h.survivors()).toEqual([]);
      };
      let h!: TreeHarness;
      let session = "";
      const play = await playScenario(
        async (opts) => {
          h = await tree(opts);
          session = path.join(h.home.root, "stress", "session.jsonl");
          return h;
        },
        restartResume,
        { afterPhase },
      );
      expect(play.state.sessionFile).toBe(session);
      expectScenarioPassed(play, restartResume);
      const endB = h.requestsOf("/root").at(-1)!;
      // Process B's own tool results: those after its prompt.
      const b = sinceLastPrompt(endB);
      expect(h.requestsOf("/root").length).toBeGreaterThan(aRequests);
      expect(aRequests).toBeGreaterThan(0);

      const firstList = JSON.parse(toolResultFor(b, "list_agents", { path_prefix: undefined })[0]!) as Json;
      expect(firstList.agents.map((a: Json) => [a.agent_name, a.agent_status, a.role, a.model, a.reasoning])).toEqual([
        ["/root/persisted_worker", "completed", "scout", "fake/fast", "low"],
        ["/root/slow", "interrupted", "default", "fake/fast", expect.any(String)],
      ]);
      // Nothing is reported twice: the worker's notice went to process A, the slow child's stop to nobody.
      expect(rootResult(h, "wait_agent", { timeout_ms: 0 }, b)).toMatchObject({
        notices: [],
        idle: true,
        timed_out: false,
      });
      expect(rootResult(h, "get_agent_report", { target: "persisted_worker" }, b)).toMatchObject({
        available: true,
        text: "WORKER REPORT 1",
        next_offset: null,
      });
      expect(rootResult(h, "followup_task", { target: "persisted_worker" }, b)).toMatchObject({
        agent_name: "/root/persisted_worker",
      });
      expect(rootResult(h, "followup_task", { target: "slow" }, b)).toMatchObject({ agent_name: "/root/slow" });
      expect(
        allNotices(h, b)
          .map((n) => [n.agent_name, n.type, n.report])
          .sort(),
      ).toEqual([
        ["/root/persisted_worker", "completed", "WORKER REPORT 2"],
        ["/root/slow", "completed", "SLOW RESUMED"],
      ]);
      expect(lastList(h, b).map((a) => [a.agent_name, a.agent_status])).toEqual([
        ["/root/persisted_worker", "completed"],
        ["/root/slow", "completed"],
      ]);

      // The worker continued its own conversation; the slow child got its lost task first, then the follow-up.
      const worker2 = h.requestsOf("/root/persisted_worker")[1]!;
      expect(userTexts(worker2).join("\n")).toContain("WORKER TASK");
      expect(JSON.stringify(worker2.messages)).toContain("WORKER REPORT 1");
      expect(userTexts(worker2).at(-1)).toContain("[FOLLOWUP_TASK from /root");
      expect(userTexts(worker2).at(-1)).toContain("WORKER AGAIN");
      const slow = h.requestsOf("/root/slow");
      expect(slow).toHaveLength(2);
      const resumed = userTexts(slow[1]!).at(-1)!;
      expect(resumed).toMatch(
        /\[NEW_TASK from \/root[^\]]*\]\nSLOW TASK[\s\S]*\[FOLLOWUP_TASK from \/root[^\]]*\]\nSLOW RESUME/,
      );

      const final = agentEntries(session);
      expect(latest(final, "/root/persisted_worker")).toMatchObject({ status: "completed" });
      expect(latest(final, "/root/slow")).toMatchObject({ status: "completed" });
      await expectNoSurvivors(h);
    },
  );

  it("11 extension tool inheritance: a plain child gets a third-party extension's tool, a scout loads it but not its tool", async () => {
    const play = await playScenario(tree, extensionInheritance);
    expectScenarioPassed(play, extensionInheritance);
    const { h } = play;
    const probe = probeFile(play.state.dir);

    const coordination = [
      "close_agent",
      "followup_task",
      "get_agent_report",
      "interrupt_agent",
      "list_agents",
      "list_models",
      "send_message",
      "spawn_agent",
      "wait_agent",
    ];
    const rootTools = toolNames(h.requestsOf("/root")[0]!);
    expect(rootTools).toEqual(expect.arrayContaining(["probe_tool", ...coordination]));

    // The plain child has the root's tools, the extension's included, and the tool works there.
    const plain = h.requestsOf("/root/plain_child");
    expect(plain).toHaveLength(2);
    expect(toolNames(plain[0]!)).toEqual(rootTools);
    expect(lastToolResult(plain[1]!)).toBe("probe says ping");
    expect(allNotices(h).find((n) => n.agent_name === "/root/plain_child")).toMatchObject({
      type: "completed",
      report: "PLAIN GOT probe says ping",
    });

    // The scout keeps to its role: no extension tool, no coordination tool.
    expect(toolNames(h.requestsOf("/root/scout_child")[0]!)).toEqual(["find", "grep", "ls", "read"]);

    const records = await h.readRecords();
    expect(records.find((r) => r.path === "/root/plain_child")!.extensions).toContain(probe);
    // The scout loads it too — every extension the root was started with guards every child
    // here, a permission gate that registers no tool included — but its role's --tools keep the
    // extension's tool out of its list (checked above).
    expect(records.find((r) => r.path === "/root/scout_child")!.extensions).toContain(probe);
    await expectNoSurvivors(h);
  });
});
