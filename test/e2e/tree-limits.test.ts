/**
 * Limits through the tree, end to end with the real pi and the scripted LLM: spawn_agent's
 * `limits` reach the child's wrapper; at the limit the child's next request carries the
 * wrap-up, and the parent's notice carries `limit`, so a wrapped-up turn is never taken for
 * finished work; a bad `limits` is a spawn error naming the key.
 */
import { describe, expect, it } from "vitest";
import { reply, userTexts } from "../support/scripted-llm.js";
import {
  allNotices,
  expectCleanExit,
  expectNoSurvivors,
  Program,
  rootText,
  spawn,
  useTrees,
  waitForAll,
} from "../support/tree-harness-extra.js";

const tree = useTrees();
const SCENARIO_MS = 150_000;
const ROOT_RUN = { timeoutMs: 120_000 };

describe("limits in a tree", () => {
  it(
    "a child past max_turns is told to wrap up in its next request; its answer's notice is completed with limit",
    async () => {
      const root = new Program([
        spawn({ task_name: "worker", fork_turns: "none", message: "Count the files.", limits: { max_turns: 1 } }),
        waitForAll(["/root/worker"], 30_000),
        reply.text("ROOT DONE"),
      ]);
      const h = await tree({
        scripts: {
          "/root": root.steps(),
          "/root/worker": [
            reply.toolCall("bash", { command: "sleep 1; ls | wc -l" }, { text: "counting" }),
            reply.text("Done: counted. Left: nothing. Files: unchanged."),
          ],
        },
      });
      expectCleanExit(await h.runRoot("go", ROOT_RUN));
      const child = h.requestsOf("/root/worker");
      expect(child).toHaveLength(2);
      expect(userTexts(child[1]!).at(-1)).toMatch(/^\[LIMIT max_turns\] This turn has reached its limit: 1 of 1/);
      const notice = allNotices(h).find((n) => n.agent_name === "/root/worker");
      expect(notice).toMatchObject({
        type: "completed",
        limit: { name: "max_turns", value: 1, used: 1 },
        report: "Done: counted. Left: nothing. Files: unchanged.",
      });
      const [record] = await h.readRecords();
      expect(record!.limits).toEqual({ max_turns: 1 });
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  it(
    "a bad limits object is a spawn error naming each key; nothing is spawned",
    async () => {
      const root = new Program([
        spawn({ task_name: "worker", fork_turns: "none", message: "x", limits: { max_turns: 0, speed: 2 } }),
        reply.text("ROOT DONE"),
      ]);
      const h = await tree({ scripts: { "/root": root.steps() } });
      expectCleanExit(await h.runRoot("go", ROOT_RUN));
      const text = rootText(h, "spawn_agent");
      expect(text).toContain("limits.max_turns must be a positive whole number, not 0");
      expect(text).toContain('limits: unknown key "speed"');
      // Refused before anything was made: not even the tree directory (the first spawn makes it).
      expect(() => h.treeDir()).toThrow(/found 0/);
    },
    SCENARIO_MS,
  );
});
