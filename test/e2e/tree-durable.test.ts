/**
 * Durable children, against the real pi with scripted models: a root killed with
 * SIGTERM, SIGHUP or SIGKILL while its children run takes no work with it — the children
 * finish on their own; a root started again on the session (`pi -c`) takes the tree back at
 * once (re-attached while they still run, or finding their ends), and each child's notice
 * reaches its model exactly once; a second restart gives none; no process is left.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ONE_LINE_IS_ENOUGH } from "../support/pi-home.js";
import { runProcess } from "../support/processes.js";
import type { RpcLine } from "../support/rpc-lines.js";
import { type RpcRoot, startRpcRoot } from "../support/rpc-root.js";
import { type ChatRequest, reply, userTexts } from "../support/scripted-llm.js";
import type { TreeHarness } from "../support/tree-harness.js";
import { expectNoSurvivors, type Json, toolResultFor, useTrees } from "../support/tree-harness-extra.js";
import { WRAPPER_BIN } from "../support/wrapper-harness.js";

const tree = useTrees();
const SCENARIO_MS = 150_000;

const isUi = (method: string) => (line: RpcLine) => line.type === "extension_ui_request" && line.method === method;
const agentEnds = (root: RpcRoot) => root.rpc.lines.filter((line) => line.type === "agent_end").length;

/** Every child notice the root's model read in `req`'s conversation: wakes and wait_agent results. */
function noticesRead(req: ChatRequest): string[] {
  const read: string[] = [];
  for (const text of userTexts(req)) {
    if (!text.startsWith("While you were idle")) continue;
    for (const notice of (JSON.parse(text.split("\n")[1]!) as Json).notices) read.push(notice.agent_name);
  }
  for (const result of toolResultFor(req, "wait_agent"))
    for (const notice of (JSON.parse(result) as Json).notices ?? []) read.push(notice.agent_name);
  return read.sort();
}

