import type { AbortSource, EventRecordBody, StopReason } from "../contracts/events.js";
import type { ResultV1, RunStatus } from "../contracts/result.js";
import type { Usage } from "../contracts/usage.js";
import { addUsage, emptyUsage } from "../contracts/usage.js";
import { findAbortMarker } from "./abort-marker.js";
import { type AssistantSummary, assistantFromEvent, normalizePiEvent, type PiEvent } from "./normalize.js";
import { isTerminalStop } from "./stop-reason.js";

/** What decided a run. */
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
  /**
   * The run's outcome is known: pi's work is over. `stopNow`: stop the child at once;
   * otherwise graceMs counts from here. It can come again after a `revoked`.
   */
  | { kind: "decided"; decision: Decision; stopNow: boolean }
  /** pi settled (`agent_settled`) without a terminal message: graceMs counts from here, and the exit decides. */
  | { kind: "settled" }
  /** pi works on after what had decided (a retry, a continuation): the run is live again. */
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

/**
 * Where a run stands:
 * - `open`: pi is working; a terminal message it gave earlier (`candidate`) would decide if it
 *   exited now, but pi has gone on (a continuation);
 * - `held`: a terminal message is the candidate, but pi may still go on: it has not settled
 *   yet, or (on a pi without `agent_settled`) it holds queued messages it has not delivered;
 * - `over`: the outcome is decided, or pi settled; the run waits for the child to exit.
 */
type Phase = "open" | "held" | "over";

const NONE: Transition = { kind: "none" };
const REVOKED: Transition = { kind: "revoked" };
const SETTLED: Transition = { kind: "settled" };

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

/** A decision pi may continue after when it holds queued messages (it checks its queue after a turn that ended like this). */
const continuable = (decision: Decision): boolean => decision.status === "completed" || decision.status === "truncated";

/** Entries of a `queue_update` event (`steering` and `followUp` lists). */
function queuedCount(event: PiEvent): number {
  const count = (value: unknown) => (Array.isArray(value) ? value.length : 0);
  return count(event.steering) + count(event.followUp);
}

/**
 * The terminal decision of one run, fed pi events in order. Pure bookkeeping: no clocks,
 * no processes; the run loop turns transitions into timers and signals.
 *
 * The rules: the first terminal message decides, unless pi goes on after it — a retry of an
 * error, or a continuation in the same run (a `turn_start`, an `agent_start`: pi took a
 * queued steering or follow-up message) — and then the continuation's terminal message
 * decides instead. On a pi that emits `agent_settled`, a terminal message is provisional
 * until `agent_settled`, and the outcome is known only then. On a pi without it, a terminal
 * message is final at once unless pi holds queued messages (its latest `queue_update`, or
 * what `setLivePending` was told); then it is final at `agent_end` (such a pi never goes on
 * after `agent_end`) or once the queue is empty without a continuation.
 * An `[ABORT]` marker, a signal or a time-out decides for good and stops the child at once.
 */
export class OutcomeTracker {
  private candidate: Decision | undefined;
  private phase: Phase = "open";
  /** A marker or an interruption decided: nothing takes it back. */
  private locked = false;
  private settles: boolean;
  /** `agent_settled` came, and no `agent_start` since. */
  private settled = false;
  /** `agent_end` came, and no `agent_start` since. */
  private agentEnded = false;
  private queued = 0;
  private livePending = 0;
  private lastAssistant: AssistantSummary | undefined;
  private readonly usageSum: Usage = emptyUsage();
  private turnCount = 0;
  private toolCallCount = 0;
  private lastModel: string | undefined;

  constructor(options: OutcomeOptions = {}) {
    this.settles = options.settles ?? false;
  }

  /** The run's outcome once it is known (pi's work is over, or a marker, signal or time-out decided). */
  get decided(): Decision | undefined {
    return this.phase === "over" ? this.candidate : undefined;
  }

  /** A terminal message that would decide if the child exited now, while pi may still go on. */
  get provisional(): Decision | undefined {
    return this.phase === "over" ? undefined : this.candidate;
  }

