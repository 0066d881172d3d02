/**
 * Fallback models: when the child's model fails with a provider error after pi's own
 * retries, the turn goes on with the next model of meta.json `fallbackModels` in the same
 * session (`--session`, a new pi), told to continue. Pure bookkeeping: which model is next,
 * what each failed attempt was (result.json `attempts`), and the counts carried across the
 * pi processes of one run; run.ts starts the processes.
 */
import path from "node:path";
import type { ModelSwitchRecord } from "../contracts/events.js";
import type { MetaV1 } from "../contracts/meta.js";
import {
  attemptMessage,
  classifyProviderError,
  classifyStartFailure,
  type ProviderErrorInfo,
  switchesModel,
} from "../contracts/provider-errors.js";
import type { ModelAttempt } from "../contracts/result.js";
import { addUsage, emptyUsage, type Usage } from "../contracts/usage.js";
import type { ChildExit, Outcome } from "./outcome.js";

/** What one pi process of the run counted (an OutcomeTracker's totals). */
export interface AttemptTotals {
  usage: Usage;
  turns: number;
  toolCalls: number;
}

/** How one pi process ended, as the run saw it. */
export interface AttemptEnd {
  outcome: Outcome;
  /** The model it ran (`provider/id`): the one asked for, else what pi named. */
  model: string | undefined;
  exitCode: number | null;
  stderrTail: string;
  /** When it ended (ms since epoch). */
  at: number;
}

/** The next model to run, and the attempt that failed before it. */
export interface ModelSwitch {
  from: ModelAttempt;
  to: string;
  /** The prompt that tells the child to go on. */
  prompt: string;
  /** The events.jsonl record of the switch. */
  record: ModelSwitchRecord;
}

/** What afterExit reads of the pi process that ended (its OutcomeTracker). */
export interface EndedPi extends AttemptTotals {
  readonly resolvedModel: string | undefined;
  finish(exit: ChildExit): Outcome;
}

/** The error of an attempt that ended as an error, with its class; undefined for any other end. */
export function attemptError(end: AttemptEnd): { info: ProviderErrorInfo; message: string } | undefined {
  const { outcome } = end;
  if (outcome.status !== "failed") return undefined;
  if (outcome.stopReason === "error") {
    const message = outcome.errorMessage ?? "the provider returned an error";
    return { info: classifyProviderError(message), message };
  }
  // pi that could not start (exit 1, no assistant message): a missing key or an unknown model.
  if (outcome.stopReason === undefined && end.exitCode !== 0 && end.exitCode !== null) {
    const info = classifyStartFailure(end.stderrTail);
    return info ? { info, message: end.stderrTail.trim() || (outcome.errorMessage ?? "") } : undefined;
  }
  return undefined;
}

/** The prompt the next model's pi gets: the conversation so far is in the session, so only this is new. */
export function continuePrompt(from: string, to: string, errorClass: string): string {
  return (
    `[subagent] The model ${from} failed with a provider error (${errorClass}); this turn now runs on ${to}. ` +
    "The conversation above is this turn's work so far: continue the task from where it stopped, " +
    "without redoing what is already done, and end with the answer the task asks for."
  );
}

export class FallbackChain {
  private readonly queue: string[];
  private current: string | undefined;
  private readonly failed: ModelAttempt[] = [];
  private readonly carried: AttemptTotals = { usage: emptyUsage(), turns: 0, toolCalls: 0 };

  constructor(first: string | undefined, fallbackModels: readonly string[] = []) {
    this.current = first;
    this.queue = fallbackModels.filter((model, index) => model !== first && fallbackModels.indexOf(model) === index);
  }

  /** The model the run is on now (undefined: pi's default). */
  get model(): string | undefined {
    return this.current;
  }

  /** The model a switch would move to now (the run's standby is started for it: standby.ts). */
  get upcoming(): string | undefined {
    return this.queue[0];
  }

  /** Every failed attempt so far, in order (result.json `attempts`). */
  get attempts(): readonly ModelAttempt[] {
    return this.failed;
  }

  /**
   * One pi process ended. Records its attempt if it ended on a provider error, and returns
   * the switch to the next model when the error's class moves the turn on and a model is left.
   */
  afterAttempt(end: AttemptEnd, totals: AttemptTotals): ModelSwitch | undefined {
    const error = attemptError(end);
    if (!error) return undefined;
    const attempt: ModelAttempt = {
      model: end.model ?? this.current ?? "unknown",
      error_class: error.info.errorClass,
      message: attemptMessage(error.message),
      at: new Date(end.at).toISOString(),
      ...(error.info.retryAfterMs !== undefined && { retry_after_ms: error.info.retryAfterMs }),
    };
    this.failed.push(attempt);
    if (!switchesModel(error.info.errorClass)) return undefined;
    const to = this.queue.shift();
    if (to === undefined) return undefined;
    this.carry(totals);
    this.current = to;
    return {
      from: attempt,
      to,
      prompt: continuePrompt(attempt.model, to, attempt.error_class),
      record: {
        type: "model_switch",
        from: attempt.model,
        to,
        errorClass: attempt.error_class,
        message: attempt.message,
      },
    };
  }

  /** afterAttempt for a pi that exited, as its tracker saw it. */
  afterExit(pi: EndedPi, exit: ChildExit, at: number): ModelSwitch | undefined {
    const end = {
      outcome: pi.finish(exit),
      model: this.current ?? pi.resolvedModel,
      exitCode: exit.exitCode,
      stderrTail: exit.stderrTail,
      at,
    };
    return this.afterAttempt(end, { usage: pi.usage, turns: pi.turns, toolCalls: pi.toolCalls });
  }

  /** The run's totals: the earlier pi processes' and the current one's. */
  totals(current: AttemptTotals): AttemptTotals {
    const usage = emptyUsage();
    addUsage(usage, this.carried.usage);
    addUsage(usage, current.usage);
    return {
      usage,
      turns: this.carried.turns + current.turns,
      toolCalls: this.carried.toolCalls + current.toolCalls,
    };
  }

  /** Adds an ended pi's counts to the run's (a switch, or a repair round in the same session). */
  carry(totals: AttemptTotals): void {
    addUsage(this.carried.usage, totals.usage);
    this.carried.turns += totals.turns;
    this.carried.toolCalls += totals.toolCalls;
  }
}

/**
 * meta.json as the pi of a switch to `to` is started from: the run's, on `to`, the continue
 * prompt as its task. Its arguments do not depend on the prompt (the task only decides
 * `--no-skills`, for a `/skill:` task, which a continue prompt never is), so the standby for
 * `to` is started with them before the prompt is known.
 */
export function switchedMeta(meta: MetaV1, to: string, prompt = continuePrompt("", to, "")): MetaV1 {
  return { ...meta, resolvedModel: to, task: prompt };
}

/**
 * The session the run's pi processes share. A run with fallbacks or checks (a repair goes
 * on in the same conversation) and no session of its own gets one beside result.json, so
 * that a switch or a repair keeps the conversation.
 */
export function fallbackSessionPath(meta: MetaV1): string | undefined {
  if (meta.sessionPath) return meta.sessionPath;
  if (!meta.verify && (!meta.fallbackModels || meta.fallbackModels.length === 0)) return undefined;
  return path.join(path.dirname(meta.resultPath), "fallback-session.jsonl");
}
