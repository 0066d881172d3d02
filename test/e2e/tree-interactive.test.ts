/**
 * An interactive root (pi --mode rpc, where the extension has a UI) with the person at the
 * terminal: its children keep working between prompts; one that ends while the root is idle
 * wakes the root's model with its notice (PI_SUBAGENTS_WAKE=0: only shown); wait_agent gives
 * way to a message the person typed and reports Esc (RPC `abort`) as cancelled with counts;
 * /agents works through the extension UI protocol; and a root killed with children working
 * leaves them running and says so, with the commands to look, stop and re-attach.
 */
import { describe, expect, it } from "vitest";
import { ONE_LINE_IS_ENOUGH } from "../support/pi-home.js";
import { runProcess } from "../support/processes.js";
import type { RpcLine } from "../support/rpc-lines.js";
import { type RpcRoot, startRpcRoot } from "../support/rpc-root.js";
import { type ChatRequest, reply, userTexts } from "../support/scripted-llm.js";
import { expectNoSurvivors, type Json, noticesIn, toolResultFor, useTrees } from "../support/tree-harness-extra.js";
import { WRAPPER_BIN } from "../support/wrapper-harness.js";

const tree = useTrees();
const SCENARIO_MS = 120_000;

const isUi = (method: string) => (line: RpcLine) => line.type === "extension_ui_request" && line.method === method;
const count = (root: RpcRoot, match: (line: RpcLine) => boolean) => root.rpc.lines.filter(match).length;
/** The text of the tool result the root's model got for its (only) wait_agent call in `req`. */
const waitResult = (req: ChatRequest): Json => JSON.parse(toolResultFor(req, "wait_agent").at(-1)!) as Json;

