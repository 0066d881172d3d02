/**
 * A run's per-turn limits at work (meta.json `limits`): the pure LimitTracker
 * (limit-tracker.ts) fed the child's events and the run's clock, and the I/O around it:
 * - the wrap-up message goes to the child through the run's live-message inbox (inbox.ts,
 *   in-child/inbox-feeder.ts), as a steering message before its next model request. A run
 *   whose meta.json names no `inboxPath` (a script) gets a private inbox in the system's temp
 *   folder for this, removed when the run is over;
 * - the message file is `limit-wrap-up.json` (contracts/inbox.ts: the child takes it only
 *   while a request that called a tool is under way, so it never makes an answered turn ask
 *   the model again). Not delivered by the run's end (the child answered first), it is
 *   removed, so no later turn is handed it, and result.json carries no `limit`: the child
 *   was never told, its answer is its own;
 * - the tree's budget (meta.json `env` PI_SUBAGENTS_BUDGET_LEFT_TOKENS / _COST, what was left
 *   of it when the turn started) wraps the turn up the same way, as `tree_budget_tokens` /
 *   `tree_budget_cost`, once the tree has spent that much since: this turn's use plus what the
 *   turns beside it posted to the budget board (`PI_SUBAGENTS_BUDGET_BOARD`, budget-board.ts).
 *   Checked at each request that goes on; an answer that crosses it is the turn's answer.
 * - so do the person's period budgets (meta.json `env` PI_SUBAGENTS_BUDGET_DAILY_USD /
 *   _MONTHLY_USD), as `daily_budget_usd` / `monthly_budget_usd`: at each request that goes on,
 *   the spending ledger in PI_SUBAGENTS_LEDGER (what every tree of the person has spent today
 *   and this month, this request included) is read for what was appended since.
 * - and so does the tree's spend gate (meta.json `env` PI_SUBAGENTS_SPEND_GATE, settings
 *   `confirm_every_usd`) once the person has said no to spending more: looked at every
 *   BUDGET_POLL_MS and at each request that goes on, it wraps the turn up as `tree_budget_cost`.
 */
import fs from "node:fs";
import path from "node:path";
import { LedgerReader } from "../contracts/budget-ledger.js";
import { type PeriodBudgets, periodOverrun } from "../contracts/budget-periods.js";
import { ENV } from "../contracts/env.js";
import type { LimitRecord } from "../contracts/events.js";
import { WRAP_UP_FILE } from "../contracts/inbox.js";
import type { TurnLimits } from "../contracts/limits.js";
import type { MetaV1 } from "../contracts/meta.js";
import type { LimitReport } from "../contracts/result.js";
import { readSpendGateSync } from "../contracts/spend-gate.js";
import { roundCost } from "../contracts/usage.js";
import { errorText } from "../lib/values.js";
import { BudgetBoard, type BudgetLeft, budgetCrossing } from "./budget-board.js";
import { type LimitStep, LimitTracker } from "./limit-tracker.js";
import type { PiEvent } from "./normalize.js";
import type { RunTimers } from "./run-timers.js";

/**
 * How often a turn under a shared budget looks at the board between its own requests: a turn
 * in a long tool call learns the tree has crossed the budget before its next request.
 */
export const BUDGET_POLL_MS = 500;

/** What the run does for the limits. */
export interface LimitHooks {
  now(): number;
  timers: RunTimers;
  record(record: LimitRecord): void;
  warn(line: string): void;
  /** The grace is over without an answer: stop the child, the run `interrupted` with `reason`. */
  stop(reason: string): void;
  /** The child has given its answer (the run's outcome is known or pending pi's settling): time no longer wraps it up. */
  answered(): boolean;
}

function positive(raw: string | undefined): number | undefined {
  const value = Number(raw);
  return raw !== undefined && raw.trim() !== "" && Number.isFinite(value) && value > 0 ? value : undefined;
}

