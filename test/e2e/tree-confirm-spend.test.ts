/**
 * Settings `confirm_every_usd`, end to end with the real pi and the scripted LLM (one request
 * of a child costs 1.50 USD, the step is 1 USD):
 * - an RPC root (a person): once the child's first request crosses the step, the RPC client
 *   gets pi's confirm dialog saying what was spent; it answers no, the running child is wrapped
 *   up (its next request carries the wrap-up) and the root's next spawn is refused with one line;
 * - a json root (nobody to ask): the step is a budget — the child is wrapped up once it crosses
 *   it, and the next spawn is refused saying no person can be asked.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { fakeModels } from "../support/pi-home.js";
import { startRpcRoot } from "../support/rpc-root.js";
import { reply } from "../support/scripted-llm.js";
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

/** The fake models priced so one scripted request (10 input + 5 output tokens) costs 1.50 USD. */
function pricedModels(url: string): unknown {
  const models = fakeModels(url) as { providers: { fake: { models: Record<string, unknown>[] } } };
  for (const model of models.providers.fake.models) {
    model.cost = { input: 100_000, output: 100_000, cacheRead: 0, cacheWrite: 0 };
  }
  return models;
}

const settings = { subagents: { confirm_every_usd: 1 } };

/** The root: a worker that spends, then (once it is done) a second spawn. */
const rootProgram = () =>
  new Program([
    spawn({ task_name: "worker", fork_turns: "none", message: "Look, then answer." }),
    waitForAll(["/root/worker"], 60_000),
    spawn({ task_name: "late", fork_turns: "none", message: "never runs" }),
    reply.text("ROOT DONE"),
  ]);

/**
 * The worker's bash runs until the person has said no and its wrapper has seen it: the wrap-up
 * recorded in the run's events (a condition, not a duration). Then it stays a moment more: the
 * child's inbox feeder takes the wrap-up only while this tool call is under way, and it looks
 * at the inbox on a change or every 250 ms — a tool that ended at once could end the window first.
 */
const WAIT_FOR_WRAP_UP =
  'e="$PI_SUBAGENTS_TREE_DIR/agents/worker/runs/0001-spawn/events.jsonl"; for i in $(seq 1 1200); do grep -q \'"phase":"reached"\' "$e" 2>/dev/null && break; sleep 0.05; done; sleep 1.5; echo looked';

function wrappedUp(h: Awaited<ReturnType<typeof tree>>): void {
  // The worker's second request carries the wrap-up, and its turn ends with the limit named.
  expect(JSON.stringify(h.requestsOf("/root/worker").at(-1))).toContain("[LIMIT tree_budget_cost]");
  expect(allNotices(h).find((n) => n.agent_name === "/root/worker")).toMatchObject({
    type: "completed",
    limit: { name: "tree_budget_cost", value: 1 },
  });
  expect(h.requestsOf("/root/late")).toEqual([]);
}

describe("confirm_every_usd", () => {
  it(
    "RPC root: the person is asked when the tree crosses the step; no wraps the running worker up and refuses the next spawn",
    async () => {
      const h = await tree(
        {
          scripts: {
            "/root": rootProgram().steps(),
            "/root/worker": [reply.toolCall("bash", { command: WAIT_FOR_WRAP_UP }), reply.text("wrapped up")],
          },
          extraSettings: settings,
        },
        pricedModels,
      );
      const rpc = startRpcRoot(h);
      try {
        rpc.send({ type: "prompt", message: "go" });
        const ask = await rpc.rpc.waitFor(
          (line) => line.type === "extension_ui_request" && line.method === "confirm",
          60_000,
        );
        expect(ask.title).toBe("pi-subagent-tree: this tree's agents have spent $1.50 — let them spend up to $2.00?");
        expect(ask.message).toMatch(/^confirm_every_usd is \$1\.00: .* No: every running turn wraps up/);
        rpc.send({ type: "extension_ui_response", id: ask.id, confirmed: false });
        await rpc.rpc.waitFor((line) => line.type === "agent_end", 90_000);
      } finally {
        await rpc.close();
      }
      wrappedUp(h);
      expect(rootText(h, "spawn_agent", { task_name: "late" })).toBe(
        "tree spending stopped: this tree's agents have spent $1.50 and the person chose not to spend more (confirm_every_usd: $1.00); no new turns start",
      );
      const gate = JSON.parse(fs.readFileSync(path.join(h.treeDir(), "spend-gate.json"), "utf8")) as unknown;
      expect(gate).toMatchObject({ every_usd: 1, ceiling_usd: 1, person: true, declined: { by: "no" } });
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );

  it(
    "json root: nobody to ask, so the step is a budget — the worker is wrapped up past it and the next spawn refused",
    async () => {
      const h = await tree(
        {
          scripts: {
            "/root": rootProgram().steps(),
            "/root/worker": [reply.toolCall("bash", { command: "true" }), reply.text("wrapped up")],
          },
          extraSettings: settings,
        },
        pricedModels,
      );
      expectCleanExit(await h.runRoot("go", { timeoutMs: 120_000 }));
      wrappedUp(h);
      expect(rootText(h, "spawn_agent", { task_name: "late" })).toBe(
        "tree spending stopped: this tree's agents have spent $3.00, the $1.00 that confirm_every_usd lets a tree spend before a person says yes, and this tree has no person to ask; no new turns start",
      );
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );
});
