import { describe, expect, it } from "vitest";
import { effectiveLimits, LIMIT_DEFAULTS, mergeLimits, parseLimits } from "../../../src/contracts/limits.js";

describe("parseLimits", () => {
  it("keeps every valid key", () => {
    const all = { max_turns: 5, max_tokens: 1000, max_cost: 0.25, time_limit: 90.5, grace_turns: 1, grace_seconds: 10 };
    expect(parseLimits(all)).toEqual({ limits: all, problems: [] });
  });

  it("takes nothing for undefined or null", () => {
    expect(parseLimits(undefined)).toEqual({ limits: {}, problems: [] });
    expect(parseLimits(null)).toEqual({ limits: {}, problems: [] });
  });

  it.each([
    [{ max_turns: 0 }, "limits.max_turns must be a positive whole number, not 0"],
    [{ max_turns: 1.5 }, "limits.max_turns must be a positive whole number, not 1.5"],
    [{ max_tokens: -3 }, "limits.max_tokens must be a positive whole number, not -3"],
    [{ max_cost: "1" }, 'limits.max_cost must be a positive number, not "1"'],
    [{ time_limit: null }, "limits.time_limit must be a positive number, not null"],
    [{ grace_seconds: Number.POSITIVE_INFINITY }, "limits.grace_seconds must be a positive number, not Infinity"],
    [
      { maxturns: 3 },
      'limits: unknown key "maxturns" (known: max_turns, max_tokens, max_cost, time_limit, grace_turns, grace_seconds)',
    ],
  ])("names the key of a bad value: %j", (value, problem) => {
    const parsed = parseLimits(value);
    expect(parsed.problems).toEqual([problem]);
    expect(parsed.limits).toEqual({});
  });

  it("reports every bad key at once and keeps the good ones", () => {
    const parsed = parseLimits({ max_turns: 3, max_cost: -1, bogus: 1 }, "subagents.limits");
    expect(parsed.limits).toEqual({ max_turns: 3 });
    expect(parsed.problems).toHaveLength(2);
    expect(parsed.problems[0]).toMatch(/^subagents\.limits\.max_cost /);
  });

  it("refuses a value that is not an object", () => {
    expect(parseLimits([1]).problems).toEqual(["limits must be an object, not an array"]);
  });
});

describe("mergeLimits and effectiveLimits", () => {
  it("spawn beats definition beats settings, key by key", () => {
    expect(mergeLimits({ max_turns: 1 }, { max_turns: 2, max_cost: 3 }, { max_cost: 4, time_limit: 5 })).toEqual({
      max_turns: 1,
      max_cost: 3,
      time_limit: 5,
    });
  });

  it("fills in the grace and the 30-minute time limit", () => {
    expect(effectiveLimits(undefined)).toEqual(LIMIT_DEFAULTS);
    expect(effectiveLimits({ time_limit: 60 })).toEqual({ grace_turns: 2, grace_seconds: 60, time_limit: 60 });
  });
});
