/**
 * Limits through the tree, end to end with the real pi and the scripted LLM: spawn_agent's
 * `limits` reach the child's wrapper; at the limit the child's next request carries the
 * wrap-up, and the parent's notice carries `limit`, so a wrapped-up turn is never taken for
 * finished work; a bad `limits` is a spawn error naming the key; the tree's budget wraps up
 * every running turn once the tree's total crosses it.
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ONE_LINE_IS_ENOUGH } from "../support/pi-home.js";
import { type ChatRequest, reply, userTexts } from "../support/scripted-llm.js";
import {
  allNotices,
  expectCleanExit,
  expectNoSurvivors,
  Program,
  readJsonl,
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

  // Package bookkeeping, the same on either line: pi 1.x only in npm test (ONE_LINE_IS_ENOUGH).
  it.skipIf(ONE_LINE_IS_ENOUGH)(
    "three turns side by side: once the tree's total crosses its budget every one is wrapped up, each over by at most the request it had under way",
    async () => {
      const BUDGET = 100;
      const SPEND = { prompt_tokens: 25, completion_tokens: 5, total_tokens: 30 }; // each request
      const workers = ["a", "b", "c"];
      // Each starts knowing the whole budget is left: no request is answered until all three asked.
      const asked = new Set<string>();
      let allAsked!: () => void;
      const allStarted = new Promise<void>((resolve) => {
        allAsked = resolve;
      });
      const worker = (name: string) => (req: ChatRequest) => {
        if (userTexts(req).some((text) => text.startsWith("[LIMIT tree_budget_tokens]"))) {
          return reply.text(`${name}: done so far, the rest is left`, { usage: SPEND });
        }
        asked.add(name);
        if (asked.size === workers.length) allAsked();
        return reply.toolCall("bash", { command: "true" }, { usage: SPEND, waitFor: allStarted });
      };
      const root = new Program([
        reply.toolCalls(
          workers.map((name) => ({
            name: "spawn_agent",
            args: { task_name: name, fork_turns: "none", message: "Work until told to stop." },
          })),
        ),
        waitForAll(
          workers.map((name) => `/root/${name}`),
          60_000,
        ),
        reply.text("ROOT DONE"),
      ]);
      const h = await tree({
        env: { PI_SUBAGENTS_BUDGET_TOKENS: String(BUDGET) },
        scripts: {
          "/root": root.steps(),
          ...Object.fromEntries(
            workers.map((name) => [`/root/${name}`, Array.from({ length: 30 }, () => worker(name))]),
          ),
        },
      });
      expectCleanExit(await h.runRoot("go", ROOT_RUN));
      const notices = allNotices(h);
      // What each turn had spent when it was told to wrap up: its requests up to the wrap-up.
      let spentWhenTold = 0;
      for (const name of workers) {
        expect(notices.find((n) => n.agent_name === `/root/${name}`)).toMatchObject({
          type: "completed",
          limit: { name: "tree_budget_tokens", value: BUDGET },
          report: `${name}: done so far, the rest is left`,
        });
        const events = readJsonl(path.join(h.treeDir(), "agents", name, "runs", "0001-spawn", "events.jsonl"));
        const told = events.findIndex((e) => e.type === "limit" && e.phase === "reached");
        expect(told).toBeGreaterThan(0);
        for (const e of events.slice(0, told)) if (e.type === "assistant_text") spentWhenTold += e.usage.totalTokens;
      }
      // Before the crossing the tree spent under the budget (three requests at most); after it,
      // each turn ends at most the one request it had under way before it is told. Each turn
      // alone held to what was left for it would have gone on to 4 requests: 360 tokens.
      expect(spentWhenTold).toBeGreaterThanOrEqual(BUDGET);
      expect(spentWhenTold).toBeLessThanOrEqual(BUDGET - 1 + workers.length * SPEND.total_tokens);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  // Package bookkeeping, the same on either line: pi 1.x only in npm test (ONE_LINE_IS_ENOUGH).
  it.skipIf(ONE_LINE_IS_ENOUGH)(
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