export class RunLimits {
  private readonly tracker: LimitTracker;
  private cancelCheck: (() => void) | undefined;
  private cancelBoardPoll: (() => void) | undefined;
  private inboxDir: string | undefined;
  private privateInbox = false;
  private over = false;
  /** What was left of the tree's budget when the turn started; undefined without a budget. */
  private readonly budgetLeft: BudgetLeft | undefined;
  private readonly board: BudgetBoard | undefined;
  /** The person's period budgets, and the spending ledger read as it grows (only with one of them). */
  private readonly periodBudgets: PeriodBudgets = {};
  private readonly ledger: LedgerReader | undefined;
  private ledgerProblemSaid = false;
  /** The tree's spend gate, when the settings ask the person before the tree spends more. */
  private readonly gateFile: string | undefined;

  private constructor(
    meta: MetaV1 & { limits: TurnLimits },
    private readonly hooks: LimitHooks,
  ) {
    this.tracker = new LimitTracker(meta.limits, hooks.now);
    const daily = positive(meta.env?.[ENV.budgetDailyUsd]);
    const monthly = positive(meta.env?.[ENV.budgetMonthlyUsd]);
    this.periodBudgets = { ...(daily && { daily_usd: daily }), ...(monthly && { monthly_usd: monthly }) };
    const ledgerDir = meta.env?.[ENV.ledgerDir]?.trim();
    if (ledgerDir && (daily || monthly)) this.ledger = new LedgerReader(ledgerDir);
    this.gateFile = meta.env?.[ENV.spendGate]?.trim() || undefined;
    const tokens = positive(meta.env?.[ENV.budgetLeftTokens]);
    const cost = positive(meta.env?.[ENV.budgetLeftCost]);
    if (tokens === undefined && cost === undefined) return;
    this.budgetLeft = { ...(tokens !== undefined && { tokens }), ...(cost !== undefined && { cost }) };
    const boardDir = meta.env?.[ENV.budgetBoard];
    // Opened before the child starts: the others' posts now are what was counted as spent.
    if (boardDir) this.board = new BudgetBoard(boardDir, meta.runId, hooks.warn);
  }

  /** The run's limits, or undefined when meta.json sets none (then nothing is counted). */
  static open(meta: MetaV1, hooks: LimitHooks): RunLimits | undefined {
    if (!meta.limits) return undefined;
    const limits = new RunLimits({ ...meta, limits: meta.limits }, hooks);
    limits.schedule();
    limits.pollBoard();
    return limits;
  }

  /** The limit the child was wrapped up by (told, or stopped after the grace): result.json `limit`. */
  get reached(): LimitReport | undefined {
    return this.tracker.wrappedUp;
  }

  /** The latest assistant text that was not empty. */
  get lastAssistantText(): string {
    return this.tracker.lastAssistantText;
  }

  /**
   * The inbox the wrap-up goes to: meta.json's own (`shared`), else a private one made now at
   * `privateDir` (in the run's own temp folder, run-temp.ts). Undefined when none can be made
   * (a warning; the limits then only stop the run).
   */
  inbox(shared: string | undefined, privateDir: string): string | undefined {
    if (shared) {
      this.inboxDir = shared;
      return shared;
    }
    try {
      fs.mkdirSync(privateDir, { mode: 0o700 });
      this.inboxDir = privateDir;
      this.privateInbox = true;
    } catch (err) {
      this.hooks.warn(`no inbox for the limits' wrap-up message (${errorText(err)}): a limit stops the run at once`);
    }
    return this.inboxDir;
  }

  observe(event: PiEvent): void {
    if (this.over) return;
    const requests = this.tracker.used.turns;
    this.apply(this.tracker.observe(event));
    // The budget moves only when a model request ends.
    if (this.tracker.used.turns === requests) return;
    if (this.budgetLeft) this.checkBudget(this.budgetLeft);
    this.checkPeriodBudgets();
    this.checkGate();
  }

  /** The run is over: no more timers; an undelivered wrap-up and a private inbox are removed. */
  close(): void {
    this.over = true;
    this.cancelCheck?.();
    this.cancelBoardPoll?.();
    if (!this.inboxDir) return;
    try {
      if (this.privateInbox) fs.rmSync(this.inboxDir, { recursive: true, force: true });
      else fs.rmSync(path.join(this.inboxDir, WRAP_UP_FILE), { force: true });
    } catch {
      // a temp folder left behind is not worth a warning in the result
    }
  }

