/**
 * The terminal decision of one run, as one pure machine: where the run's outcome stands
 * (OutcomePhase, with the few facts of pi's stream it needs: OutcomeState), what can happen
 * (OutcomeEvent: pi's events, live messages told from outside, a signal or time-out) and what
 * each happening tells the run (Transition: none, decided, settled, revoked). `transition` is
 * the only place that decides; OutcomeTracker (outcome.ts) feeds it pi's stream and counts.
 * Tested as tables in test/unit/wrapper/outcome-phases.test.ts.
 *
 *   open ──a terminal message, nothing held; agent_settled with a candidate──────► decided
 *    │ └──a terminal message, pi may go on──► held ──agent_settled, agent_end,    ▲   │
 *    │                                         ▲      the queue emptied───────────┘   │
 *    │                                         └──── a message queued (revoked) ──────┘
 *    └──agent_settled, no terminal message──► settled
 *
 *   held, decided, settled ──turn_start, agent_start──► open (revoked from decided, settled)
 *   open, held, decided ──a retry of its error candidate──► open, no candidate (revoked from decided)
 *   held ──a tool-use message──► open
 *   decided ──the first agent_settled of a pi not known to settle──► decided (graceMs again)
 *   open, held ──[ABORT], a signal, a time-out──► final (nothing leaves it)
 *
 * The rules: the first terminal message decides, unless pi goes on after it — a retry of an
 * error, or a continuation in the same run (a `turn_start`, an `agent_start`: pi took a
 * queued steering or follow-up message) — and then the continuation's terminal message
 * decides instead. On a pi that emits `agent_settled`, a terminal message is provisional
 * until `agent_settled`, and the outcome is known only then. On a pi without it, a terminal
 * message is final at once unless pi holds queued messages (its latest `queue_update`, or
 * live messages told from outside); then it is final at `agent_end` (such a pi never goes on
 * after `agent_end`) or once the queue is empty without a continuation.
 * An `[ABORT]` marker, a signal or a time-out decides for good and stops the child at once.
 */
import type { AbortSource, EventRecordBody, StopReason } from "../contracts/events.js";
import type { RunStatus } from "../contracts/result.js";
import { findAbortMarker } from "./abort-marker.js";
import type { AssistantSummary, PiEvent } from "./normalize.js";
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

/** What a step tells the run, which turns it into timers and signals. */
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

export type OutcomePhase =
  /**
   * pi is working. `candidate`: a terminal message it gave earlier, which decides if the
   * child exits now (pi went on after it: a continuation).
   */
  | { name: "open"; candidate: Decision | undefined }
  /**
   * A terminal message is the candidate, but pi may still go on: it has not settled yet, or
   * (a pi without `agent_settled`) it holds messages it has not delivered.
   */
  | { name: "held"; candidate: Decision }
  /**
   * pi's work is over and `decision` is the outcome; the run waits for the child to exit. pi
   * working again takes it back. `atSettle`: known at `agent_settled` (a second one, with no
   * work between, changes nothing).
   */
  | { name: "decided"; decision: Decision; atSettle: boolean }
  /** pi settled without a terminal message: the run waits for the child, whose exit decides. */
  | { name: "settled" }
  /** An `[ABORT]` marker, a signal or a time-out decided: nothing takes it back. */
  | { name: "final"; decision: Decision };

/** Where a run stands, and what of pi's stream the next step needs. */
export interface OutcomeState {
  phase: OutcomePhase;
  /** The pi emits `agent_settled` (told, or seen): a terminal message waits for it. */
  settles: boolean;
  /** `agent_end` came, and no `agent_start` since: pi takes no queued message any more. */
  agentEnded: boolean;
  /** The messages pi's latest `queue_update` holds (steering and follow-up). */
  queued: number;
  /** Live messages pi accepted but has not delivered, as known outside pi's stdout. */
  livePending: number;
  /** The latest assistant message before the outcome was known: its text is the report's fallback. */
  lastAssistant: AssistantSummary | undefined;
}

export type OutcomeEvent =
  | { type: "assistant"; message: AssistantSummary }
  /** pi retries the error it gave: `auto_retry_start`, or `agent_end`/`compaction_end` with `willRetry`. */
  | { type: "retry" }
  /** `agent_end` with no retry to come. */
  | { type: "agent_end" }
  | { type: "agent_start" }
  | { type: "turn_start" }
  | { type: "queue_update"; count: number }
  | { type: "live_pending"; count: number }
  | { type: "agent_settled"; aborted: boolean }
  /** A signal or time-out. */
  | { type: "interrupt"; status: "interrupted" | "timed_out"; errorMessage: string }
  /** The run learned whether its pi emits `agent_settled` (known before the first event). */
  | { type: "expect_settled"; settles: boolean };

