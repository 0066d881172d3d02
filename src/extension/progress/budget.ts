/**
 * An optional spending limit for a whole tree: once the tree's agents have used the budget
 * (tokens and/or cost), spawn_agent and followup_task refuse with one clear error. A turn
 * that starts is told what is left of it and where the tree's budget board is (meta.json `env`,
 * `budgetLeftEnv`); its wrapper wraps it up like a per-turn limit (`tree_budget_tokens` /
 * `tree_budget_cost`) once the tree has spent that much since the turn started — its own use
 * plus what the turns beside it posted to the board — so every running turn is wrapped up
 * once the tree's total crosses the budget: told to finish, then stopped after its grace,
 * never killed outright. Set by the environment,
 * which every process of the tree inherits, so nested agents see the same budget and
 * (through the shared tree directory) the same spend.
 */

import path from "node:path";
import { ROOT_PATH } from "../../contracts/agent-paths.js";
import { dialogTimeoutMs } from "../../contracts/dialog-settings.js";
import { ENV } from "../../contracts/env.js";
import { TREE_FILES } from "../../contracts/layout.js";
import { addTotals, emptyTotals, formatCost, roundCost, type UsageTotals, usageTotals } from "../../contracts/usage.js";
import { readSubagentSettings } from "../settings.js";
import { periodBudgetRefusal, periodBudgetSource } from "./period-budget.js";
import type { TreeProgress } from "./progress.js";
import { spendGateEnv, spendGateRefusal } from "./spend-confirm.js";

export interface TreeBudget {
  /** Limit on the tree's total_tokens. */
  tokens?: number;
  /** Limit on the tree's cost (pi's cost.total, in the models' price unit — USD for pi's built-ins). */
  cost?: number;
}

function parseLimit(env: NodeJS.ProcessEnv, name: string, integer: boolean): number | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new Error(`${name} must be a positive ${integer ? "integer" : "number"}, got "${raw}"`);
  }
  return value;
}

/** The budget the environment sets; an invalid value is an error (a budget is never silently dropped). */
export function budgetFromEnv(env: NodeJS.ProcessEnv = process.env): TreeBudget {
  const tokens = parseLimit(env, ENV.budgetTokens, true);
  const cost = parseLimit(env, ENV.budgetCost, false);
  return { ...(tokens !== undefined && { tokens }), ...(cost !== undefined && { cost }) };
}

export function hasBudget(budget: TreeBudget): boolean {
  return budget.tokens !== undefined || budget.cost !== undefined;
}

/** The refusal when `spent` has reached the budget, else undefined. */
export function budgetRefusal(budget: TreeBudget, spent: UsageTotals): string | undefined {
  if (budget.tokens !== undefined && spent.total_tokens >= budget.tokens) {
    return `tree budget spent: this tree's agents have used ${spent.total_tokens} tokens of its ${budget.tokens}-token budget (${ENV.budgetTokens}); no new turns start`;
  }
  if (budget.cost !== undefined && spent.cost >= budget.cost) {
    return `tree budget spent: this tree's agents have used ${formatCost(spent.cost)} of its ${formatCost(budget.cost)} budget (${ENV.budgetCost}); no new turns start`;
  }
  return undefined;
}

/** Usage of every agent in the tree (the root's own conversation not included), running turns so far included. */
export async function treeSpend(progress: TreeProgress): Promise<UsageTotals> {
  const spent = emptyTotals();
  for (const agent of await progress.snapshot(ROOT_PATH)) addTotals(spent, usageTotals(agent.usage));
  return spent;
}

export interface BudgetState {
  budget: TreeBudget;
  spent: UsageTotals;
  refusal?: string;
}

/** The tree's budget and spend, or undefined when no budget is set. Throws on an invalid budget. */
export async function budgetState(
  progress: TreeProgress,
  env: NodeJS.ProcessEnv = process.env,
): Promise<BudgetState | undefined> {
  const budget = budgetFromEnv(env);
  if (!hasBudget(budget)) return undefined;
  const spent = await treeSpend(progress);
  const refusal = budgetRefusal(budget, spent);
  return { budget, spent, ...(refusal && { refusal }) };
}

/**
 * Throws the refusal when the tree's budget or a period budget of the person's is spent (or set
 * to an invalid value), or the tree's spend gate stops it (`confirm_every_usd`: this may first
 * hold the spawn while the person is asked).
 */
export async function assertBudgetLeft(progress: TreeProgress, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const state = await budgetState(progress, env);
  if (state?.refusal) throw new Error(state.refusal);
  const period = periodBudgetRefusal(periodBudgetSource(env));
  if (period) throw new Error(period);
  const timeoutMs = dialogTimeoutMs(readSubagentSettings().settings.dialogTimeout);
  const spent = async () => (await treeSpend(progress)).cost;
  const gate = await spendGateRefusal(progress.tree.root, spent, { timeoutMs, clock: progress.clock });
  if (gate) throw new Error(gate);
}

/**
 * What is left of the tree's budget, for a turn about to start (meta.json `env`), and the tree's
 * budget board in `treeDir`: none when no budget is set (or it is invalid: spawn_agent says
 * so). A budget already spent leaves the least amount, so the turn wraps up at its first request.
 */
export async function budgetLeftEnv(
  progress: TreeProgress,
  env: NodeJS.ProcessEnv = process.env,
  treeDir?: string,
): Promise<Record<string, string>> {
  let budget: TreeBudget;
  try {
    budget = budgetFromEnv(env);
  } catch {
    return {};
  }
  // Without a person to ask, what confirm_every_usd lets the tree spend is a cost budget too.
  const gate = treeDir === undefined ? { env: {} } : await spendGateEnv(treeDir);
  if (gate.costCap !== undefined) budget = { ...budget, cost: Math.min(budget.cost ?? Infinity, gate.costCap) };
  if (!hasBudget(budget)) return gate.env;
  const spent = await treeSpend(progress);
  const left: Record<string, string> = { ...gate.env };
  if (budget.tokens !== undefined) left[ENV.budgetLeftTokens] = String(Math.max(1, budget.tokens - spent.total_tokens));
  if (budget.cost !== undefined) left[ENV.budgetLeftCost] = String(Math.max(1e-6, roundCost(budget.cost - spent.cost)));
  if (treeDir !== undefined) left[ENV.budgetBoard] = path.join(treeDir, TREE_FILES.budgetBoard);
  return left;
}
