/**
 * Live progress and cost with the real pi: wait_agent streams what running agents do (pi's
 * onUpdate → tool_execution_update on the root's stdout), notices and list_agents carry
 * usage rolled up per subtree, and a tree budget refuses new turns tree-wide once spent.
 */
import { spawn as spawnChild } from "node:child_process";
import { describe, expect, it } from "vitest";
import { signalGroup } from "../../src/wrapper/child.js";
import { ONE_LINE_IS_ENOUGH, REAL_PI, REPO_ROOT } from "../support/pi-home.js";
import { rpcLines } from "../support/rpc-lines.js";
import { reply } from "../support/scripted-llm.js";
import {
  allNotices,
  expectCleanExit,
  expectNoSurvivors,
  type Json,
  lastRootRequest,
  Program,
  rootResult,
  rootText,
  spawn,
  toolResultFor,
  useTrees,
  waitForAll,
} from "../support/tree-harness-extra.js";

const tree = useTrees();
const SCENARIO_MS = 120_000;

/** The partial results pi streamed for the root's `toolName` calls (json mode stdout). */
function updatesOf(stdout: string, toolName: string): Json[] {
  return stdout
    .split("\n")
    .filter((line) => line.startsWith('{"type":"tool_execution_update"'))
    .map((line) => JSON.parse(line) as Json)
    .filter((event) => event.toolName === toolName)
    .map((event) => event.partialResult as Json);
}

