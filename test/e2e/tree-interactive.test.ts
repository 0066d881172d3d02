/**
 * An interactive root (pi --mode rpc, where the extension has a UI) stays alive between the
 * user's prompts: its children keep working, and a notice that arrives while it is idle is
 * shown to the user without starting a turn; it stays in the mailbox for the next wait_agent.
 */
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { signalGroup } from "../../src/wrapper/child.js";
import { PI_LINE_NAME, REAL_PI, REPO_ROOT } from "../support/pi-home.js";
import { rpcLines } from "../support/rpc-lines.js";
import { reply, userTexts } from "../support/scripted-llm.js";
import { expectNoSurvivors, noticesIn, useTrees } from "../support/tree-harness-extra.js";

const tree = useTrees();

describe("an interactive root", () => {
  it("keeps its children working between prompts and shows an idle-time notice to the user without starting a turn", async () => {
    const h = await tree({
      scripts: {
        "/root": [
          reply.toolCall("spawn_agent", { task_name: "worker", fork_turns: "none", message: "Take a second, then report." }),
          reply.text("Started a worker; back to you."),
          reply.toolCall("wait_agent", { timeout_ms: 1000 }),
          reply.text("ROOT DONE"),
        ],
        "/root/worker": [reply.toolCall("bash", { command: "sleep 1" }), reply.text("worker finished its job")],
      },
    });
    const root = spawn(REAL_PI, ["--mode", "rpc", "-np", "-e", REPO_ROOT], {
      cwd: h.home.cwd,
      env: { ...h.home.env, PI_SUBAGENTS_DIR: h.baseDir },
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
    });
    try {
      const rpc = rpcLines(root);
      root.stdin.write(`${JSON.stringify({ type: "prompt", message: "start a worker" })}\n`);
      await rpc.waitFor((line) => line.type === "agent_end");
      expect(h.requestsOf("/root")).toHaveLength(2);

      const shown = await rpc.waitFor((line) => line.type === "extension_ui_request" && line.method === "notify");
      expect(shown.message).toContain("/root/worker");
      expect(shown.message).toContain("completed");
      expect(shown.message).toContain("worker finished its job");
      // Shown, not sent to the model: the session is idle, nothing is queued for it, and its
      // conversation still holds the first prompt's four messages (user, tool call, tool
      // result, answer; pi 1.x counts its system message too) — a notice sent to the model
      // would be one more.
      root.stdin.write(`${JSON.stringify({ id: "after-notice", type: "get_state" })}\n`);
      const state = await rpc.waitFor((line) => line.type === "response" && line.id === "after-notice");
      const systemMessages = PI_LINE_NAME === "current" ? 1 : 0;
      expect(state.data).toMatchObject({ isStreaming: false, pendingMessageCount: 0, messageCount: 4 + systemMessages });
      expect(h.requestsOf("/root")).toHaveLength(2);

      root.stdin.write(`${JSON.stringify({ type: "prompt", message: "collect the result" })}\n`);
      await rpc.waitFor((line) => line.type === "agent_end" && rpc.lines.filter((l) => l.type === "agent_end").length >= 2);
      const notices = noticesIn(h.requestsOf("/root").at(-1)!);
      expect(notices.map((n) => [n.agent_name, n.type, n.report])).toEqual([["/root/worker", "completed", "worker finished its job"]]);
      // One turn per prompt and nothing in between: the notice started no turn of its own.
      expect(rpc.lines.filter((line) => line.type === "agent_start")).toHaveLength(2);
      expect(userTexts(h.requestsOf("/root").at(-1)!)).toEqual(["start a worker", "collect the result"]);
    } finally {
      root.stdin.end();
      await new Promise((resolve) => {
        const timer = setTimeout(() => signalGroup(root.pid, "SIGKILL"), 10_000);
        root.once("exit", () => resolve(clearTimeout(timer)));
      });
    }
    await expectNoSurvivors(h);
  }, 120_000);
});
