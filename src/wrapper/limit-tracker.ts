/**
 * A run's per-turn limits (meta.json `limits`), counted from the child's own event
 * stream: `max_turns` (model requests: assistant messages, failed attempts included),
 * `max_tokens` (input + output tokens as usage counts them), `max_cost` (usage `cost.total`),
 * `time_limit` (seconds since the run began). Pure bookkeeping fed events in order, on an
 * injected clock; the run (limits.ts) delivers the wrap-up message and stops the child.
 *
 * counting → (a limit reached while the child still works) wrapping → (no answer in the grace) stopped.
 * - A limit is reached at a message that still works on (a tool call) and whose counts meet
 *   it, or when the time runs out. A terminal message that crosses a limit is the answer: no
 *   wrap-up is due.
 * - The grace: `grace_turns` model requests made once the wrap-up message is in the
 *   conversation, and `grace_seconds` from the moment the limit was reached. A request of the
 *   grace that ends in a tool call again, the last one allowed, stops the run; so does the time.
 * - An outside limit (the tree's budget) wraps up the same way (`reach`), and like the run's
 *   own only at a request that goes on (`goesOn`): an answer is never labelled a wrap-up.
 */
import { effectiveLimits, type TurnLimits } from "../contracts/limits.js";
import type { LimitReport } from "../contracts/result.js";
import { roundCost } from "../contracts/usage.js";
import { userMessageText } from "./inbox.js";
import { assistantFromEvent, type PiEvent } from "./normalize.js";
import { isTerminalStop } from "./stop-reason.js";

/** What a run can be wrapped up by: a `limits` key, the tree's budget, or the person's period budgets. */
export type LimitName =
  | "max_turns"
  | "max_tokens"
  | "max_cost"
  | "time_limit"
  | "tree_budget_tokens"
  | "tree_budget_cost"
  | "daily_budget_usd"
  | "monthly_budget_usd";

/** What the turn has used so far, in the units of the limits. */
export interface LimitUse {
  turns: number;
  /** Input + output tokens (`max_tokens`). */
  tokens: number;
  /** Tokens as pi totals them, cache reads and writes included (the tree's budget counts these). */
  totalTokens: number;
  cost: number;
  seconds: number;
}

export type LimitStep =
  | { kind: "none" }
  /** Tell the child `message` (a live message before its next model request). */
  | { kind: "wrap_up"; limit: LimitReport; message: string }
  /** The grace is over without an answer: stop the run (`interrupted`), `reason` its error. */
  | { kind: "stop"; limit: LimitReport; reason: string };

const NONE: LimitStep = { kind: "none" };

const WHAT: Record<LimitName, string> = {
  max_turns: "model requests",
  max_tokens: "tokens (input + output)",
  max_cost: "cost in USD",
  time_limit: "seconds",
  tree_budget_tokens: "tokens of the tree's budget",
  tree_budget_cost: "USD of the tree's budget",
  daily_budget_usd: "USD of the person's daily budget, spent by all their agents today",
  monthly_budget_usd: "USD of the person's monthly budget, spent by all their agents this month",
};

const roundSeconds = (ms: number): number => Math.round(ms / 100) / 10;

/** The live message that tells the child to wrap up. */
export function wrapUpMessage(limit: LimitReport, graceTurns: number, graceSeconds: number): string {
  const what = WHAT[limit.name as LimitName] ?? limit.name;
  return [
    `[LIMIT ${limit.name}] This turn has reached its limit: ${limit.used} of ${limit.value} ${what}.`,
    "Finish the tool call under way, start nothing new, and answer now with: what is done, what is left,",
    "and the state of the files (what you changed, what is half-done or unsaved).",
    `You have ${graceTurns} more model request${graceTurns === 1 ? "" : "s"} and ${graceSeconds} s for this answer;`,
    "after that the turn is stopped.",
  ].join(" ");
}

export class LimitTracker {
  private readonly limits: ReturnType<typeof effectiveLimits>;
  private readonly startedAt: number;
  private phase: "counting" | "wrapping" | "stopped" = "counting";
  private turns = 0;
  private tokens = 0;
  private totalTokens = 0;
  private cost = 0;
  private limit: LimitReport | undefined;
  private reachedAt = 0;
  private message: string | undefined;
  /** The wrap-up message is in the child's conversation: its requests from here on are the grace. */
  private delivered = false;
  private graceRequests = 0;
  private lastText = "";
  /** The latest model request ended in a tool call: the turn goes on (an answer ends it). */
  private working = false;

  constructor(
    limits: TurnLimits,
    private readonly now: () => number,
  ) {
    this.limits = effectiveLimits(limits);
    this.startedAt = now();
  }

