import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  describeReset,
  formatWait,
  periodEnd,
  periodOverrun,
  periodRefusal,
  periodStart,
} from "../../../src/contracts/budget-periods.js";

// The periods are local time: the tests fix the zone (Node reads TZ again when it changes).
const savedTz = process.env.TZ;
beforeAll(() => {
  process.env.TZ = "Europe/Berlin";
});
afterAll(() => {
  if (savedTz === undefined) delete process.env.TZ;
  else process.env.TZ = savedTz;
});

/** A local moment in the fixed zone, as ms since the epoch. */
const local = (y: number, m: number, d: number, h = 0, min = 0) => new Date(y, m - 1, d, h, min).getTime();

describe("budget periods (local time)", () => {
  it("a day runs from local midnight to the next, not from UTC midnight", () => {
    const now = local(2026, 12, 3, 0, 30); // 23:30 UTC the day before
    expect(new Date(periodStart("daily", now)).toISOString()).toBe("2026-12-02T23:00:00.000Z");
    expect(new Date(periodEnd("daily", now)).toISOString()).toBe("2026-12-03T23:00:00.000Z");
  });

  it("a month runs from the 1st at local midnight to the next month's 1st, across the year's end", () => {
    const now = local(2026, 12, 31, 23, 59);
    expect(periodStart("monthly", now)).toBe(local(2026, 12, 1));
    expect(periodEnd("monthly", now)).toBe(local(2027, 1, 1));
  });

  it("a day with a clock change is 23 or 25 hours long: its end is still the next local midnight", () => {
    expect(periodEnd("daily", local(2026, 3, 29, 12)) - periodStart("daily", local(2026, 3, 29, 12))).toBe(
      23 * 3_600_000,
    );
    expect(periodEnd("daily", local(2026, 10, 25, 12)) - periodStart("daily", local(2026, 10, 25, 12))).toBe(
      25 * 3_600_000,
    );
  });

  it.each([
    [1, "1 min"],
    [59_000, "1 min"],
    [60_000, "1 min"],
    [61_000, "2 min"],
    [3 * 3_600_000 + 12 * 60_000, "3 h 12 min"],
    [2 * 3_600_000, "2 h"],
    [(2 * 24 + 5) * 3_600_000, "2 d 5 h"],
    [3 * 24 * 3_600_000, "3 d"],
  ])("a wait of %d ms reads %s", (ms, text) => {
    expect(formatWait(ms)).toBe(text);
  });

  it("says when the budget is whole again: which local moment and how long from now", () => {
    expect(describeReset("daily", local(2026, 12, 3, 20, 48))).toBe(
      "it resets at midnight, local time (in 3 h 12 min)",
    );
    expect(describeReset("monthly", local(2026, 12, 30, 12))).toBe(
      "it resets on 2027-01-01 at 00:00, local time (in 1 d 12 h)",
    );
  });

  it("the budget is reached once the spend meets it; the day is looked at before the month", () => {
    expect(periodOverrun({}, { daily: 100, monthly: 100 })).toBeUndefined();
    expect(periodOverrun({ daily_usd: 5 }, { daily: 4.99, monthly: 50 })).toBeUndefined();
    expect(periodOverrun({ daily_usd: 5, monthly_usd: 20 }, { daily: 5, monthly: 20 })).toEqual({
      period: "daily",
      budget: 5,
      spent: 5,
    });
    expect(periodOverrun({ daily_usd: 5, monthly_usd: 20 }, { daily: 1, monthly: 21 })).toEqual({
      period: "monthly",
      budget: 20,
      spent: 21,
    });
  });

  it("a refusal is one line: what was spent, the budget and its setting, when it resets", () => {
    const now = local(2026, 12, 3, 22);
    expect(periodRefusal({ period: "daily", budget: 5, spent: 5.0312 }, now)).toBe(
      "daily budget spent: your agents have spent $5.03 today of the $5.00 daily budget (settings subagents.budgets.daily_usd); it resets at midnight, local time (in 2 h); no new turns start",
    );
    expect(periodRefusal({ period: "monthly", budget: 0.5, spent: 0.6 }, now)).toBe(
      "monthly budget spent: your agents have spent $0.6000 this month of the $0.5000 monthly budget (settings subagents.budgets.monthly_usd); it resets on 2027-01-01 at 00:00, local time (in 28 d 2 h); no new turns start",
    );
  });
});