export interface OutcomeStep {
  state: OutcomeState;
  transition: Transition;
  /** Records the step adds to events.jsonl after the event's own (an abort). */
  records: EventRecordBody[];
}

export function initialOutcome(settles: boolean): OutcomeState {
  return {
    phase: { name: "open", candidate: undefined },
    settles,
    agentEnded: false,
    queued: 0,
    livePending: 0,
    lastAssistant: undefined,
  };
}

const NONE: Transition = { kind: "none" };
const REVOKED: Transition = { kind: "revoked" };
const SETTLED: Transition = { kind: "settled" };
const RETRY: OutcomeEvent = { type: "retry" };

/** The machine's event for a pi event other than an assistant message (undefined: it changes nothing). */
export function outcomeEventOf(event: PiEvent): OutcomeEvent | undefined {
  switch (event.type) {
    case "auto_retry_start":
      return RETRY;
    case "agent_end":
      return event.willRetry === true ? RETRY : { type: "agent_end" };
    case "compaction_end":
      return event.willRetry === true ? RETRY : undefined;
    case "agent_start":
      return { type: "agent_start" };
    case "turn_start":
      return { type: "turn_start" };
    case "queue_update":
      return { type: "queue_update", count: queuedCount(event) };
    case "agent_settled":
      return { type: "agent_settled", aborted: event.aborted === true };
    default:
      return undefined;
  }
}

/** Entries of a `queue_update` event (`steering` and `followUp` lists). */
function queuedCount(event: PiEvent): number {
  const count = (value: unknown) => (Array.isArray(value) ? value.length : 0);
  return count(event.steering) + count(event.followUp);
}

// Every question asked of a phase is answered here.

/** The run's outcome once it is known (pi's work is over, or a marker, signal or time-out decided). */
export function decidedOf(phase: OutcomePhase): Decision | undefined {
  return phase.name === "decided" || phase.name === "final" ? phase.decision : undefined;
}

/** A terminal message that would decide if the child exited now, while pi may still go on. */
export function provisionalOf(phase: OutcomePhase): Decision | undefined {
  return phase.name === "open" || phase.name === "held" ? phase.candidate : undefined;
}

/** What decides when the child exits now: the decision, else the provisional answer. */
export function candidateOf(phase: OutcomePhase): Decision | undefined {
  return decidedOf(phase) ?? provisionalOf(phase);
}

/** The child has answered: the outcome is known, or a completed answer waits for pi to settle. */
export function hasAnswered(phase: OutcomePhase): boolean {
  return decidedOf(phase) !== undefined || provisionalOf(phase)?.status === "completed";
}

/** pi's work is over (decided, settled or final): a message changes nothing, a signal stops nothing new. */
function workOver(phase: OutcomePhase): boolean {
  return phase.name !== "open" && phase.name !== "held";
}

/** The one transition function: every change of a run's outcome goes through here. */
export function transition(state: OutcomeState, event: OutcomeEvent): OutcomeStep {
  switch (event.type) {
    case "assistant":
      return onAssistant(state, event.message);
    case "retry":
      return onRetry(state);
    case "agent_end":
      return onAgentEnd({ ...state, agentEnded: true });
    case "agent_start":
      return onWorkStarted({ ...state, agentEnded: false });
    case "turn_start":
      return onWorkStarted(state);
    case "queue_update":
      return onPendingChange({ ...state, queued: event.count });
    case "live_pending":
      return onPendingChange({ ...state, livePending: Math.max(0, Math.floor(event.count)) });
    case "agent_settled":
      // The first one tells a tracker that was not told its pi settles.
      return onSettled({ ...state, settles: true }, event.aborted);
    case "interrupt":
      if (workOver(state.phase)) return stay(state);
      return final(state, { status: event.status, errorMessage: event.errorMessage, retryable: false }, []);
    case "expect_settled":
      return stay({ ...state, settles: event.settles });
  }
}

function onAssistant(state: OutcomeState, message: AssistantSummary): OutcomeStep {
  const { phase } = state;
  if (phase.name !== "open" && phase.name !== "held") return stay(state);
  const seen: OutcomeState = { ...state, lastAssistant: message };

  const markerReason = findAbortMarker(message.textBlocks);
  if (markerReason !== undefined) {
    const decision: Decision = {
      status: "aborted",
      message,
      abortReason: markerReason,
      abortSource: "marker",
      retryable: false,
    };
    return final(seen, decision, [{ type: "abort", reason: markerReason, source: "marker" }]);
  }
  if (!isTerminalStop(message.stopReason, message.hasToolCall)) {
    // pi is working on (a continuation's tool call): the earlier answer stays the fallback.
    return stay({ ...seen, phase: { name: "open", candidate: phase.candidate } });
  }

  const decision = decisionOf(message);
  const records: EventRecordBody[] =
    decision.abortReason !== undefined ? [{ type: "abort", reason: decision.abortReason, source: "child" }] : [];
  if (seen.settles || (continuable(decision) && pending(seen) > 0)) {
    return { state: { ...seen, phase: { name: "held", candidate: decision } }, transition: NONE, records };
  }
  return decided(seen, decision, false, records);
}

