/**
 * A follow-up sent to a child whose turn is still queued joins that turn: the child runs
 * once, with its task and the follow-up in order, and its parent gets one notice — no second,
 * empty turn after it (which would cost tokens and repeat the notice).
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Notice } from "../../src/contracts/notice.js";
import { followupTaskTool } from "../../src/extension/tools/followup-task.js";
import { killAll } from "../support/processes.js";
import { killLeftovers, runtimeCase, settleLeftovers } from "./support.js";

afterEach(async () => {
  await killAll();
  await killLeftovers();
});

describe("a follow-up to a queued child", () => {
  it("joins the queued turn: 1 run, 1 notice, the task then the follow-up", async () => {
    const rc = await runtimeCase({ steps: [{ sleep: 300 }, { echoTask: true }] });
    try {
      const states = ["a", "b", "c", "d"].map((name) => rc.child(name, `job ${name}`));
      for (const state of states) await rc.runtime.requestTurn(state, "spawn");
      expect(rc.runtime.queuePosition("/root/d")).toBe(1);
      // The queue is published in the tree directory, for list_agents in other processes.
      await vi.waitFor(async () => expect(await rc.tree.readQueue("/root")).toEqual(["/root/d"]));

      const followup = followupTaskTool({ pi: {} as ExtensionAPI, runtime: () => rc.runtime });
      const result = await followup.execute(
        "call-1",
        { target: "d", message: "also check the tests" },
        undefined,
        undefined,
        {} as never,
      );
      expect(result.details).toMatchObject({
        agent_name: "/root/d",
        queued_behind_running_turn: true,
        queue_position: 1,
      });

      const notices: Notice[] = [];
      await vi.waitFor(
        () => {
          notices.push(...rc.runtime.mailbox.take(5));
          expect(notices.filter((n) => n.agent_name === "/root/d")).toHaveLength(1);
          expect(rc.runtime.hasActiveTurns()).toBe(false);
        },
        { timeout: 30_000, interval: 50 },
      );
      // Give a wrongly requested extra turn the time to start and report.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      notices.push(...rc.runtime.mailbox.take(5));
      expect(rc.runtime.hasActiveTurns()).toBe(false);

      const d = rc.runtime.children.get("/root/d")!.record;
      expect(notices.filter((n) => n.agent_name === "/root/d")).toHaveLength(1);
      expect(notices).toHaveLength(4);
      // Leaves: subtree_usage would only repeat usage, so notices leave it out.
      for (const notice of notices) expect(notice.subtree_usage).toBeUndefined();
      expect(d.runs).toHaveLength(1);
      expect(await rc.tree.readQueue("/root")).toEqual([]);
      expect(d.followupQueued).toBe(false);
      const meta = JSON.parse(
        await readFile(path.join(rc.tree.agentDir("/root/d"), "runs", d.runs[0]!, "meta.json"), "utf8"),
      ) as { task: string };
      expect(meta.task.indexOf("job d")).toBeGreaterThanOrEqual(0);
      expect(meta.task.indexOf("also check the tests")).toBeGreaterThan(meta.task.indexOf("job d"));
      expect(await settleLeftovers()).toEqual([]);
    } finally {
      await rc.dispose();
    }
  });
});