describe("live progress and cost", () => {
  it(
    "wait_agent streams each running agent's tool, turns and usage; notices and list_agents roll usage up per subtree",
    async () => {
      const root = new Program([
        spawn({ task_name: "lead", fork_turns: "none", message: "Have a helper work, then report." }),
        waitForAll(["/root/lead"], 30_000),
        reply.toolCall("list_agents", {}),
        reply.text("ROOT DONE"),
      ]);
      const lead = new Program([
        spawn({ task_name: "leaf", fork_turns: "none", message: "Work for a while." }),
        waitForAll(["/root/lead/leaf"], 30_000),
        reply.text("lead done"),
      ]);
      const h = await tree({
        scripts: {
          "/root": root.steps(),
          "/root/lead": lead.steps(),
          "/root/lead/leaf": [reply.toolCall("bash", { command: "sleep 3" }), reply.text("leaf done")],
        },
      });
      const run = await h.runRoot("go");
      expectCleanExit(run);

      const updates = updatesOf(run.stdout, "wait_agent");
      expect(updates.length).toBeGreaterThan(1);
      const seen = updates.flatMap((u) => (u.details as Json).agents as Json[]);
      const leafBusy = seen.find((a) => a.agent_name === "/root/lead/leaf" && a.current_tool === "bash");
      expect(leafBusy).toMatchObject({
        agent_status: "running",
        model: "fake/fast",
        nickname: expect.any(String),
        turns: 1,
        tool_calls: 1,
      });
      expect(leafBusy!.usage.total_tokens).toBe(15);
      expect(leafBusy!.elapsed_ms).toEqual(expect.any(Number));
      expect(seen.some((a) => a.agent_name === "/root/lead" && a.current_tool === "wait_agent")).toBe(true);
      // The text form of the same progress: the update that showed the leaf busy says so too
      // (a later update may already show it completed, while lead still waits).
      // One line, not the tree (the widget draws the tree once): the counts and what each running agent does.
      const texts = updates.map((u) => (u.content as Json[])[0]!.text as string);
      expect(texts.every((text) => !text.includes("\n"))).toBe(true);
      // Each is the counts and what each running agent does; a last tick between lead's end and
      // the take of its notice has nobody active, and says only how long it has waited.
      for (const text of texts)
        expect(text).toMatch(/^waiting \d+s for notices( · (\d running(, \d queued)?: .+|\d queued))?$/);
      expect(texts.some((text) => /^waiting \d+s for notices · \d running: /.test(text))).toBe(true);
      expect(texts.some((text) => text.includes(`leaf (${leafBusy!.nickname}) bash`))).toBe(true);

      // Usage: 15 tokens per scripted reply. lead made 3+ requests, leaf 2.
      const leadTokens = 15 * h.requestsOf("/root/lead").length;
      const [notice] = allNotices(h).filter((n) => n.agent_name === "/root/lead");
      expect(notice!.usage).toEqual({
        input: expect.any(Number),
        output: expect.any(Number),
        total_tokens: leadTokens,
        cost: 0,
      });
      expect(notice!.subtree_usage).toEqual({
        input: expect.any(Number),
        output: expect.any(Number),
        total_tokens: leadTokens + 30,
        cost: 0,
      });
      const list = rootResult(h, "list_agents");
      const byName = new Map((list.agents as Json[]).map((a) => [a.agent_name, a]));
      expect(byName.get("/root/lead")).toMatchObject({
        usage: { total_tokens: leadTokens },
        subtree_usage: { total_tokens: leadTokens + 30 },
      });
      expect(byName.get("/root/lead/leaf")).toMatchObject({
        usage: { total_tokens: 30 },
        subtree_usage: { total_tokens: 30 },
      });
      expect(list.total_usage).toMatchObject({ total_tokens: leadTokens + 30 });
      expect(list.budget).toBeUndefined();
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  // Package bookkeeping, the same on either line: pi 1.x only in npm test (ONE_LINE_IS_ENOUGH).
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "a spent tree budget refuses spawn_agent and followup_task with one clear error, in nested agents too",
    async () => {
      const refusal =
        /^tree budget spent: this tree's agents have used \d+ tokens of its 20-token budget \(PI_SUBAGENTS_BUDGET_TOKENS\); no new turns start$/;
      const root = new Program([
        spawn({ task_name: "first", fork_turns: "none", message: "Try to delegate, then report." }),
        waitForAll(["/root/first"], 30_000),
        spawn({ task_name: "second", fork_turns: "none", message: "never runs" }),
        reply.toolCall("followup_task", { target: "first", message: "again" }),
        reply.toolCall("list_agents", {}),
        reply.text("ROOT DONE"),
      ]);
      const h = await tree({
        env: { PI_SUBAGENTS_BUDGET_TOKENS: "20" },
        scripts: {
          "/root": root.steps(),
          // Its first answer alone spends 35 tokens: its own spawn is refused while its turn still runs.
          "/root/first": [
            reply.toolCall(
              "spawn_agent",
              { task_name: "sub", fork_turns: "none", message: "x" },
              { usage: { prompt_tokens: 30, completion_tokens: 5, total_tokens: 35 } },
            ),
            reply.text("could not delegate"),
          ],
        },
      });
      expectCleanExit(await h.runRoot("go"));
      const firstReq = h.requestsOf("/root/first").at(-1)!;
      expect(toolResultFor(firstReq, "spawn_agent")[0]).toMatch(refusal);
      const req = lastRootRequest(h);
      expect(rootText(h, "spawn_agent", { task_name: "second" }, req)).toMatch(refusal);
      expect(rootText(h, "followup_task", { target: "first" }, req)).toMatch(refusal);
      expect(rootResult(h, "list_agents", {}, req).budget).toEqual({
        tokens: 20,
        spent_tokens: 50,
        spent_cost: 0,
        exhausted: true,
      });
      expect((await h.readRecords()).map((r) => [r.path, r.status])).toEqual([["/root/first", "completed"]]);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  it(
    "a root with a UI (rpc mode) shows the tree in its status line and widget, and exits when its session ends",
    async () => {
      const h = await tree({
        scripts: {
          "/root": [
            reply.toolCall("spawn_agent", { task_name: "worker", fork_turns: "none", message: "Work, then report." }),
            reply.text("Started."),
          ],
          "/root/worker": [reply.toolCall("bash", { command: "sleep 3" }), reply.text("worker done")],
        },
      });
      const root = spawnChild(REAL_PI, ["--mode", "rpc", "-np", "-e", REPO_ROOT], {
        cwd: h.home.cwd,
        env: { ...h.home.env, PI_SUBAGENTS_DIR: h.baseDir, PI_SUBAGENTS_BUDGET_COST: "5" },
        stdio: ["pipe", "pipe", "pipe"],
        detached: true,
      });
      let exitCode: number | null | undefined;
      const exited = new Promise<void>((resolve) =>
        root.once("exit", (code) => {
          exitCode = code;
          resolve();
        }),
      );
      try {
        const rpc = rpcLines(root);
        root.stdin.write(`${JSON.stringify({ type: "prompt", message: "start a worker" })}\n`);
        const ui = (method: string, match: RegExp) => (line: Json) =>
          line.type === "extension_ui_request" &&
          line.method === method &&
          match.test(method === "setWidget" ? (line.widgetLines ?? []).join("\n") : (line.statusText ?? ""));
        const busy = await rpc.waitFor(ui("setWidget", /└─ worker \(\w+\) · running · fake\/fast · \d+s · bash/));
        expect(busy.widgetKey).toBe("pi-subagents");
        expect(busy.widgetLines[0]).toMatch(
          /^subagents · 1 agent: 1 running · \d+ tok total · \$0\.0000 \(budget \$5\.00\)$/,
        );
        await rpc.waitFor(ui("setStatus", /^agents: 1 running · /));
        // Once every agent has ended the widget folds away; the status line says how they ended.
        await rpc.waitFor(
          (line) =>
            line.type === "extension_ui_request" &&
            line.method === "setWidget" &&
            line.widgetLines === undefined &&
            rpc.lines.indexOf(line) > rpc.lines.indexOf(busy),
        );
        await rpc.waitFor(ui("setStatus", /^agents: 1 completed · 30 tok · \$0\.0000 \(budget \$5\.00\)$/));
      } finally {
        // Session over: the display's timer must not keep pi alive.
        root.stdin.end();
        const timer = setTimeout(() => signalGroup(root.pid, "SIGKILL"), 15_000);
        await exited;
        clearTimeout(timer);
      }
      expect(exitCode).toBe(0);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );
});
