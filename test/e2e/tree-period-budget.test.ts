/**
 * The person's daily budget across trees, end to end with the real pi and the scripted LLM:
 * two root sessions in one pi home (two trees) share the spending ledger in pi's agent dir;
 * once the first tree's agent has spent the day's budget, the second tree's spawn_agent is
 * refused with one line saying what was spent, the budget and when it resets. The roots' own
 * conversations are not the agents' spend: the ledger holds the child's requests only.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseLedger } from "../../src/contracts/budget-ledger.js";
import { ledgerDir } from "../../src/contracts/layout.js";
import { fakeModels } from "../support/pi-home.js";
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
const ROOT_RUN = { timeoutMs: 120_000 };

/** The fake models priced so one scripted request (10 input + 5 output tokens) costs 1.50 USD. */
function pricedModels(url: string): unknown {
  const models = fakeModels(url) as { providers: { fake: { models: Record<string, unknown>[] } } };
  for (const model of models.providers.fake.models) {
    model.cost = { input: 100_000, output: 100_000, cacheRead: 0, cacheWrite: 0 };
  }
  return models;
}

describe("period budgets across trees", () => {
  it(
    "once the first tree's agent spent the daily budget, the second tree's spawn is refused with spent, budget and reset",
    async () => {
      const root = new Program([
        // The first root session: its worker spends 2 requests × 1.50 USD, past the 2 USD day.
        spawn({ task_name: "worker", fork_turns: "none", message: "Look, then answer." }),
        waitForAll(["/root/worker"], 30_000),
        reply.text("ROOT ONE DONE"),
        // The second root session (a new tree): its spawn is refused.
        spawn({ task_name: "late", fork_turns: "none", message: "never runs" }),
        reply.text("ROOT TWO DONE"),
      ]);
      const h = await tree(
        {
          scripts: {
            "/root": root.steps(),
            "/root/worker": [reply.toolCall("bash", { command: "true" }), reply.text("worker done")],
          },
          extraSettings: { subagents: { budgets: { daily_usd: 2 } } },
        },
        pricedModels,
      );
      expectCleanExit(await h.runRoot("first", ROOT_RUN));
      expect(allNotices(h).find((n) => n.agent_name === "/root/worker")).toMatchObject({ type: "completed" });
      const ledger = ledgerDir(h.home.dir);
      const entries = fs
        .readdirSync(ledger)
        .flatMap((file) => parseLedger(fs.readFileSync(path.join(ledger, file), "utf8")));
      expect(entries.map((e) => e.usd)).toEqual([1.5, 1.5]);

      expectCleanExit(await h.runRoot("second", ROOT_RUN));
      expect(rootText(h, "spawn_agent", { task_name: "late" })).toMatch(
        /^daily budget spent: your agents have spent \$3\.00 today of the \$2\.00 daily budget \(settings subagents\.budgets\.daily_usd\); it resets at midnight, local time \(in [\d dhmin]+\); no new turns start$/,
      );
      expect(h.requestsOf("/root/late")).toEqual([]);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );
});
