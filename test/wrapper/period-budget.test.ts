/**
 * subagent-wrapper with the person's spending ledger and period budgets (meta.json `env`
 * PI_SUBAGENTS_LEDGER, PI_SUBAGENTS_BUDGET_DAILY_USD), against the fake pi running the real
 * task extension: each model request's cost (the fake's 0.001 USD) is one ledger line, and a
 * request that goes on working once the ledger's day reaches the budget wraps the turn up.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appendLedger, parseLedger } from "../../src/contracts/budget-ledger.js";
import { ledgerFile } from "../../src/contracts/layout.js";
import { answer, bashCall, LOAD, start, toolDone, toolThenSteer } from "../support/limit-steps.js";
import { killAll } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, wrapperCase } from "../support/wrapper-harness.js";

let ledger: string;
beforeEach(() => {
  ledger = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "psa-ledger-")), "ledger");
});
afterEach(async () => {
  await killAll();
  await cleanupWrapperCases();
  fs.rmSync(path.dirname(ledger), { recursive: true, force: true });
});

const ledgerEntries = () => parseLedger(fs.readFileSync(ledgerFile(ledger, Date.now()), "utf8"));

describe("subagent-wrapper with the spending ledger", () => {
  it("records each model request's cost as one line naming the run and its agent; no budget, no wrap-up", async () => {
    const wrapper = await wrapperCase({
      scenario: { steps: [...start, bashCall("c1"), ...toolDone("c1"), answer("done")] },
      meta: defaultMeta({ agentPath: "/root/worker", limits: {}, env: { PI_SUBAGENTS_LEDGER: ledger } }),
    });
    const out = await wrapper.run({ env: LOAD });
    expect(out.result).toMatchObject({ status: "completed", finalText: "done" });
    expect(out.result?.limit).toBeUndefined();
    const lines = fs.readFileSync(ledgerFile(ledger, Date.now()), "utf8").trim().split("\n");
    expect(lines.map((line) => JSON.parse(line))).toEqual([
      { at: expect.any(Number), usd: 0.001, run: wrapper.meta.runId, agent: "/root/worker" },
      { at: expect.any(Number), usd: 0.001, run: wrapper.meta.runId, agent: "/root/worker" },
    ]);
  });

  it("a request that goes on working once today's spend (all trees) reaches the daily budget wraps the turn up: daily_budget_usd", async () => {
    // Another tree spent most of today's budget already.
    appendLedger(ledger, { at: Date.now(), usd: 0.002, run: "other-tree-run" });
    const wrapper = await wrapperCase({
      scenario: { steps: [...start, bashCall("c1", "working"), ...toolThenSteer("c1"), answer("done: A; left: B")] },
      meta: defaultMeta({
        limits: {},
        env: { PI_SUBAGENTS_LEDGER: ledger, PI_SUBAGENTS_BUDGET_DAILY_USD: "0.0025" },
      }),
    });
    const out = await wrapper.run({ env: LOAD });
    expect(out.result).toMatchObject({
      status: "completed",
      finalText: "done: A; left: B",
      limit: { name: "daily_budget_usd", value: 0.0025, used: 0.003 },
    });
    const delivered = out.events.find((e) => e.type === "message_delivered") as { text: string };
    expect(delivered.text).toMatch(/^\[LIMIT daily_budget_usd\] .*0\.003 of 0\.0025 USD of the person's daily budget/);
    expect(ledgerEntries().map((e) => e.usd)).toEqual([0.002, 0.001, 0.001]);
  });

  it("an answer that crosses the budget is the answer: not wrapped up, its spend still recorded", async () => {
    const wrapper = await wrapperCase({
      scenario: { steps: [...start, answer("all done")] },
      meta: defaultMeta({ limits: {}, env: { PI_SUBAGENTS_LEDGER: ledger, PI_SUBAGENTS_BUDGET_DAILY_USD: "0.0005" } }),
    });
    const out = await wrapper.run({ env: LOAD });
    expect(out.result).toMatchObject({ status: "completed", finalText: "all done" });
    expect(out.result?.limit).toBeUndefined();
    expect(ledgerEntries().map((e) => e.usd)).toEqual([0.001]);
  });

  it("a ledger that cannot be written is one warning; the run goes on", async () => {
    fs.mkdirSync(path.dirname(ledger), { recursive: true });
    fs.writeFileSync(ledger, "a file where the folder should be");
    const wrapper = await wrapperCase({
      scenario: { steps: [...start, bashCall("c1"), ...toolDone("c1"), answer("done")] },
      meta: defaultMeta({ limits: {}, env: { PI_SUBAGENTS_LEDGER: ledger } }),
    });
    const out = await wrapper.run({ env: LOAD });
    expect(out.result).toMatchObject({ status: "completed", finalText: "done" });
    const warnings = out.stderr.split("\n").filter((line) => line.includes("spending ledger"));
    expect(warnings).toEqual([
      expect.stringMatching(/cannot be written .*: this run's cost is not counted in the period budgets$/),
    ]);
  });
});
