/**
 * Token usage and its arithmetic, shared by the wrapper (it sums a run's messages), the
 * extension (it sums turns, agents and subtrees) and the CLI (it shows them).
 *
 * Two shapes: pi's own (`Usage`, as result.json and events.jsonl carry it) and the compact
 * one a model reads in notices and list_agents (`UsageTotals`), which leaves the 8 000
 * characters of a notice to the report.
 */
import { isRecord } from "../lib/values.js";

/** Token usage in pi's shape. */
export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  totalTokens: number;
  cost: { input: number; output: number; cacheRead: number; cacheWrite: number; total: number };
}

/**
 * Usage in the compact shape list_agents, notices and the widget show to a model: tokens as
 * pi counts them (`total_tokens` includes cache reads and writes) and `cost` = pi's
 * `cost.total`.
 */
export interface UsageTotals {
  input: number;
  output: number;
  total_tokens: number;
  /** Rounded to a millionth: float noise would only eat the notice's budget. */
  cost: number;
}

export function emptyUsage(): Usage {
  return {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

function asNumber(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

/** pi's usage shape from anything (a pi event, a file): every missing or bad number reads as 0. */
export function normalizeUsage(value: unknown): Usage {
  const usage = emptyUsage();
  if (!isRecord(value)) return usage;
  usage.input = asNumber(value.input);
  usage.output = asNumber(value.output);
  usage.cacheRead = asNumber(value.cacheRead);
  usage.cacheWrite = asNumber(value.cacheWrite);
  usage.totalTokens = asNumber(value.totalTokens);
  if (isRecord(value.cost)) {
    usage.cost.input = asNumber(value.cost.input);
    usage.cost.output = asNumber(value.cost.output);
    usage.cost.cacheRead = asNumber(value.cost.cacheRead);
    usage.cost.cacheWrite = asNumber(value.cost.cacheWrite);
    usage.cost.total = asNumber(value.cost.total);
  }
  return usage;
}

const USAGE_FIELDS = ["input", "output", "cacheRead", "cacheWrite", "totalTokens"] as const;
const COST_FIELDS = ["input", "output", "cacheRead", "cacheWrite", "total"] as const;

const finite = (value: unknown): boolean => typeof value === "number" && Number.isFinite(value);

/** Whether a value read from a file is pi's usage shape, every number finite (the arithmetic below trusts it). */
export function isUsage(value: unknown): value is Usage {
  return (
    isRecord(value) &&
    USAGE_FIELDS.every((key) => finite(value[key])) &&
    isRecord(value.cost) &&
    COST_FIELDS.every((key) => finite((value.cost as Record<string, unknown>)[key]))
  );
}

/** Adds `add` into `into` (pi's shape). */
export function addUsage(into: Usage, add: Usage): void {
  into.input += add.input;
  into.output += add.output;
  into.cacheRead += add.cacheRead;
  into.cacheWrite += add.cacheWrite;
  into.totalTokens += add.totalTokens;
  into.cost.input += add.cost.input;
  into.cost.output += add.cost.output;
  into.cost.cacheRead += add.cost.cacheRead;
  into.cost.cacheWrite += add.cost.cacheWrite;
  into.cost.total += add.cost.total;
}

export function roundCost(cost: number): number {
  return Math.round(cost * 1e6) / 1e6;
}

/** pi's usage shape → the compact one. */
export function usageTotals(usage: Usage): UsageTotals {
  return {
    input: usage.input,
    output: usage.output,
    total_tokens: usage.totalTokens,
    cost: roundCost(usage.cost.total),
  };
}

export function emptyTotals(): UsageTotals {
  return { input: 0, output: 0, total_tokens: 0, cost: 0 };
}

/** Adds `add` into `into` (compact shape) and returns `into`. */
export function addTotals(into: UsageTotals, add: UsageTotals): UsageTotals {
  into.input += add.input;
  into.output += add.output;
  into.total_tokens += add.total_tokens;
  into.cost = roundCost(into.cost + add.cost);
  return into;
}

/** Whether `agentPath` is `root` or below it (`/root/a` holds `/root/a/x`, not `/root/ab`). */
export function inSubtree(root: string, agentPath: string): boolean {
  return agentPath === root || agentPath.startsWith(`${root}/`);
}

/**
 * For every agent of `own` (path → its own value), the sum over itself and its descendants
 * among them: the one roll-up behind list_agents' `subtree_usage` and `subagent-wrapper cost`.
 */
export function rollUpBy<T>(
  own: ReadonlyMap<string, T>,
  empty: () => T,
  add: (into: T, value: T) => void,
): Map<string, T> {
  const rolled = new Map<string, T>();
  for (const [agentPath] of own) {
    const sum = empty();
    for (const [other, value] of own) if (inSubtree(agentPath, other)) add(sum, value);
    rolled.set(agentPath, sum);
  }
  return rolled;
}

/** rollUpBy over the compact usage. */
export function rollUp(usages: ReadonlyMap<string, UsageTotals>): Map<string, UsageTotals> {
  return rollUpBy(usages, emptyTotals, addTotals);
}

/** A cost with enough digits for small runs: 0.0012 → "$0.0012", 1.5 → "$1.50". */
export function formatCost(dollars: number): string {
  if (!Number.isFinite(dollars)) return "?";
  return `$${dollars >= 1 ? dollars.toFixed(2) : dollars.toFixed(4)}`;
}
