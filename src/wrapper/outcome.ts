import type { EventRecordBody } from "../contracts/events.js";
import type { ResultV1 } from "../contracts/result.js";
import type { Usage } from "../contracts/usage.js";
import { addUsage, emptyUsage } from "../contracts/usage.js";
import { type AssistantSummary, assistantFromEvent, normalizePiEvent, type PiEvent } from "./normalize.js";
import {
  candidateOf,
  type Decision,
  decidedOf,
  hasAnswered,
  initialOutcome,
  type OutcomeEvent,
  type OutcomeState,
  type OutcomeStep,
  outcomeEventOf,
  provisionalOf,
  type Transition,
  transition,
} from "./outcome-phases.js";

export type { Decision, Transition } from "./outcome-phases.js";

export interface Observation {
  records: EventRecordBody[];
  transition: Transition;
}

/** How the child process ended, for runs it ended without a terminal message. */
export interface ChildExit {
  exitCode: number | null;
  signal: string | null;
  stderrTail: string;
}

/** The part of result.json the decision fills in; the run adds counts, times and the child's exit. */
export type Outcome = Pick<
  ResultV1,
  "status" | "stopReason" | "rawStopReason" | "finalText" | "abortReason" | "abortSource" | "errorMessage"
>;

export interface OutcomeOptions {
  /**
   * The pi emits `agent_settled` when all its automatic work is done (pi 0.80.4 and later):
   * a terminal message is then provisional until `agent_settled`. Default false; the first
   * `agent_settled` in the stream turns it on anyway.
   */
  settles?: boolean;
}

const NONE: Transition = { kind: "none" };

/**
 * The terminal decision of one run, fed pi events in order, and the counts of its pi (usage,
 * turns, tool calls, model). Pure bookkeeping: no clocks, no processes; the run loop turns
 * transitions into timers and signals. What decides is the phase machine of
 * outcome-phases.ts (its rules are there); this class holds its state and counts.
 */
export class OutcomeTracker {
  private state: OutcomeState;
  private readonly usageSum: Usage = emptyUsage();
  private turnCount = 0;
  private toolCallCount = 0;
  private lastModel: string | undefined;

  constructor(options: OutcomeOptions = {}) {
    this.state = initialOutcome(options.settles ?? false);
  }

  /** The run's outcome once it is known (pi's work is over, or a marker, signal or time-out decided). */
  get decided(): Decision | undefined {
    return decidedOf(this.state.phase);
  }

  /** A terminal message that would decide if the child exited now, while pi may still go on. */
  get provisional(): Decision | undefined {
    return provisionalOf(this.state.phase);
  }

  /** The child has answered: the outcome is known, or a completed answer waits for pi to settle. */
  get answered(): boolean {
    return hasAnswered(this.state.phase);
  }

  /** Whether this pi is known to emit `agent_settled` (told, or seen). */
  get emitsSettled(): boolean {
    return this.state.settles;
  }

  /** Summed over every assistant message so far (a copy: the tracker's own sum stays its own). */
  get usage(): Usage {
    const copy = emptyUsage();
    addUsage(copy, this.usageSum);
    return copy;
  }

  /** Assistant messages received (failed attempts included). */
  get turns(): number {
    return this.turnCount;
  }

  /** Tool executions started. */
  get toolCalls(): number {
    return this.toolCallCount;
  }

  /** The model the latest assistant message named (`provider/id`). */
  get resolvedModel(): string | undefined {
    return this.lastModel;
  }

  /** Tell the tracker whether its pi emits `agent_settled` (known before the first event). */
  expectSettled(settles: boolean): void {
    this.advance({ type: "expect_settled", settles });
  }

  observe(event: PiEvent): Observation {
    const records = normalizePiEvent(event);
    const assistant = assistantFromEvent(event);
    if (assistant) this.count(assistant);
    if (event.type === "tool_execution_start") this.toolCallCount += 1;
    const happened = assistant ? { type: "assistant" as const, message: assistant } : outcomeEventOf(event);
    if (!happened) return { records, transition: NONE };
    const step = this.advance(happened);
    records.push(...step.records);
    return { records, transition: step.transition };
  }

  /**
   * Live messages that pi accepted but has not delivered yet, as known outside pi's stdout
   * (the task extension inside the child). Counts like pi's own `queue_update`: on a pi
   * without `agent_settled` a terminal message is provisional while any are pending.
   */
  setLivePending(count: number): Transition {
    return this.advance({ type: "live_pending", count }).transition;
  }

  /** A signal or time-out: decides the run unless its outcome is already known. */
  interrupt(status: "interrupted" | "timed_out", errorMessage: string): Transition {
    return this.advance({ type: "interrupt", status, errorMessage }).transition;
  }

  /** The outcome once the child is gone: the decision, else the last terminal message, else how it died. */
  finish(exit: ChildExit): Outcome {
    const decision = candidateOf(this.state.phase);
    const last = this.state.lastAssistant;
    if (decision) {
      const message = decision.message ?? last;
      return {
        status: decision.status,
        ...messageFields(message),
        ...(decision.abortReason !== undefined && { abortReason: decision.abortReason }),
        ...(decision.abortSource !== undefined && { abortSource: decision.abortSource }),
        ...(decision.errorMessage !== undefined && { errorMessage: decision.errorMessage }),
      };
    }
    const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.exitCode ?? "unknown"}`;
    const tail = exit.stderrTail.trim();
    if (last?.stopReason === "toolUse") {
      return {
        status: "incomplete",
        ...messageFields(last),
        errorMessage: `pi ${how} while its last message was waiting for a tool${tail ? `: ${tail}` : ""}`,
      };
    }
    return {
      status: "failed",
      ...messageFields(last),
      errorMessage: `pi ${how} without a final answer${tail ? `: ${tail}` : ""}`,
    };
  }

  private count(message: AssistantSummary): void {
    this.turnCount += 1;
    addUsage(this.usageSum, message.usage);
    if (message.model) this.lastModel = message.model;
  }

  private advance(event: OutcomeEvent): OutcomeStep {
    const step = transition(this.state, event);
    this.state = step.state;
    return step;
  }
}

function messageFields(
  message: AssistantSummary | undefined,
): Pick<Outcome, "stopReason" | "rawStopReason" | "finalText"> {
  return {
    ...(message?.stopReason !== undefined && { stopReason: message.stopReason }),
    ...(message?.rawStopReason !== undefined && { rawStopReason: message.rawStopReason }),
    finalText: message?.text ?? "",
  };
}
