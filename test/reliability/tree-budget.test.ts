/**
 * Area 9 — the tree's budget holds for the tree. Three wrappers run at once (the fake pi with
 * the wrapper's real task extension), each told the whole budget is left and sharing the
 * tree's budget board. Each spends under the budget alone, together over it, then sits in a
 * tool call: every one must be told to wrap up (the wrap-up steered into its pi) and end
 * `completed` with `limit`, none having made another request first, and no process left.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { killAll } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, wrapperCase } from "../support/wrapper-harness.js";
import { killLeftovers, LOAD_TASK_EXTENSION, settleLeftovers } from "./support.js";

const boards: string[] = [];
afterEach(async () => {
  await killAll();
  await killLeftovers();
  await cleanupWrapperCases();
  for (const dir of boards.splice(0)) await rm(dir, { recursive: true, force: true });
});

const TURNS = 3;
const LEFT = 100;
/** Each turn's one request: 40 tokens. Alone under the budget; three of them cross it. */
const REQUEST = { input: 35, output: 5 };

describe(`area 9: ${TURNS} turns side by side under one tree budget`, () => {
  it(`each spends under it alone, ${TURNS * 40} together: all ${TURNS} are wrapped up before another request, 0 processes left`, async () => {
    const board = await mkdtemp(path.join(os.tmpdir(), "budget-board-reliability-"));
    boards.push(board);
    const steps = [
      { agentStart: true },
      { turnStart: true },
      { user: true },
      {
        assistant: {
          text: "working",
          toolCalls: [{ id: "c1", name: "bash", arguments: { command: "true" } }],
          stopReason: "toolUse",
          usage: REQUEST,
        },
      },
      // The tool call lasts until the wrap-up is steered in: no request goes out before it.
      { awaitSteer: 15_000 },
      { tool: { id: "c1", name: "bash", output: "ok" } },
      { turnEnd: true },
      { turnStart: true },
      { steer: true },
      { assistant: { text: "done so far; the rest is left", stopReason: "stop" } },
    ];
    const cases = await Promise.all(
      Array.from({ length: TURNS }, (_, i) =>
        wrapperCase({
          scenario: { steps },
          meta: defaultMeta({
            runId: `turn-${i}`,
            limits: {},
            env: { PI_SUBAGENTS_BUDGET_LEFT_TOKENS: String(LEFT), PI_SUBAGENTS_BUDGET_BOARD: board },
          }),
        }),
      ),
    );
    const outs = await Promise.all(
      cases.map((c) => c.run({ env: { ...LOAD_TASK_EXTENSION, PI_SUBAGENTS_PI_VERSION: "0.73.1" } })),
    );
    for (const out of outs) {
      expect(out.result).toMatchObject({
        status: "completed",
        finalText: "done so far; the rest is left",
        limit: { name: "tree_budget_tokens", value: LEFT },
      });
      expect(out.result!.limit!.used).toBeGreaterThanOrEqual(LEFT);
      // Told after its one request, and the wrap-up was in its conversation before the next.
      const kinds = out.events
        .map((e) => e.type)
        .filter((t) => ["assistant_text", "limit", "message_delivered"].includes(t));
      expect(kinds).toEqual(["assistant_text", "limit", "message_delivered", "assistant_text"]);
    }
    console.log(
      `[reliability] tree budget: ${TURNS} turns side by side, ${TURNS * 40} tokens against ${LEFT}: ${outs.filter((o) => o.result?.limit).length} wrapped up`,
    );
    expect(await settleLeftovers()).toEqual([]);
  });
});