  /**
   * Posts this turn's use (the answer's too: the others count it), then wraps the turn up once
   * the tree has spent what was left when it started. Only a request that goes on: an answer
   * that crosses the budget is the turn's answer, not a wrap-up.
   */
  private checkBudget(left: BudgetLeft, post = true): void {
    const used = this.tracker.used;
    const own = { tokens: used.totalTokens, cost: used.cost };
    if (post) this.board?.post(own);
    if (!this.tracker.goesOn) return;
    const crossing = budgetCrossing(left, own, this.board?.othersSince());
    if (crossing) this.apply(this.tracker.reach(crossing.name, crossing.value, crossing.used));
  }

  /** While the turn goes on: has the person said no to the tree spending more? */
  private checkGate(): void {
    if (!this.gateFile || !this.tracker.goesOn) return;
    const declined = readSpendGateSync(this.gateFile);
    if (declined?.declined) {
      this.apply(this.tracker.reach("tree_budget_cost", declined.ceiling_usd, declined.declined.spent_usd));
    }
  }

  /** After a model request that goes on (an answer is never wrapped up): has the ledger reached a period budget? */
  private checkPeriodBudgets(): void {
    if (!this.ledger || !this.tracker.goesOn) return;
    let overrun: ReturnType<typeof periodOverrun>;
    try {
      overrun = periodOverrun(this.periodBudgets, this.ledger.spend(this.hooks.now()));
    } catch (err) {
      if (!this.ledgerProblemSaid) this.hooks.warn(`${errorText(err)}: the period budgets are not checked in this run`);
      this.ledgerProblemSaid = true;
      return;
    }
    if (overrun) {
      this.apply(this.tracker.reach(`${overrun.period}_budget_usd`, overrun.budget, roundCost(overrun.spent)));
    }
  }

  private apply(step: LimitStep): void {
    if (step.kind === "none") return;
    if (step.kind === "wrap_up") {
      this.hooks.record({ type: "limit", phase: "reached", ...step.limit });
      const problem = this.deliver(step.message);
      // A child that cannot be told gets no grace: waiting it out would only hold the run.
      if (problem) {
        this.apply(this.tracker.undeliverable(problem));
        return;
      }
    } else {
      this.hooks.record({ type: "limit", phase: "stopped", ...step.limit });
      this.hooks.stop(step.reason);
    }
    this.schedule();
  }

  /** The wrap-up message, written whole (temp file + rename) into the inbox; the problem when it cannot be. */
  private deliver(text: string): string | undefined {
    if (!this.inboxDir) return "the run has no inbox";
    const file = path.join(this.inboxDir, WRAP_UP_FILE);
    const temp = path.join(this.inboxDir, `.${WRAP_UP_FILE}.tmp`);
    try {
      fs.writeFileSync(temp, JSON.stringify({ id: "limit-wrap-up", text }));
      fs.renameSync(temp, file);
      return undefined;
    } catch (err) {
      fs.rm(temp, { force: true }, () => undefined);
      return `${file}: ${errorText(err)}`;
    }
  }

  /**
   * Between this turn's requests, what the others post can cross the budget too, and the
   * person can say no: look every BUDGET_POLL_MS until the turn is wrapped up (by any limit) or over.
   */
  private pollBoard(): void {
    const left = this.budgetLeft;
    const board = this.board && left;
    if ((!board && !this.gateFile) || this.over || this.tracker.reached) return;
    this.cancelBoardPoll = this.hooks.timers.after(BUDGET_POLL_MS, () => {
      this.cancelBoardPoll = undefined;
      if (this.over || this.hooks.answered()) return;
      if (board && left) this.checkBudget(left, false);
      if (!this.tracker.reached) this.checkGate();
      this.pollBoard();
    });
  }

  /** One timer at a time: the time limit, then the grace's seconds. */
  private schedule(): void {
    this.cancelCheck?.();
    this.cancelCheck = undefined;
    const at = this.tracker.nextCheckAt();
    if (at === undefined || this.over) return;
    this.cancelCheck = this.hooks.timers.after(Math.max(0, at - this.hooks.now()), () => {
      this.cancelCheck = undefined;
      // A time limit that runs out while the child lingers after its answer changes nothing.
      if (this.hooks.answered()) return;
      const step = this.tracker.check();
      // A timer that fired a moment early (the clock's granularity) waits for the rest.
      if (step.kind === "none") this.schedule();
      else this.apply(step);
    });
  }
}