describe("an interactive root", () => {
  it(
    "a child that ends while the root is idle wakes the root's model with its notice, which no later wait_agent returns again",
    async () => {
      const h = await tree({
        scripts: {
          "/root": [
            reply.toolCall("spawn_agent", {
              task_name: "worker",
              fork_turns: "none",
              message: "Take a second, then report.",
            }),
            reply.text("Started a worker; back to you."),
            reply.text("WOKEN: the worker finished"),
            reply.toolCall("wait_agent", { timeout_ms: 1000 }),
            reply.text("ROOT DONE"),
          ],
          "/root/worker": [reply.toolCall("bash", { command: "sleep 1" }), reply.text("worker finished its job")],
        },
      });
      const root = startRpcRoot(h);
      try {
        root.send({ type: "prompt", message: "start a worker" });
        await root.rpc.waitFor((line) => line.type === "agent_end");
        // The worker ends while the root is idle: its line is shown, then the model is woken.
        const shown = await root.rpc.waitFor((line) => isUi("notify")(line) && /\/root\/worker/.test(line.message));
        expect(shown.message).toBe("✓ /root/worker (Euclid) completed: worker finished its job");
        await root.rpc.waitFor((line) => line.type === "agent_end" && count(root, (l) => l.type === "agent_end") >= 2);
        const woken = h.requestsOf("/root")[2]!;
        const wake = userTexts(woken).at(-1)!;
        expect(wake).toMatch(/^While you were idle, your child agents sent these notices/);
        const sent = JSON.parse(wake.split("\n")[1]!) as Json;
        expect(sent.notices.map((n: Json) => [n.agent_name, n.type, n.report])).toEqual([
          ["/root/worker", "completed", "worker finished its job"],
        ]);
        expect(sent.pending).toBe(0);

        // Taken from the mailbox as it was sent: the next wait finds nothing pending.
        root.send({ type: "prompt", message: "anything else?" });
        await root.rpc.waitFor((line) => line.type === "agent_end" && count(root, (l) => l.type === "agent_end") >= 3);
        expect(waitResult(h.requestsOf("/root").at(-1)!)).toMatchObject({ notices: [], idle: true });
      } finally {
        await root.close();
      }
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  // Package bookkeeping, the same on either line: pi 1.x only in npm test (ONE_LINE_IS_ENOUGH).
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "with PI_SUBAGENTS_WAKE=0 an idle-time notice is only shown: no turn starts, and it stays in the mailbox",
    async () => {
      const h = await tree({
        scripts: {
          "/root": [
            reply.toolCall("spawn_agent", {
              task_name: "worker",
              fork_turns: "none",
              message: "Take a second, then report.",
            }),
            reply.text("Started a worker; back to you."),
            reply.toolCall("wait_agent", { timeout_ms: 1000 }),
            reply.text("ROOT DONE"),
          ],
          "/root/worker": [reply.toolCall("bash", { command: "sleep 3" }), reply.text("worker finished its job")],
        },
      });
      const root = startRpcRoot(h, { env: { PI_SUBAGENTS_WAKE: "0" } });
      const state = async (id: string) => {
        root.send({ id, type: "get_state" });
        return (await root.rpc.waitFor((line) => line.type === "response" && line.id === id)).data as Json;
      };
      try {
        root.send({ type: "prompt", message: "start a worker" });
        await root.rpc.waitFor((line) => line.type === "agent_end");
        expect(h.requestsOf("/root")).toHaveLength(2);
        const before = await state("before-notice");
        expect(count(root, isUi("notify"))).toBe(0); // the worker still sleeps
        const shown = await root.rpc.waitFor((line) => isUi("notify")(line) && /\/root\/worker/.test(line.message));
        expect(shown.message).toContain("completed");
        // Shown, not sent to the model: the session is idle, nothing is queued for it, and its
        // conversation holds what it held before the notice (pi 1.x counts a system message too).
        expect(await state("after-notice")).toMatchObject({
          isStreaming: false,
          pendingMessageCount: 0,
          messageCount: before.messageCount,
        });
        expect(h.requestsOf("/root")).toHaveLength(2);

        root.send({ type: "prompt", message: "collect the result" });
        await root.rpc.waitFor((line) => line.type === "agent_end" && count(root, (l) => l.type === "agent_end") >= 2);
        const notices = noticesIn(h.requestsOf("/root").at(-1)!);
        expect(notices.map((n) => [n.agent_name, n.type, n.report])).toEqual([
          ["/root/worker", "completed", "worker finished its job"],
        ]);
        expect(count(root, (line) => line.type === "agent_start")).toBe(2);
        expect(userTexts(h.requestsOf("/root").at(-1)!)).toEqual(["start a worker", "collect the result"]);
      } finally {
        await root.close();
      }
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  it(
    "wait_agent gives way to a message the person sends while it waits: user_message_pending, the children's counts, the message next",
    async () => {
      const h = await tree({
        scripts: {
          "/root": [
            reply.toolCall("spawn_agent", {
              task_name: "worker",
              fork_turns: "none",
              message: "Work a while, then report.",
            }),
            reply.toolCall("wait_agent", { timeout_ms: 60_000 }),
            reply.text("Here is where things stand."),
          ],
          "/root/worker": [reply.toolCall("bash", { command: "sleep 8" }), reply.text("worker done")],
        },
      });
      const root = startRpcRoot(h, { env: { PI_SUBAGENTS_WAKE: "0" } });
      try {
        root.send({ type: "prompt", message: "start a worker and wait" });
        await root.rpc.waitFor((line) => line.type === "tool_execution_start" && line.toolName === "wait_agent");
        const asked = Date.now();
        root.send({ type: "steer", message: "how is it going?" });
        await root.rpc.waitFor((line) => line.type === "agent_end");
        const answered = h.requestsOf("/root")[2]!;
        expect(waitResult(answered)).toEqual({
          notices: [],
          pending: 0,
          timed_out: false,
          user_message_pending: true,
          running: 1,
          queued: 0,
          timeout_ms: 60_000,
        });
        expect(userTexts(answered)).toEqual(["start a worker and wait", "how is it going?"]);
        // It gave way while the worker still ran (its bash sleeps 8 s), not when it ended.
        expect((await h.readRecords()).find((r) => r.path === "/root/worker")?.status).toBe("running");
        expect(Date.now() - asked).toBeLessThan(60_000);
      } finally {
        await root.close();
      }
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  it(
    "Esc (RPC abort) during wait_agent: cancelled with counts and a line pointing at /agents; /agents then interrupts one child and /agents stop the rest",
    async () => {
      const h = await tree({
        scripts: {
          "/root": [
            reply.toolCalls([
              { name: "spawn_agent", args: { task_name: "alpha", fork_turns: "none", message: "Work a long while." } },
              { name: "spawn_agent", args: { task_name: "beta", fork_turns: "none", message: "Work a long while." } },
            ]),
            reply.toolCall("wait_agent", { timeout_ms: 60_000 }),
          ],
          "/root/alpha": [reply.toolCall("bash", { command: "sleep 30" }), reply.text("alpha done")],
          "/root/beta": [reply.toolCall("bash", { command: "sleep 30" }), reply.text("beta done")],
        },
      });
      const root = startRpcRoot(h, { env: { PI_SUBAGENTS_WAKE: "0" } });
      try {
        root.send({ type: "prompt", message: "start two workers and wait" });
        await root.rpc.waitFor((line) => line.type === "tool_execution_start" && line.toolName === "wait_agent");
        root.send({ type: "abort" });
        const ended = await root.rpc.waitFor(
          (line) => line.type === "tool_execution_end" && line.toolName === "wait_agent",
        );
        expect(JSON.parse(ended.result.content[0].text)).toEqual({
          notices: [],
          pending: 0,
          timed_out: false,
          cancelled: true,
          running: 2,
          queued: 0,
          timeout_ms: 60_000,
        });
        const said = await root.rpc.waitFor((line) => isUi("notify")(line) && /cancelled/.test(line.message));
        expect(said).toMatchObject({
          message: "wait_agent cancelled: 2 running child agents keep working — /agents stop stops them",
          notifyType: "warning",
        });
        await root.rpc.waitFor((line) => line.type === "agent_end");

        // /agents: the tree, then one agent's details and actions, answered as an RPC client does.
        root.send({ type: "prompt", message: "/agents" });
        const list = await root.rpc.waitFor(isUi("select"));
        expect(list.title).toMatch(/^agents: 2 running · \d+ tok · \$0\.0000 — pick one to see it and act on it$/);
        expect(list.options).toEqual([
          expect.stringMatching(/^├─ alpha \(\w+\) · running · fake\/fast · /),
          expect.stringMatching(/^└─ beta \(\w+\) · running · fake\/fast · /),
          "stop every running and queued turn",
        ]);
        root.send({ type: "extension_ui_response", id: list.id, value: list.options[0] });
        const menu = await root.rpc.waitFor((line) => isUi("select")(line) && line.id !== list.id);
        expect(menu.options).toEqual(["follow up", "message", "interrupt", "close", "back"]);
        expect(menu.title).toMatch(/^alpha \(\w+\) · \/root\/alpha\nstatus {3}running · healthy · turn 1/);
        expect(menu.title).toMatch(
          /\nrun {6}\S+\/agents\/alpha\/runs\/0001-spawn\n {9}subagent-wrapper inspect \S+\/agents\/alpha\/runs\/0001-spawn\n/,
        );
        root.send({ type: "extension_ui_response", id: menu.id, value: "interrupt" });
        await root.rpc.waitFor((line) => isUi("notify")(line) && line.message === "/root/alpha: running → interrupted");
        // The notice line says who stopped it; the model's notice says the user did.
        const byYou = await root.rpc.waitFor(
          (line) => isUi("notify")(line) && /^\S+ \/root\/alpha .*interrupted/.test(line.message),
        );
        expect(byYou.message).toMatch(/^■ \/root\/alpha \(\w+\) interrupted: stopped by you$/);

        // The person messages a working child as send_message would: live, no new turn.
        root.send({ type: "prompt", message: "/agents /root/beta" });
        const betaMenu = await root.rpc.waitFor((line) => isUi("select")(line) && /\/root\/beta\n/.test(line.title));
        root.send({ type: "extension_ui_response", id: betaMenu.id, value: "message" });
        const input = await root.rpc.waitFor(isUi("input"));
        expect(input.title).toBe("Message to /root/beta");
        root.send({ type: "extension_ui_response", id: input.id, value: "also note the time" });
        const sent = await root.rpc.waitFor(
          (line) => isUi("notify")(line) && /^\/root\/beta: message/.test(line.message),
        );
        expect(sent.message).toBe("/root/beta: message sent; it reads it before its next model request");
        const beta = (await h.readRecords()).find((r) => r.path === "/root/beta")!;
        expect(beta.inbox).toEqual([expect.objectContaining({ kind: "MESSAGE", text: "also note the time" })]);

        root.send({ type: "prompt", message: "/agents stop" });
        const stopped = await root.rpc.waitFor((line) => isUi("notify")(line) && /^stopped /.test(line.message));
        expect(stopped.message).toBe("stopped 1 running (/root/beta): it is interrupted; follow it up to resume it");
        const records = await h.readRecords();
        expect(records.map((r) => [r.path, r.status])).toEqual([
          ["/root/alpha", "interrupted"],
          ["/root/beta", "interrupted"],
        ]);
        // The model was not asked about any of it.
        expect(h.requestsOf("/root")).toHaveLength(2);
      } finally {
        await root.close();
      }
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  it(
    "SIGTERM with children working: they go on (the root is dying); the last frame and the terminal say so, with the commands to look, stop and re-attach",
    async () => {
      const h = await tree({
        scripts: {
          "/root": [
            reply.toolCalls([
              { name: "spawn_agent", args: { task_name: "alpha", fork_turns: "none", message: "Work a long while." } },
              { name: "spawn_agent", args: { task_name: "beta", fork_turns: "none", message: "Work a long while." } },
            ]),
            reply.text("Started two workers."),
          ],
          "/root/alpha": [reply.toolCall("bash", { command: "sleep 30" }), reply.text("alpha done")],
          "/root/beta": [reply.toolCall("bash", { command: "sleep 30" }), reply.text("beta done")],
        },
      });
      const root = startRpcRoot(h);
      root.send({ type: "prompt", message: "start two workers" });
      await root.rpc.waitFor((line) => line.type === "agent_end");
      await root.rpc.waitFor((line) => isUi("setStatus")(line) && /^agents: 2 running/.test(line.statusText ?? ""));
      const code = await root.kill("SIGTERM");
      expect(code).toBe(143);
      const lines = root.stderr().trim().split("\n").slice(-5);
      expect(lines[0]).toBe("pi-subagent-tree: left 2 running agents (/root/alpha, /root/beta).");
      expect(lines[1]).toMatch(/^ {2}the 2 running go on to their own end, each bounded by its turn time limit/);
      expect(lines[2]).toBe(`  look:      subagent-wrapper inspect ${h.treeDir()}`);
      expect(lines[3]).toBe(`  stop:      subagent-wrapper stop ${h.treeDir()}`);
      expect(lines[4]).toMatch(/^ {2}re-attach: pi --session \S+\.jsonl {2}\(or pi -c in this folder\)/);
      // The last frame: the widget gone, the status saying they are left running.
      const status = root.rpc.lines.filter(isUi("setStatus")).at(-1)!;
      expect(status.statusText).toBe("agents: leaving 2 running (pi is exiting; they go on, pi -c takes them back)");
      expect(root.rpc.lines.filter(isUi("setWidget")).at(-1)!.widgetLines).toBeUndefined();
      expect((await h.readRecords()).map((r) => r.status)).toEqual(["running", "running"]);
      // They run on until stopped by the command the lines give.
      const stopped = await runProcess(process.execPath, [WRAPPER_BIN, "stop", h.treeDir()], { timeoutMs: 40_000 });
      expect(stopped.code, stopped.stderr).toBe(0);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );
});
