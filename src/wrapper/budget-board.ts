/**
 * The tree's budget across turns that run side by side. A turn starts knowing what was left of
 * the budget then (meta.json `env`); alone, that only holds the turn to it, so N turns at once
 * could spend it N times. The board (meta.json `env` PI_SUBAGENTS_BUDGET_BOARD, a folder in the
 * tree directory) closes that: each turn's wrapper posts what its turn has used so far at every
 * model request it sees end, and reads what the others posted. What the tree has spent since
 * this turn started is its own use plus what each other turn added since (its post now less its
 * post when this run began; a turn that started later counts whole). Once that reaches what was
 * left, the tree's total has crossed the budget: the turn is wrapped up. Every running turn does
 * the same at its next request's end, so each goes over by at most the request it had under way.
 */
import fs from "node:fs";
import path from "node:path";
import { roundCost } from "../contracts/usage.js";
import { errorText } from "../lib/values.js";

/** Usage in the budget's units: total tokens (cache included, as pi totals them) and cost. */
export interface Spend {
  tokens: number;
  cost: number;
}

/** What was left of the tree's budget when the turn started (either may be unset). */
export interface BudgetLeft {
  tokens?: number;
  cost?: number;
}

export interface BudgetCrossing {
  name: "tree_budget_tokens" | "tree_budget_cost";
  /** What was left when the turn started. */
  value: number;
  /** What the tree has spent since: this turn's use and the others' since it started. */
  used: number;
}

const NOTHING: Spend = { tokens: 0, cost: 0 };

/** Whether the tree has spent what was left when this turn started (tokens first), and by how much. */
export function budgetCrossing(left: BudgetLeft, own: Spend, others: Spend = NOTHING): BudgetCrossing | undefined {
  const tokens = own.tokens + others.tokens;
  if (left.tokens !== undefined && tokens >= left.tokens) {
    return { name: "tree_budget_tokens", value: left.tokens, used: tokens };
  }
  const cost = roundCost(own.cost + others.cost);
  if (left.cost !== undefined && cost >= left.cost) return { name: "tree_budget_cost", value: left.cost, used: cost };
  return undefined;
}

function spendOf(text: string | undefined): Spend | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as Partial<Spend>;
    const { tokens, cost } = value;
    if (typeof tokens !== "number" || !(tokens >= 0) || typeof cost !== "number" || !(cost >= 0)) return undefined;
    return { tokens, cost };
  } catch {
    return undefined; // a post being replaced is renamed whole; anything else is not one
  }
}

export class BudgetBoard {
  private readonly ownFile: string;
  /** Each other turn's post when this run began: only what it adds after counts against this turn. */
  private readonly baseline: Map<string, Spend>;
  private warned = false;

  /** Opens the board at `dir` for the run `runId` and notes what the others have posted so far. */
  constructor(
    private readonly dir: string,
    runId: string,
    private readonly warn: (line: string) => void,
  ) {
    this.ownFile = `${encodeURIComponent(runId)}.json`;
    try {
      fs.mkdirSync(dir, { recursive: true });
    } catch (err) {
      this.problem(err);
    }
    this.baseline = this.posts();
  }

  /** Posts this turn's use so far (written whole: temp file + rename). */
  post(used: Spend): void {
    const temp = path.join(this.dir, `.${this.ownFile}.tmp`);
    try {
      fs.writeFileSync(temp, JSON.stringify({ tokens: used.tokens, cost: used.cost }));
      fs.renameSync(temp, path.join(this.dir, this.ownFile));
    } catch (err) {
      this.problem(err);
    }
  }

  /** What the other turns have spent since this run began. */
  othersSince(): Spend {
    const since = { tokens: 0, cost: 0 };
    for (const [name, now] of this.posts()) {
      const before = this.baseline.get(name) ?? NOTHING;
      since.tokens += Math.max(0, now.tokens - before.tokens);
      since.cost += Math.max(0, now.cost - before.cost);
    }
    return since;
  }

  /** The other turns' posts that can be read now. */
  private posts(): Map<string, Spend> {
    const posts = new Map<string, Spend>();
    let names: string[];
    try {
      names = fs.readdirSync(this.dir);
    } catch (err) {
      this.problem(err);
      return posts;
    }
    for (const name of names) {
      if (name === this.ownFile || name.startsWith(".") || !name.endsWith(".json")) continue;
      let text: string | undefined;
      try {
        text = fs.readFileSync(path.join(this.dir, name), "utf8");
      } catch {
        text = undefined; // gone with its tree, or unreadable: it counts as nothing
      }
      const spend = spendOf(text);
      if (spend) posts.set(name, spend);
    }
    return posts;
  }

  /** One warning per run: the turn still holds to what was left for it alone. */
  private problem(err: unknown): void {
    if (this.warned) return;
    this.warned = true;
    this.warn(
      `the tree's budget board ${this.dir} cannot be used (${errorText(err)}): this turn is held only to what was left of the budget when it started`,
    );
  }
}
