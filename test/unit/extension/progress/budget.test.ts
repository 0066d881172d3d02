import { describe, expect, it } from "vitest";
import { addTotals, emptyTotals, emptyUsage, usageTotals } from "../../../../src/contracts/usage.js";
import { budgetFromEnv, budgetLeftEnv, budgetRefusal } from "../../../../src/extension/progress/budget.js";
import type { TreeProgress } from "../../../../src/extension/progress/progress.js";
import { rollUp } from "../../../../src/extension/tree/usage-rollup.js";

const spent = (total_tokens: number, cost: number) => ({ input: 0, output: 0, total_tokens, cost });

describe("tree budget", () => {
  it("reads tokens and cost from the environment; unset or empty means no budget", () => {
    expect(budgetFromEnv({})).toEqual({});
    expect(budgetFromEnv({ PI_SUBAGENTS_BUDGET_TOKENS: " ", PI_SUBAGENTS_BUDGET_COST: "" })).toEqual({});
    expect(budgetFromEnv({ PI_SUBAGENTS_BUDGET_TOKENS: "50000", PI_SUBAGENTS_BUDGET_COST: "0.25" })).toEqual({
      tokens: 50000,
      cost: 0.25,
    });
  });

  it.each([
    [{ PI_SUBAGENTS_BUDGET_TOKENS: "lots" }, 'PI_SUBAGENTS_BUDGET_TOKENS must be a positive integer, got "lots"'],
    [{ PI_SUBAGENTS_BUDGET_TOKENS: "1.5" }, 'PI_SUBAGENTS_BUDGET_TOKENS must be a positive integer, got "1.5"'],
    [{ PI_SUBAGENTS_BUDGET_COST: "-1" }, 'PI_SUBAGENTS_BUDGET_COST must be a positive number, got "-1"'],
    [{ PI_SUBAGENTS_BUDGET_COST: "0" }, 'PI_SUBAGENTS_BUDGET_COST must be a positive number, got "0"'],
  ])("an invalid budget %j is an error, never silently no budget", (env, message) => {
    expect(() => budgetFromEnv(env)).toThrow(message);
  });

  it("refuses once the spend reaches either limit, with one clear line", () => {
    expect(budgetRefusal({}, spent(10 ** 9, 10 ** 6))).toBeUndefined();
    expect(budgetRefusal({ tokens: 1000 }, spent(999, 5))).toBeUndefined();
    expect(budgetRefusal({ tokens: 1000 }, spent(1000, 0))).toBe(
      "tree budget spent: this tree's agents have used 1000 tokens of its 1000-token budget (PI_SUBAGENTS_BUDGET_TOKENS); no new turns start",
    );
    expect(budgetRefusal({ tokens: 10 ** 6, cost: 0.5 }, spent(10, 0.52134))).toBe(
      "tree budget spent: this tree's agents have used $0.5213 of its $0.5000 budget (PI_SUBAGENTS_BUDGET_COST); no new turns start",
    );
  });
});

describe("tree budget: what a starting turn is told is left (its wrapper wraps it up there)", () => {
  const progressSpent = (totalTokens: number, cost: number) =>
    ({
      snapshot: async () => [{ usage: { ...emptyUsage(), totalTokens, cost: { ...emptyUsage().cost, total: cost } } }],
    }) as unknown as TreeProgress;

  it("the budget less the tree's spend, per budget set; nothing without a budget or with an invalid one", async () => {
    expect(await budgetLeftEnv(progressSpent(400, 0.1), { PI_SUBAGENTS_BUDGET_TOKENS: "1000" })).toEqual({
      PI_SUBAGENTS_BUDGET_LEFT_TOKENS: "600",
    });
    expect(
      await budgetLeftEnv(progressSpent(400, 0.1), {
        PI_SUBAGENTS_BUDGET_TOKENS: "1000",
        PI_SUBAGENTS_BUDGET_COST: "0.5",
      }),
    ).toEqual({ PI_SUBAGENTS_BUDGET_LEFT_TOKENS: "600", PI_SUBAGENTS_BUDGET_LEFT_COST: "0.4" });
    expect(await budgetLeftEnv(progressSpent(400, 0.1), {})).toEqual({});
    expect(await budgetLeftEnv(progressSpent(400, 0.1), { PI_SUBAGENTS_BUDGET_TOKENS: "lots" })).toEqual({});
  });

  it("with a budget, the turn is also told where the tree's budget board is (beside the tree's other files)", async () => {
    expect(await budgetLeftEnv(progressSpent(400, 0.1), { PI_SUBAGENTS_BUDGET_TOKENS: "1000" }, "/trees/t1")).toEqual({
      PI_SUBAGENTS_BUDGET_LEFT_TOKENS: "600",
      PI_SUBAGENTS_BUDGET_BOARD: "/trees/t1/budget-board",
    });
    expect(await budgetLeftEnv(progressSpent(400, 0.1), {}, "/trees/t1")).toEqual({});
  });

  it("a budget already spent leaves the least amount: the turn wraps up at its first request", async () => {
    expect(
      await budgetLeftEnv(progressSpent(5000, 2), {
        PI_SUBAGENTS_BUDGET_TOKENS: "1000",
        PI_SUBAGENTS_BUDGET_COST: "1",
      }),
    ).toEqual({ PI_SUBAGENTS_BUDGET_LEFT_TOKENS: "1", PI_SUBAGENTS_BUDGET_LEFT_COST: "0.000001" });
  });
});

describe("usage roll-up", () => {
  it("sums each agent with its descendants, not with siblings that share a name prefix", () => {
    const own = new Map([
      ["/root/a", spent(10, 0.1)],
      ["/root/a/x", spent(5, 0.05)],
      ["/root/a/x/y", spent(1, 0.01)],
      ["/root/ab", spent(100, 1)],
    ]);
    const rolled = rollUp(own);
    expect(rolled.get("/root/a")).toEqual(spent(16, 0.16));
    expect(rolled.get("/root/a/x")).toEqual(spent(6, 0.06));
    expect(rolled.get("/root/ab")).toEqual(spent(100, 1));
  });

  it("converts pi's usage to the compact shape and keeps float sums readable", () => {
    const usage = emptyUsage();
    usage.input = 3;
    usage.output = 4;
    usage.totalTokens = 7;
    usage.cost.total = 0.0012000000000000001;
    expect(usageTotals(usage)).toEqual({ input: 3, output: 4, total_tokens: 7, cost: 0.0012 });
    const sum = emptyTotals();
    for (let i = 0; i < 3; i++) addTotals(sum, { input: 0, output: 0, total_tokens: 0, cost: 0.1 });
    expect(sum.cost).toBe(0.3);
  });
});