  /** The limit reached, once one is. */
  get reached(): LimitReport | undefined {
    return this.limit;
  }

  /**
   * The limit the turn was wrapped up by: its wrap-up reached the conversation, or the run
   * was stopped for it. A limit whose message the child never read (it answered first) is not
   * one: the answer is the child's own.
   */
  get wrappedUp(): LimitReport | undefined {
    return this.delivered || this.phase === "stopped" ? this.limit : undefined;
  }

  /** The wrap-up message, once a limit is reached. */
  get wrapUpText(): string | undefined {
    return this.message;
  }

  /** The latest assistant text that was not empty: the report of a turn stopped after its grace. */
  get lastAssistantText(): string {
    return this.lastText;
  }

  get used(): LimitUse {
    return {
      turns: this.turns,
      tokens: this.tokens,
      totalTokens: this.totalTokens,
      cost: roundCost(this.cost),
      seconds: roundSeconds(this.now() - this.startedAt),
    };
  }

  /** Whether the latest model request went on to a tool call rather than answering. */
  get goesOn(): boolean {
    return this.working;
  }

  /** When `check` has something to decide next (ms since the epoch), or undefined. */
  nextCheckAt(): number | undefined {
    if (this.phase === "counting") return this.startedAt + this.limits.time_limit * 1000;
    if (this.phase === "wrapping") return this.reachedAt + this.limits.grace_seconds * 1000;
    return undefined;
  }

  observe(event: PiEvent): LimitStep {
    if (this.message !== undefined && !this.delivered && userMessageText(event) === this.message) {
      this.delivered = true;
      return NONE;
    }
    const assistant = assistantFromEvent(event);
    if (!assistant) return NONE;
    this.turns += 1;
    this.tokens += assistant.usage.input + assistant.usage.output;
    this.totalTokens += assistant.usage.totalTokens;
    this.cost += assistant.usage.cost.total;
    if (assistant.text) this.lastText = assistant.text;
    this.working = !isTerminalStop(assistant.stopReason, assistant.hasToolCall);
    if (!this.working) return NONE;
    if (this.phase === "wrapping") return this.onGraceRequest();
    if (this.phase !== "counting") return NONE;
    return this.countedOver() ?? NONE;
  }

  /** The time limit and the grace's seconds, as of now. */
  check(): LimitStep {
    const at = this.nextCheckAt();
    if (at === undefined || this.now() < at) return NONE;
    if (this.phase === "counting") {
      return this.reach("time_limit", this.limits.time_limit, roundSeconds(this.now() - this.startedAt));
    }
    return this.stop(`no answer within the grace of ${this.limits.grace_seconds} s`);
  }

  /** A limit from outside (the tree's budget): wraps up like one of the run's own; nothing once one is reached. */
  reach(name: LimitName, value: number, used: number): LimitStep {
    if (this.phase !== "counting") return NONE;
    this.phase = "wrapping";
    this.limit = { name, value, used };
    this.reachedAt = this.now();
    this.message = wrapUpMessage(this.limit, this.limits.grace_turns, this.limits.grace_seconds);
    return { kind: "wrap_up", limit: this.limit, message: this.message };
  }

  /** The wrap-up cannot reach the child (its message could not be written): nothing to wait for, the run stops now. */
  undeliverable(why: string): LimitStep {
    if (this.phase !== "wrapping") return NONE;
    return this.stop(`the wrap-up message could not be given to the child (${why})`);
  }

  private countedOver(): LimitStep | undefined {
    const { max_turns, max_tokens, max_cost } = this.limits;
    if (max_turns !== undefined && this.turns >= max_turns) return this.reach("max_turns", max_turns, this.turns);
    if (max_tokens !== undefined && this.tokens >= max_tokens) return this.reach("max_tokens", max_tokens, this.tokens);
    if (max_cost !== undefined && this.cost >= max_cost) return this.reach("max_cost", max_cost, roundCost(this.cost));
    return undefined;
  }

  private onGraceRequest(): LimitStep {
    if (!this.delivered) return NONE;
    this.graceRequests += 1;
    if (this.graceRequests < this.limits.grace_turns) return NONE;
    const n = this.limits.grace_turns;
    return this.stop(`no answer within the grace of ${n} model request${n === 1 ? "" : "s"}`);
  }

  private stop(why: string): LimitStep {
    this.phase = "stopped";
    const limit = this.limit as LimitReport;
    return { kind: "stop", limit, reason: `limit ${limit.name} reached (${limit.used} of ${limit.value}): ${why}` };
  }
}
