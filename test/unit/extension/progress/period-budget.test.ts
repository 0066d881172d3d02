import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appendLedger } from "../../../../src/contracts/budget-ledger.js";
import { ledgerDir, ledgerFile } from "../../../../src/contracts/layout.js";
import {
  periodBudgetEnv,
  periodBudgetRefusal,
  periodBudgetSource,
} from "../../../../src/extension/progress/period-budget.js";

let agentDir: string;
beforeEach(() => {
  agentDir = fs.mkdtempSync(path.join(os.tmpdir(), "period-budget-"));
});
afterEach(() => fs.rmSync(agentDir, { recursive: true, force: true }));

const settings = (subagents: unknown) =>
  fs.writeFileSync(path.join(agentDir, "settings.json"), JSON.stringify({ subagents }));
const env = () => ({ PI_CODING_AGENT_DIR: agentDir });

describe("period budgets in the extension", () => {
  it("reads the budgets from pi's global settings in PI_CODING_AGENT_DIR", () => {
    settings({ budgets: { daily_usd: 3, monthly_usd: 40 } });
    expect(periodBudgetSource(env(), 1000)).toEqual({
      agentDir,
      budgets: { daily_usd: 3, monthly_usd: 40 },
      now: 1000,
    });
  });

  it("refuses once the ledger's day reaches the daily budget; not before", () => {
    settings({ budgets: { daily_usd: 1 } });
    const now = Date.now();
    appendLedger(ledgerDir(agentDir), { at: now, usd: 0.6, run: "a" });
    expect(periodBudgetRefusal(periodBudgetSource(env(), now))).toBeUndefined();
    appendLedger(ledgerDir(agentDir), { at: now, usd: 0.4, run: "b" });
    expect(periodBudgetRefusal(periodBudgetSource(env(), now))).toMatch(
      /^daily budget spent: your agents have spent \$1\.00 today of the \$1\.00 daily budget .*; no new turns start$/,
    );
  });

  it("no budget set: the ledger is not even read (a broken one costs a spawn nothing)", () => {
    const now = Date.now();
    fs.mkdirSync(ledgerFile(ledgerDir(agentDir), now), { recursive: true });
    expect(periodBudgetRefusal(periodBudgetSource(env(), now))).toBeUndefined();
    settings({ budgets: { daily_usd: 1 } });
    expect(() => periodBudgetRefusal(periodBudgetSource(env(), now))).toThrow(/is not a regular file$/);
  });

  it("every turn carries the ledger's folder, and the budgets when set, in its meta.json env", () => {
    expect(periodBudgetEnv(periodBudgetSource(env()))).toEqual({
      PI_SUBAGENTS_LEDGER: path.join(agentDir, "subagents", "ledger"),
    });
    settings({ budgets: { daily_usd: 2.5, monthly_usd: 30 } });
    expect(periodBudgetEnv(periodBudgetSource(env()))).toEqual({
      PI_SUBAGENTS_LEDGER: path.join(agentDir, "subagents", "ledger"),
      PI_SUBAGENTS_BUDGET_DAILY_USD: "2.5",
      PI_SUBAGENTS_BUDGET_MONTHLY_USD: "30",
    });
  });
});