describe("durable children: the root dies, its children do not (real pi)", () => {
  it.each([
    ["SIGTERM", "restarted while they still run: re-attached"],
    ["SIGKILL", "restarted while they still run: re-attached"],
    ["SIGHUP", "restarted after they ended: their ends found"],
  ] as const)(
    "%s while two children run → they finish; %s; each notice read once; a second restart reads none; nothing left",
    async (signal, when) => {
      const reattach = when.includes("re-attached");
      // The children's answers wait for this: past the restarted root's start when it is to
      // find them still at work, at once otherwise.
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      if (!reattach) release();
      const h = await tree({
        scripts: {
          "/root": [
            reply.toolCalls([
              { name: "spawn_agent", args: { task_name: "alpha", fork_turns: "none", message: "Work a while." } },
              { name: "spawn_agent", args: { task_name: "beta", fork_turns: "none", message: "Work a while." } },
            ]),
            reply.text("Started two workers."),
            // The second process: woken by the two notices (or by one, then the other).
            reply.text("WOKEN"),
            reply.text("WOKEN AGAIN"),
          ],
          "/root/alpha": [reply.toolCall("bash", { command: "sleep 1" }), reply.text("alpha done", { waitFor: gate })],
          "/root/beta": [reply.toolCall("bash", { command: "sleep 1" }), reply.text("beta done", { waitFor: gate })],
        },
      });
      const first = startRpcRoot(h);
      first.send({ type: "prompt", message: "start two workers" });
      await first.rpc.waitFor((line) => line.type === "agent_end");
      await first.rpc.waitFor((line) => isUi("setStatus")(line) && /^agents: 2 running/.test(line.statusText ?? ""));
      await first.kill(signal);
      expect((await h.readRecords()).map((r) => r.status)).toEqual(["running", "running"]);
      if (signal !== "SIGKILL") {
        const said = first.stderr();
        expect(said).toContain("pi-subagent-tree: left 2 running agents (/root/alpha, /root/beta).");
        expect(said).toContain(`  stop:      subagent-wrapper stop ${h.treeDir()}`);
        expect(said).toMatch(/ {2}re-attach: pi --session \S+\.jsonl/);
      }

      if (!reattach) {
        // Both finish while no root is there: their records say running until a root comes
        // back; their result.json say how they ended.
        await waitForResults(h, 2);
      }

      const started = Date.now();
      const second = startRpcRoot(h, { args: ["-c"] });
      // The tree is taken back at once: a prompt-free session reports the state.
      second.send({ type: "get_state" });
      await second.rpc.waitFor((line) => line.type === "response");
      const readyMs = Date.now() - started;
      // Re-attached: they were still at work when the restarted root was ready.
      if (reattach) expect(await resultsWritten(h)).toEqual([]);
      if (reattach) {
        await second.rpc.waitFor((line) => isUi("setStatus")(line) && /^agents: 2 running/.test(line.statusText ?? ""));
        release();
      }
      // The notices wake the idle root: once both are read, the model has them.
      await second.rpc.waitFor(() => {
        const last = h.requestsOf("/root").at(-1);
        return last !== undefined && noticesRead(last).length >= 2;
      }, 90_000);
      await second.rpc.waitFor(() => agentEnds(second) >= 1);
      expect(noticesRead(h.requestsOf("/root").at(-1)!)).toEqual(["/root/alpha", "/root/beta"]);
      expect((await h.readRecords()).map((r) => [r.path, r.status])).toEqual([
        ["/root/alpha", "completed"],
        ["/root/beta", "completed"],
      ]);
      await second.close();

      // A second restart: nothing more to read.
      const requestsBefore = h.requestsOf("/root").length;
      const third = startRpcRoot(h, { args: ["-c"] });
      third.send({ type: "get_state" });
      await third.rpc.waitFor((line) => line.type === "response");
      await new Promise((r) => setTimeout(r, 1500));
      expect(h.requestsOf("/root").length).toBe(requestsBefore);
      await third.close();
      console.log(`[durable] ${signal}: the restarted root answered after ${readyMs} ms`);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );
});

/** The children whose run has written its result.json. */
async function resultsWritten(h: TreeHarness): Promise<string[]> {
  return ["alpha", "beta"].filter((name) => {
    const runs = path.join(h.treeDir(), "agents", name, "runs");
    return (
      fs.existsSync(runs) && fs.readdirSync(runs).some((run) => fs.existsSync(path.join(runs, run, "result.json")))
    );
  });
}

async function waitForResults(h: TreeHarness, count: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  while ((await resultsWritten(h)).length < count && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 200));
}

/** How many times the root's session holds the notices of `agent` (wake messages and wait_agent results). */
function noticesInSession(h: TreeHarness, agent: string): number {
  let count = 0;
  const walk = (dir: string): string[] =>
    fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const sub = path.join(dir, entry.name);
      return entry.isDirectory() ? walk(sub) : entry.name.endsWith(".jsonl") ? [sub] : [];
    });
  for (const file of walk(path.join(h.home.dir, "sessions")))
    for (const line of fs.readFileSync(file, "utf8").split("\n").filter(Boolean)) {
      const entry = JSON.parse(line) as Json;
      const details = entry.details ?? entry.message?.details;
      for (const notice of details?.notices ?? []) if (notice.agent_name === agent) count++;
    }
  return count;
}