  /** Whether this pi is known to emit `agent_settled` (told, or seen). */
  get emitsSettled(): boolean {
    return this.settles;
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
    this.settles = settles;
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
        if (event.willRetry === true) return { records, transition: this.onRetry() };
        return { records, transition: this.onAgentEnd() };
      case "compaction_end":
        return { records, transition: event.willRetry === true ? this.onRetry() : NONE };
      case "agent_start":
        return { records, transition: this.onWorkStarted(true) };
      case "turn_start":
        return { records, transition: this.onWorkStarted(false) };
      case "queue_update":
        this.queued = queuedCount(event);
        return { records, transition: this.onPendingChange() };
      case "agent_settled":
        return { records, transition: this.onSettled(event.aborted === true, records) };
      default:
        return { records, transition: NONE };
    }
  }

  /**
   * Live messages that pi accepted but has not delivered yet, as known outside pi's stdout
   * (the task extension inside the child). Counts like pi's own `queue_update`: on a pi
   * without `agent_settled` a terminal message is provisional while any are pending.
   */
  setLivePending(count: number): Transition {
    this.livePending = Math.max(0, Math.floor(count));
    return this.onPendingChange();
  }

  /** A signal or time-out: decides the run unless its outcome is already known. */
  interrupt(status: "interrupted" | "timed_out", errorMessage: string): Transition {
    if (this.phase === "over") return NONE;
    this.candidate = { status, errorMessage, retryable: false };
    return this.lock(true);
  }

  /** The outcome once the child is gone: the decision, else the last terminal message, else how it died. */
  finish(exit: ChildExit): Outcome {
    const decision = this.candidate;
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
    if (this.phase === "over") return NONE;
    this.lastAssistant = message;

    const markerReason = findAbortMarker(message.textBlocks);
    if (markerReason !== undefined) {
      records.push({ type: "abort", reason: markerReason, source: "marker" });
      this.candidate = {
        status: "aborted",
        message,
        abortReason: markerReason,
        abortSource: "marker",
        retryable: false,
      };
      return this.lock(true);
    }
    if (!isTerminalStop(message.stopReason, message.hasToolCall)) {
      // pi is working on (a continuation's tool call): the earlier answer stays the fallback.
      this.phase = "open";
      return NONE;
    }

    const decision: Decision = {
      status: statusForStop(message.stopReason),
      message,
      retryable: message.stopReason === "error",
    };
    if (message.stopReason === "aborted") {
      decision.abortReason = message.errorMessage ?? "aborted by pi";
      decision.abortSource = "child";
      records.push({ type: "abort", reason: decision.abortReason, source: "child" });
    }
    if (message.stopReason === "error")
      decision.errorMessage = message.errorMessage ?? "the provider returned an error";
    this.candidate = decision;
    if (this.settles || (continuable(decision) && this.pending() > 0)) {
      this.phase = "held";
      return NONE;
    }
    return this.conclude();
  }

  /** pi retries the error that was the candidate: it no longer decides (the next terminal message does). */
  private onRetry(): Transition {
    if (this.locked || !this.candidate?.retryable) return NONE;
    this.candidate = undefined;
    return this.reopen();
  }

  /** `agent_start` or `turn_start`: pi is working again, so whatever decided is provisional again. */
  private onWorkStarted(agentStart: boolean): Transition {
    if (agentStart) {
      this.agentEnded = false;
      this.settled = false;
    }
    if (this.locked) return NONE;
    if (this.phase === "held") this.phase = "open";
    if (this.phase !== "over") return NONE;
    return this.reopen();
  }

  /** A pi without `agent_settled` never goes on after `agent_end`: what it still holds is lost, and the candidate decides. */
  private onAgentEnd(): Transition {
    this.agentEnded = true;
    if (this.phase !== "held" || this.settles) return NONE;
    return this.conclude();
  }

  private onPendingChange(): Transition {
    if (this.locked || this.settles || !this.candidate) return NONE;
    const pending = this.pending();
    if (pending > 0 && this.phase === "over" && !this.agentEnded && continuable(this.candidate)) {
      this.phase = "held";
      return REVOKED;
    }
    if (pending === 0 && this.phase === "held") return this.conclude();
    return NONE;
  }

  private onSettled(aborted: boolean, records: EventRecordBody[]): Transition {
    this.settles = true;
    if (this.locked || (this.phase === "over" && this.settled)) return NONE;
    this.settled = true;
    if (aborted && this.candidate?.status !== "aborted") {
      // pi's own abort, with no aborted message to show for it (e.g. during a retry's wait).
      const reason = "aborted by pi";
      this.candidate = {
        status: "aborted",
        ...(this.lastAssistant && { message: this.lastAssistant }),
        abortReason: reason,
        abortSource: "child",
        retryable: false,
      };
      records.push({ type: "abort", reason, source: "child" });
    }
    if (this.candidate) this.candidate.retryable = false;
    if (!this.candidate) {
      this.phase = "over";
      return SETTLED;
    }
    return this.conclude();
  }

  private pending(): number {
    return this.queued + this.livePending;
  }

  private conclude(): Transition {
    this.phase = "over";
    return this.candidate ? { kind: "decided", decision: this.candidate, stopNow: false } : SETTLED;
  }

  private lock(stopNow: boolean): Transition {
    this.locked = true;
    this.phase = "over";
    return { kind: "decided", decision: this.candidate as Decision, stopNow };
  }

  private reopen(): Transition {
    const wasOver = this.phase === "over";
    this.phase = "open";
    return wasOver ? REVOKED : NONE;
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
