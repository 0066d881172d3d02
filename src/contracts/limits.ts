/**
 * Per-turn limits of an agent: set on `spawn_agent` (`limits`), in an
 * agent definition's `limits:` block, or as a settings default — the first that sets a key wins.
 * The wrapper enforces them from the child's own event stream (meta.json `limits`).
 */
import { isRecord } from "../lib/values.js";
import { kindOf } from "./fields.js";

/** The keys, in the order the docs and errors list them. */
export const LIMIT_KEYS = [
  "max_turns",
  "max_tokens",
  "max_cost",
  "time_limit",
  "grace_turns",
  "grace_seconds",
] as const;
export type LimitKey = (typeof LIMIT_KEYS)[number];

/** Keys that count things (model requests, tokens): whole numbers. The others may have fractions. */
const WHOLE_KEYS: ReadonlySet<LimitKey> = new Set(["max_turns", "max_tokens", "grace_turns"]);

/**
 * `max_turns`: model requests in the turn; `max_tokens`: input + output tokens of the turn as
 * usage counts them; `max_cost`: USD of the turn; `time_limit`: seconds of the turn;
 * `grace_turns` / `grace_seconds`: what the child has left to answer once a limit is reached.
 */
export type TurnLimits = Partial<Record<LimitKey, number>>;

/** What holds when nothing sets a key. `time_limit`'s default is the 30-minute turn limit. */
export const LIMIT_DEFAULTS: Required<Pick<TurnLimits, "grace_turns" | "grace_seconds" | "time_limit">> = {
  grace_turns: 2,
  grace_seconds: 60,
  time_limit: 30 * 60,
};

export interface LimitsParse {
  /** The valid keys (a bad key is left out, so its layer below or the default applies). */
  limits: TurnLimits;
  /** One line per bad key, each naming it: `limits.max_turns must be a positive whole number, not -1`. */
  problems: string[];
}

function describe(value: unknown): string {
  if (typeof value === "number") return String(value);
  return typeof value === "string" ? JSON.stringify(value) : kindOf(value);
}

/** Checks a `limits` object from any source. `where` prefixes each problem (`limits`, `subagents.limits`). */
export function parseLimits(value: unknown, where = "limits"): LimitsParse {
  if (value === undefined || value === null) return { limits: {}, problems: [] };
  if (!isRecord(value)) return { limits: {}, problems: [`${where} must be an object, not ${kindOf(value)}`] };
  const limits: TurnLimits = {};
  const problems: string[] = [];
  for (const [key, raw] of Object.entries(value)) {
    if (!(LIMIT_KEYS as readonly string[]).includes(key)) {
      problems.push(`${where}: unknown key "${key}" (known: ${LIMIT_KEYS.join(", ")})`);
      continue;
    }
    const limitKey = key as LimitKey;
    const whole = WHOLE_KEYS.has(limitKey);
    const ok = typeof raw === "number" && Number.isFinite(raw) && raw > 0 && (!whole || Number.isSafeInteger(raw));
    if (ok) limits[limitKey] = raw;
    else problems.push(`${where}.${key} must be a positive ${whole ? "whole number" : "number"}, not ${describe(raw)}`);
  }
  return { limits, problems };
}

/** Layers merged key by key: the first layer that sets a key wins (spawn, definition, settings). */
export function mergeLimits(...layers: (TurnLimits | undefined)[]): TurnLimits {
  const merged: TurnLimits = {};
  for (const layer of [...layers].reverse()) Object.assign(merged, layer ?? {});
  return merged;
}

/** A limit with the defaults filled in: what the wrapper enforces. */
export function effectiveLimits(limits: TurnLimits | undefined): TurnLimits & typeof LIMIT_DEFAULTS {
  return { ...LIMIT_DEFAULTS, ...(limits ?? {}) };
}
