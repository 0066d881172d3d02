/**
 * A running turn's use against its limits (`limits_used` in list_agents and
 * /agents), from what the wrapper writes to events.jsonl: its model requests, their usage
 * (input + output tokens, cost.total) and the time since run_start. The limits are the agent's
 * (spawn, definition, settings), `time_limit` defaulting to the turn limit.
 */
import { effectiveLimits, type TurnLimits } from "../../contracts/limits.js";
import { roundCost } from "../../contracts/usage.js";
import type { RunProgress } from "./events-tail.js";

/** `"used/limit"` per limit the turn has, and `wrap_up` (the limit met) once the child is told to wrap up. */
export type LimitsUsed = Partial<Record<"max_turns" | "max_tokens" | "max_cost" | "time_limit", string>> & {
  wrap_up?: string;
};

export function limitsUsed(
  limits: TurnLimits | undefined,
  turnLimitMs: number,
  run: RunProgress,
  elapsedMs: number | undefined,
): LimitsUsed {
  const all = effectiveLimits({ time_limit: turnLimitMs / 1000, ...limits });
  const used: LimitsUsed = {};
  if (all.max_turns !== undefined) used.max_turns = `${run.turns}/${all.max_turns}`;
  if (all.max_tokens !== undefined) used.max_tokens = `${run.usage.input + run.usage.output}/${all.max_tokens}`;
  if (all.max_cost !== undefined) used.max_cost = `${roundCost(run.usage.cost.total)}/${all.max_cost}`;
  used.time_limit = `${Math.floor((elapsedMs ?? 0) / 1000)}/${all.time_limit}`;
  if (run.limitReached) used.wrap_up = run.limitReached;
  return used;
}
