/**
 * The person's period budgets (settings `budgets: {daily_usd, monthly_usd}`) as one more
 * source of "the budget is spent": they hold across every tree of the user, by the spending
 * ledger in pi's agent dir that every turn's wrapper appends to (contracts/budget-ledger.ts).
 * A spawn or follow-up once a period's budget is reached is refused with one line; a turn
 * that starts carries the budgets and the ledger's folder in its meta.json `env`, so its
 * wrapper records what it spends and wraps it up when the ledger reaches a budget.
 */
import { LedgerReader } from "../../contracts/budget-ledger.js";
import { type PeriodBudgets, periodOverrun, periodRefusal } from "../../contracts/budget-periods.js";
import { ENV } from "../../contracts/env.js";
import { ledgerDir } from "../../contracts/layout.js";
import { piAgentDir } from "../../lib/pi-agent-dir.js";
import { readSubagentSettings } from "../settings.js";

export interface PeriodBudgetSource {
  /** pi's agent dir (its settings and the ledger). */
  agentDir: string;
  /** The budgets in effect (only pi's global settings may set them). */
  budgets: PeriodBudgets;
  now: number;
}

/** Where this process's pi keeps its settings and the ledger, and the budgets set there. */
export function periodBudgetSource(env: NodeJS.ProcessEnv = process.env, now = Date.now()): PeriodBudgetSource {
  const agentDir = piAgentDir(env);
  return { agentDir, budgets: readSubagentSettings({ agentDir }).settings.budgets ?? {}, now };
}

/** This process's readers of the ledger, by its folder: each later check reads only what was appended. */
const readers = new Map<string, LedgerReader>();

/** The refusal when a period's budget is reached, else undefined; throws when the ledger cannot be read. */
export function periodBudgetRefusal(source: PeriodBudgetSource): string | undefined {
  const { budgets, agentDir, now } = source;
  if (budgets.daily_usd === undefined && budgets.monthly_usd === undefined) return undefined;
  const dir = ledgerDir(agentDir);
  let reader = readers.get(dir);
  if (!reader) {
    reader = new LedgerReader(dir);
    readers.set(dir, reader);
  }
  const overrun = periodOverrun(budgets, reader.spend(now));
  return overrun && periodRefusal(overrun, now);
}

/** meta.json `env` of a turn about to start: where it records its spend, and the budgets its wrapper holds it to. */
export function periodBudgetEnv(source: PeriodBudgetSource): Record<string, string> {
  const { budgets } = source;
  return {
    [ENV.ledgerDir]: ledgerDir(source.agentDir),
    ...(budgets.daily_usd !== undefined && { [ENV.budgetDailyUsd]: String(budgets.daily_usd) }),
    ...(budgets.monthly_usd !== undefined && { [ENV.budgetMonthlyUsd]: String(budgets.monthly_usd) }),
  };
}
