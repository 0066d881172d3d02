/**
 * The periods a person's spending budgets (settings `budgets`) hold over: a day and a month,
 * both in the machine's local time, because that is how a person reads "today" and "this
 * month" on their bill. A day starts at local midnight; a month on the 1st at local midnight.
 * Pure: the moment is passed in, so tests fix it (and the zone, with TZ).
 */
import { formatCost } from "./usage.js";

export const BUDGET_PERIODS = ["daily", "monthly"] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/** The settings keys of `budgets`, one per period. */
export const BUDGET_KEYS: Record<BudgetPeriod, "daily_usd" | "monthly_usd"> = {
  daily: "daily_usd",
  monthly: "monthly_usd",
};

/** USD per period; a period left out has no budget. */
export type PeriodBudgets = Partial<Record<"daily_usd" | "monthly_usd", number>>;

/** When the period holding `now` (ms since the epoch) began, local time. */
export function periodStart(period: BudgetPeriod, now: number): number {
  const at = new Date(now);
  const day = period === "daily" ? at.getDate() : 1;
  return new Date(at.getFullYear(), at.getMonth(), day).getTime();
}

/** When the period holding `now` ends: the next local midnight, or the next month's 1st. */
export function periodEnd(period: BudgetPeriod, now: number): number {
  const at = new Date(now);
  if (period === "daily") return new Date(at.getFullYear(), at.getMonth(), at.getDate() + 1).getTime();
  return new Date(at.getFullYear(), at.getMonth() + 1, 1).getTime();
}

/** `3 h 12 min`, `2 d 5 h`, `4 min`: how long until a reset, to the minute (at least 1 min). */
export function formatWait(ms: number): string {
  const minutes = Math.max(1, Math.ceil(ms / 60_000));
  const days = Math.floor(minutes / 1440);
  const hours = Math.floor((minutes % 1440) / 60);
  const rest = minutes % 60;
  if (days > 0) return hours > 0 ? `${days} d ${hours} h` : `${days} d`;
  if (hours > 0) return rest > 0 ? `${hours} h ${rest} min` : `${hours} h`;
  return `${rest} min`;
}

const pad = (n: number) => String(n).padStart(2, "0");

/** When the period's budget is whole again, said for a person: which local moment, and how long from now. */
export function describeReset(period: BudgetPeriod, now: number): string {
  const end = periodEnd(period, now);
  const wait = formatWait(end - now);
  if (period === "daily") return `it resets at midnight, local time (in ${wait})`;
  const at = new Date(end);
  return `it resets on ${at.getFullYear()}-${pad(at.getMonth() + 1)}-01 at 00:00, local time (in ${wait})`;
}

/** What the ledger holds for the periods holding a moment. */
export type PeriodSpend = Record<BudgetPeriod, number>;

export interface PeriodOverrun {
  period: BudgetPeriod;
  budget: number;
  spent: number;
}

/** The first period whose budget `spend` has reached (the day before the month), else undefined. */
export function periodOverrun(budgets: PeriodBudgets, spend: PeriodSpend): PeriodOverrun | undefined {
  for (const period of BUDGET_PERIODS) {
    const budget = budgets[BUDGET_KEYS[period]];
    if (budget !== undefined && spend[period] >= budget) return { period, budget, spent: spend[period] };
  }
  return undefined;
}

/** The one line a refused spawn or follow-up gets: what was spent, the budget, when it resets. */
export function periodRefusal(overrun: PeriodOverrun, now: number): string {
  const { period, budget, spent } = overrun;
  const span = period === "daily" ? "today" : "this month";
  return `${period} budget spent: your agents have spent ${formatCost(spent)} ${span} of the ${formatCost(budget)} ${period} budget (settings subagents.budgets.${BUDGET_KEYS[period]}); ${describeReset(period, now)}; no new turns start`;
}
