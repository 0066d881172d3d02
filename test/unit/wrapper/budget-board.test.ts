/**
 * The tree's budget across turns side by side: when a turn is wrapped up (the pure decision,
 * as a table) and what the board tells a turn of the others (a temp folder, real files).
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BudgetBoard, type BudgetLeft, budgetCrossing, type Spend } from "../../../src/wrapper/budget-board.js";

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function boardDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "budget-board-test-"));
  dirs.push(dir);
  return dir;
}

const post = (dir: string, name: string, spend: Spend) => writeFile(path.join(dir, name), JSON.stringify(spend));

describe("budgetCrossing: is the turn wrapped up, under which name, with what numbers", () => {
  const cases: Array<[string, BudgetLeft, Spend, Spend, ReturnType<typeof budgetCrossing>]> = [
    ["under what was left, alone", { tokens: 100 }, { tokens: 60, cost: 0 }, { tokens: 0, cost: 0 }, undefined],
    [
      "its own use alone reaches it",
      { tokens: 100 },
      { tokens: 100, cost: 0 },
      { tokens: 0, cost: 0 },
      { name: "tree_budget_tokens", value: 100, used: 100 },
    ],
    [
      "under it alone, over it with what the others spent since: the tree has crossed",
      { tokens: 100 },
      { tokens: 40, cost: 0 },
      { tokens: 70, cost: 0 },
      { name: "tree_budget_tokens", value: 100, used: 110 },
    ],
    ["the others alone, just under", { tokens: 100 }, { tokens: 0, cost: 0 }, { tokens: 99, cost: 0 }, undefined],
    [
      "cost: the same, rounded as costs are",
      { cost: 0.5 },
      { tokens: 10, cost: 0.2 },
      { tokens: 0, cost: 0.3000000001 },
      { name: "tree_budget_cost", value: 0.5, used: 0.5 },
    ],
    [
      "both set: tokens are named first",
      { tokens: 10, cost: 0.1 },
      { tokens: 10, cost: 0.1 },
      { tokens: 0, cost: 0 },
      { name: "tree_budget_tokens", value: 10, used: 10 },
    ],
    ["no budget at all", {}, { tokens: 1e9, cost: 1e9 }, { tokens: 0, cost: 0 }, undefined],
  ];
  it.each(cases)("%s", (_title, left, own, others, expected) => {
    expect(budgetCrossing(left, own, others)).toEqual(expected);
  });
});

describe("BudgetBoard", () => {
  it("counts what the others added since the run began: a post made before counts only by its growth, a later turn whole, its own never", async () => {
    const dir = await boardDir();
    await post(dir, "before.json", { tokens: 500, cost: 0.5 });
    const warnings: string[] = [];
    const board = new BudgetBoard(dir, "N1-0001-spawn", (line) => warnings.push(line));
    expect(board.othersSince()).toEqual({ tokens: 0, cost: 0 });
    board.post({ tokens: 30, cost: 0.03 });
    expect(JSON.parse(await readFile(path.join(dir, "N1-0001-spawn.json"), "utf8"))).toEqual({
      tokens: 30,
      cost: 0.03,
    });
    expect(board.othersSince()).toEqual({ tokens: 0, cost: 0 }); // its own post is not another's
    await post(dir, "before.json", { tokens: 560, cost: 0.5 });
    await post(dir, "later.json", { tokens: 25, cost: 0.01 });
    expect(board.othersSince()).toEqual({ tokens: 85, cost: 0.01 });
    expect(warnings).toEqual([]);
  });

  it("a post it cannot read counts as nothing; temp files are skipped", async () => {
    const dir = await boardDir();
    const board = new BudgetBoard(dir, "N1-0001-spawn", () => undefined);
    await writeFile(path.join(dir, "torn.json"), '{"tokens": 4');
    await post(dir, ".other.json.tmp", { tokens: 1000, cost: 1 });
    await post(dir, "negative.json", { tokens: -5, cost: 0 });
    await post(dir, "good.json", { tokens: 7, cost: 0 });
    expect(board.othersSince()).toEqual({ tokens: 7, cost: 0 });
  });

  it("a board that cannot be made warns once, and the turn is held to what was left for it alone", async () => {
    const dir = await boardDir();
    const file = path.join(dir, "a-file");
    await writeFile(file, "not a folder");
    const warnings: string[] = [];
    const board = new BudgetBoard(path.join(file, "board"), "N1-0001-spawn", (line) => warnings.push(line));
    board.post({ tokens: 1, cost: 0 });
    expect(board.othersSince()).toEqual({ tokens: 0, cost: 0 });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /^the tree's budget board .*a-file\/board cannot be used \(.+\): this turn is held only to what was left/,
    );
  });
});