/** pi retries the error that was the candidate: it no longer decides (the next terminal message does). */
function onRetry(state: OutcomeState): OutcomeStep {
  if (state.phase.name === "final" || !candidateOf(state.phase)?.retryable) return stay(state);
  return reopen(state, undefined);
}

/** `agent_start` or `turn_start`: pi is working again, so whatever decided is provisional again. */
function onWorkStarted(state: OutcomeState): OutcomeStep {
  if (state.phase.name === "final") return stay(state);
  return reopen(state, candidateOf(state.phase));
}

/** A pi without `agent_settled` never goes on after `agent_end`: what it still holds is lost, and the candidate decides. */
function onAgentEnd(state: OutcomeState): OutcomeStep {
  const { phase } = state;
  if (phase.name !== "held" || state.settles) return stay(state);
  return decided(state, phase.candidate, false, []);
}

/** On a pi without `agent_settled`, messages pi holds keep a `stop`/`length` answer open. */
function onPendingChange(state: OutcomeState): OutcomeStep {
  const { phase } = state;
  const candidate = candidateOf(phase);
  if (phase.name === "final" || state.settles || !candidate) return stay(state);
  const held = pending(state);
  if (held > 0 && phase.name === "decided" && !state.agentEnded && continuable(candidate)) {
    return { state: { ...state, phase: { name: "held", candidate } }, transition: REVOKED, records: [] };
  }
  if (held === 0 && phase.name === "held") return decided(state, candidate, false, []);
  return stay(state);
}

/** pi's automatic work is done: the candidate decides, no retry can follow. */
function onSettled(state: OutcomeState, aborted: boolean): OutcomeStep {
  const { phase } = state;
  const alreadySettled = phase.name === "settled" || (phase.name === "decided" && phase.atSettle);
  if (phase.name === "final" || alreadySettled) return stay(state);
  let candidate = candidateOf(phase);
  const records: EventRecordBody[] = [];
  if (aborted && candidate?.status !== "aborted") {
    // pi's own abort, with no aborted message to show for it (e.g. during a retry's wait).
    const reason = "aborted by pi";
    candidate = {
      status: "aborted",
      ...(state.lastAssistant && { message: state.lastAssistant }),
      abortReason: reason,
      abortSource: "child",
      retryable: false,
    };
    records.push({ type: "abort", reason, source: "child" });
  }
  if (!candidate) return { state: { ...state, phase: { name: "settled" } }, transition: SETTLED, records };
  return decided(state, { ...candidate, retryable: false }, true, records);
}

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

/** The decision a terminal message makes. */
function decisionOf(message: AssistantSummary): Decision {
  const decision: Decision = {
    status: statusForStop(message.stopReason),
    message,
    retryable: message.stopReason === "error",
  };
  if (message.stopReason === "aborted") {
    decision.abortReason = message.errorMessage ?? "aborted by pi";
    decision.abortSource = "child";
  }
  if (message.stopReason === "error") decision.errorMessage = message.errorMessage ?? "the provider returned an error";
  return decision;
}

/** A decision pi may continue after when it holds queued messages (it checks its queue after a turn that ended like this). */
const continuable = (decision: Decision): boolean => decision.status === "completed" || decision.status === "truncated";

const pending = (state: OutcomeState): number => state.queued + state.livePending;

const stay = (state: OutcomeState): OutcomeStep => ({ state, transition: NONE, records: [] });

function decided(state: OutcomeState, decision: Decision, atSettle: boolean, records: EventRecordBody[]): OutcomeStep {
  return {
    state: { ...state, phase: { name: "decided", decision, atSettle } },
    transition: { kind: "decided", decision, stopNow: false },
    records,
  };
}

/** A marker, signal or time-out: decided for good, and the child stops at once. */
function final(state: OutcomeState, decision: Decision, records: EventRecordBody[]): OutcomeStep {
  return {
    state: { ...state, phase: { name: "final", decision } },
    transition: { kind: "decided", decision, stopNow: true },
    records,
  };
}

/** pi works again: the run is open, and what had decided is revoked. */
function reopen(state: OutcomeState, candidate: Decision | undefined): OutcomeStep {
  const wasOver = workOver(state.phase);
  return { state: { ...state, phase: { name: "open", candidate } }, transition: wasOver ? REVOKED : NONE, records: [] };
}
