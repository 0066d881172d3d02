import type { AbortSource, EventRecordBody, StopReason } from "../contracts/events.js";
import type { ResultV1, RunStatus } from "../contracts/result.js";
import type { Usage } from "../contracts/usage.js";
import { addUsage, emptyUsage } from "../contracts/usage.js";
import { findAbortMarker } from "./abort-marker.js";
import { type AssistantSummary, assistantFromEvent, normalizePiEvent, type PiEvent } from "./normalize.js";
import { isTerminalStop } from "./stop-reason.js";

/** What decided a run. The first decision wins; later messages and signals change nothing. */
export interface Decision {
  status: RunStatus;
  /** Set when an assistant message decided (absent for signals and time-outs). */
  message?: AssistantSummary;
  abortReason?: string;
  abortSource?: AbortSource;
  errorMessage?: string;
  /**
   * An `error` message is not final while pi may still retry: an `auto_retry_start` (or an
   * `agent_end`/`compaction_end` with `willRetry`) that follows it takes the decision back.
   */
  retryable: boolean;
}

export type Transition =
  | { kind: "none" }
  /** The run's outcome is known. `stopNow`: stop the child at once instead of after grace. */
  | { kind: "decided"; decision: Decision; stopNow: boolean }
  /** pi is retrying the error that had decided; the run is live again. */
  | { kind: "revoked" };

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
export type Outcome = Pick<ResultV1, "status" | "stopReason" | "rawStopReason" | "finalText" | "abortReason" | "abortSource" | "errorMessage">;

const NONE: Transition = { kind: "none" };

function statusForStop(stopReason: StopReason | undefined): RunStatus {
  switch (stopReason) {
    case "stop":
      return "completed";
    case "length":
      return "truncated";
    case "aborted":
      return "aborted";
    default:
      return "failed";
  }
}

/**
 * The terminal decision of one run, fed pi events in order. Pure bookkeeping: no clocks,
 * no processes; the run loop turns transitions into timers and signals.
 */
export class OutcomeTracker {
  private decision: Decision | undefined;
  private lastAssistant: AssistantSummary | undefined;
  private readonly usageSum: Usage = emptyUsage();
  private turnCount = 0;
  private toolCallCount = 0;
  private lastModel: string | undefined;

  get decided(): Decision | undefined {
    return this.decision;
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

  observe(event: PiEvent): Observation {
    const records = normalizePiEvent(event);
    const assistant = assistantFromEvent(event);
    if (assistant) return { records, transition: this.onAssistant(assistant, records) };
    switch (event.type) {
      case "tool_execution_start":
        this.toolCallCount += 1;
        return { records, transition: NONE };
      case "auto_retry_start":
        return { records, transition: this.onRetry() };
      case "agent_end":
      case "compaction_end":
        return { records, transition: event.willRetry === true ? this.onRetry() : NONE };
      case "agent_settled":
        // Newer pi: nothing more will be retried, so a pending error is final.
        if (this.decision) this.decision.retryable = false;
        return { records, transition: NONE };
      default:
        return { records, transition: NONE };
    }
  }

  /** A signal or time-out: decides the run unless a message already did. */
  interrupt(status: "interrupted" | "timed_out", errorMessage: string): Transition {
    if (this.decision) return NONE;
    this.decision = { status, errorMessage, retryable: false };
    return { kind: "decided", decision: this.decision, stopNow: true };
  }

  /** The outcome once the child is gone. */
  finish(exit: ChildExit): Outcome {
    const decision = this.decision;
    if (decision) {
      const message = decision.message ?? this.lastAssistant;
      return {
        status: decision.status,
        ...messageFields(message),
        ...(decision.abortReason !== undefined && { abortReason: decision.abortReason }),
        ...(decision.abortSource !== undefined && { abortSource: decision.abortSource }),
        ...(decision.errorMessage !== undefined && { errorMessage: decision.errorMessage }),
      };
    }
    const last = this.lastAssistant;
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

  private onAssistant(message: AssistantSummary, records: EventRecordBody[]): Transition {
    this.turnCount += 1;
    addUsage(this.usageSum, message.usage);
    if (message.model) this.lastModel = message.model;
    if (this.decision) return NONE;
    this.lastAssistant = message;

    const markerReason = findAbortMarker(message.textBlocks);
    if (markerReason !== undefined) {
      records.push({ type: "abort", reason: markerReason, source: "marker" });
      this.decision = { status: "aborted", message, abortReason: markerReason, abortSource: "marker", retryable: false };
      return { kind: "decided", decision: this.decision, stopNow: true };
    }
    if (!isTerminalStop(message.stopReason, message.hasToolCall)) return NONE;

    const status = statusForStop(message.stopReason);
    const decision: Decision = { status, message, retryable: message.stopReason === "error" };
    if (message.stopReason === "aborted") {
      decision.abortReason = message.errorMessage ?? "aborted by pi";
      decision.abortSource = "child";
      records.push({ type: "abort", reason: decision.abortReason, source: "child" });
    }
    if (message.stopReason === "error") decision.errorMessage = message.errorMessage ?? "the provider returned an error";
    this.decision = decision;
    return { kind: "decided", decision, stopNow: false };
  }

  private onRetry(): Transition {
    if (!this.decision?.retryable) return NONE;
    this.decision = undefined;
    return { kind: "revoked" };
  }
}

function messageFields(message: AssistantSummary | undefined): Pick<Outcome, "stopReason" | "rawStopReason" | "finalText"> {
  return {
    ...(message?.stopReason !== undefined && { stopReason: message.stopReason }),
    ...(message?.rawStopReason !== undefined && { rawStopReason: message.rawStopReason }),
    finalText: message?.text ?? "",
  };
}