describe("exactly once: the root killed at each step of a notice's delivery (real pi)", () => {
  // PI_SUBAGENTS_TEST_KILL_AT makes the root SIGKILL itself at that step (ui/durable-exit.ts).
  // The steps before pi holds the notice are this package's own bookkeeping, the same on either
  // line; "taking" and "taken" depend on when pi says it holds a message: npm test runs those
  // two on pi 0.73.1 and all five on pi 1.x (ONE_LINE_IS_ENOUGH).
  const steps = ONE_LINE_IS_ENOUGH
    ? (["taking", "taken"] as const)
    : (["end_recorded", "given", "pushed", "taking", "taken"] as const);
  it.each(steps)(
    "killed at %s: the notice reaches the root's session once (a restart gives it when pi never held it, never after), and none is left to give",
    async (step) => {
      const h = await tree({
        scripts: {
          "/root": [
            reply.toolCall("spawn_agent", { task_name: "worker", fork_turns: "none", message: "Report." }),
            reply.text("Started a worker."),
            reply.text("WOKEN"),
            reply.text("WOKEN AGAIN"),
          ],
          "/root/worker": [reply.toolCall("bash", { command: "sleep 1" }), reply.text("worker done")],
        },
      });
      const first = startRpcRoot(h, { env: { PI_SUBAGENTS_TEST_KILL_AT: step } });
      first.send({ type: "prompt", message: "start a worker" });
      await first.rpc.waitFor((line) => line.type === "agent_end");
      // The worker ends while the root is idle: its notice is delivered, then wakes the root.
      const killed = await Promise.race([first.exited, new Promise((r) => setTimeout(() => r("alive"), 60_000))]);
      expect(killed).not.toBe("alive");
      // taking, taken: pi held the wake message (its session has it) before the root was killed.
      const heldBefore = step === "taking" || step === "taken";
      expect(noticesInSession(h, "/root/worker")).toBe(heldBefore ? 1 : 0);
      const requestsBefore = h.requestsOf("/root").length;

      const second = startRpcRoot(h, { args: ["-c"] });
      second.send({ type: "get_state" });
      await second.rpc.waitFor((line) => line.type === "response");
      if (!heldBefore) {
        await second.rpc.waitFor(() => agentEnds(second) >= 1, 60_000);
        expect(noticesRead(h.requestsOf("/root").at(-1)!)).toEqual(["/root/worker"]);
      } else {
        // Its session holds it: not given again (the wake would have asked the model by now).
        await new Promise((r) => setTimeout(r, 2000));
        expect(h.requestsOf("/root").length).toBe(requestsBefore);
      }
      expect(noticesInSession(h, "/root/worker")).toBe(1);
      const records = await h.readRecords();
      expect(records.map((r) => [r.path, r.status, r.notifiedRun])).toEqual([
        ["/root/worker", "completed", "0001-spawn"],
      ]);
      await second.close();

      // Nothing is left to give: the delivery record holds the one notice, taken (a second
      // restart giving none is the signal cases' to show).
      const given = JSON.parse(fs.readFileSync(path.join(h.treeDir(), "deliveries.json"), "utf8")).given;
      expect(given).toEqual([{ key: "/root/worker#0001-spawn", taken: true }]);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );
});

describe("a print-mode root that ends with children working (real pi)", () => {
  const scripts = {
    "/root": [
      reply.toolCall("spawn_agent", { task_name: "worker", fork_turns: "none", message: "Work a long while." }),
      reply.text("ROOT DONE without waiting"),
    ],
    "/root/worker": [reply.toolCall("bash", { command: "sleep 30" }), reply.text("worker done")],
  };

  it(
    "stops them by default (onExit stop in print mode) and says so on stderr",
    async () => {
      const h = await tree({ scripts });
      const run = await h.runRoot("start a worker and finish");
      expect(run.code, run.stderr.slice(-2000)).toBe(0);
      expect(run.stderr).toContain(
        "pi-subagent-tree: stopped 1 running agent (/root/worker); it is interrupted, not lost.",
      );
      expect((await h.readRecords()).map((r) => r.status)).toEqual(["interrupted"]);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  it(
    "PI_SUBAGENTS_ON_EXIT=detach leaves them running, says what bounds them and how to stop them; stop ends them interrupted",
    async () => {
      const h = await tree({ scripts });
      const run = await h.runRoot("start a worker and finish", { env: { PI_SUBAGENTS_ON_EXIT: "detach" } });
      expect(run.code, run.stderr.slice(-2000)).toBe(0);
      expect(run.stderr).toContain("pi-subagent-tree: left 1 running agent (/root/worker).");
      expect(run.stderr).toContain(
        "the running one goes on to its own end, each bounded by its turn time limit (30 min)",
      );
      expect(run.stderr).toContain(`  stop:      subagent-wrapper stop ${h.treeDir()}`);
      expect((await h.readRecords()).map((r) => r.status)).toEqual(["running"]);
      const stopped = await runProcess(process.execPath, [WRAPPER_BIN, "stop", h.treeDir()], { timeoutMs: 40_000 });
      expect(stopped.code, stopped.stderr).toBe(0);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );
});
