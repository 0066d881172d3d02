/**
 * The outcome machine, table by table: for each phase (and the facts of pi's stream that
 * matter) and event, the next phase and what the run is told.
 */
import { describe, expect, it } from "vitest";
import { assistantFromEvent, type PiEvent } from "../../../src/wrapper/normalize.js";
import {
  type Decision,
  decidedOf,
  hasAnswered,
  initialOutcome,
  type OutcomeEvent,
  type OutcomePhase,
  type OutcomeState,
  outcomeEventOf,
  provisionalOf,
  type Transition,
  transition,
} from "../../../src/wrapper/outcome-phases.js";
import {
  agentEnd,
  agentSettled,
  agentStart,
  assistantEnd,
  queueUpdate,
  retryStart,
  turnStart,
} from "../../support/pi-events.js";

const summary = (event: PiEvent) => assistantFromEvent(event)!;
const message = (text: string, stopReason = "stop") => summary(assistantEnd({ text, stopReason }));

const answer: Decision = { status: "completed", message: message("hi"), retryable: false };
const error: Decision = { status: "failed", errorMessage: "503", retryable: true };
const abort: Decision = { status: "aborted", abortReason: "stop", abortSource: "child", retryable: false };
const timedOut: Decision = { status: "timed_out", errorMessage: "slow", retryable: false };

const phases = {
  open: { name: "open", candidate: undefined },
  "open+answer": { name: "open", candidate: answer },
  "open+error": { name: "open", candidate: error },
  held: { name: "held", candidate: answer },
  "held+error": { name: "held", candidate: error },
  "held+abort": { name: "held", candidate: abort },
  decided: { name: "decided", decision: answer, atSettle: false },
  "decided+error": { name: "decided", decision: error, atSettle: false },
  "decided@settle": { name: "decided", decision: answer, atSettle: true },
  settled: { name: "settled" },
  final: { name: "final", decision: timedOut },
} satisfies Record<string, OutcomePhase>;

type From = keyof typeof phases;
/** What the run is told; `stop` is `decided` with `stopNow`. */
type Told = Transition["kind"] | "stop";

const told = (t: Transition): Told => (t.kind === "decided" && t.stopNow ? "stop" : t.kind);
const stateOf = (from: From, facts: Partial<OutcomeState>): OutcomeState => ({
  ...initialOutcome(false),
  phase: phases[from],
  ...facts,
});

const assistant = (text: string, stopReason = "stop", toolCall = false): OutcomeEvent => ({
  type: "assistant",
  message: summary(assistantEnd({ text, stopReason, ...(toolCall && { toolCalls: [{ id: "c1", name: "bash" }] }) })),
});
const stop = assistant("answer");
const retry: OutcomeEvent = { type: "retry" };
const queue = (count: number): OutcomeEvent => ({ type: "queue_update", count });
const live = (count: number): OutcomeEvent => ({ type: "live_pending", count });
const settledEvent = (aborted = false): OutcomeEvent => ({ type: "agent_settled", aborted });
const interrupt: OutcomeEvent = { type: "interrupt", status: "interrupted", errorMessage: "SIGTERM" };

/** [from, facts of the stream, event, next phase, what the run is told, records the step adds]. */
type Row = [From, Partial<OutcomeState>, OutcomeEvent, OutcomePhase["name"], Told, string[]?];

function checkTable(rows: Row[]) {
  it.each(
    rows.map(([from, facts, event, next, kind, records]) => [from, event.type, facts, event, next, kind, records]),
  )("%s + %s %o", (from, _type, facts, event, next, kind, records) => {
    const step = transition(stateOf(from, facts), event);
    expect(step.state.phase.name).toBe(next);
    expect(told(step.transition)).toBe(kind);
    expect(step.records.map((record) => `${record.type}:${"source" in record ? record.source : ""}`)).toEqual(
      records ?? [],
    );
  });
}

describe("an assistant message", () => {
  checkTable([
    ["open", {}, stop, "decided", "decided"],
    // A pi that settles: the answer waits for agent_settled.
    ["open", { settles: true }, stop, "held", "none"],
    // A pi without agent_settled that holds messages may go on after a stop or length answer.
    ["open", { queued: 1 }, stop, "held", "none"],
    ["open", { livePending: 1 }, stop, "held", "none"],
    ["open", { queued: 1 }, assistant("cut", "length"), "held", "none"],
    // It does not take its queue after an error.
    ["open", { queued: 1 }, assistant("", "error"), "decided", "decided"],
    ["held", { settles: true }, stop, "held", "none"],
    ["open", {}, assistant("", "aborted"), "decided", "decided", ["abort:child"]],
    // A tool call: pi works on; the earlier answer stays the fallback.
    ["open+answer", {}, assistant("checking", "toolUse", true), "open", "none"],
    ["held", { settles: true }, assistant("checking", "toolUse", true), "open", "none"],
    // The first terminal message wins once the outcome is known.
    ["decided", {}, stop, "decided", "none"],
    ["settled", { settles: true }, stop, "settled", "none"],
    ["final", {}, stop, "final", "none"],
    // The marker decides for good and stops the child, whatever pi would do next.
    ["open", {}, assistant("[ABORT] no key"), "final", "stop", ["abort:marker"]],
    ["held", { settles: true }, assistant("[ABORT] no key", "toolUse", true), "final", "stop", ["abort:marker"]],
    ["decided", {}, assistant("[ABORT] too late"), "decided", "none"],
  ]);

  it("a tool-use message keeps the earlier answer as the candidate; a newer terminal message replaces it", () => {
    const toolUse = transition(stateOf("held", { settles: true }), assistant("x", "toolUse", true));
    expect(toolUse.state.phase).toEqual({ name: "open", candidate: answer });
    const replaced = transition(stateOf("held", { settles: true }), assistant("newer"));
    expect(provisionalOf(replaced.state.phase)?.message?.text).toBe("newer");
  });

  it("only messages before the outcome is known are the report's fallback", () => {
    const late = message("late");
    expect(transition(stateOf("decided", {}), { type: "assistant", message: late }).state.lastAssistant).toBe(
      undefined,
    );
    expect(transition(stateOf("open", {}), { type: "assistant", message: late }).state.lastAssistant).toBe(late);
  });

  it("a terminal message's decision: its status, pi's error or abort reason, retryable only for an error", () => {
    const decisionOf = (event: OutcomeEvent) => decidedOf(transition(stateOf("open", {}), event).state.phase);
    expect(decisionOf(assistant("", "error"))).toMatchObject({ status: "failed", retryable: true });
    expect(decisionOf(assistant("", "error"))?.errorMessage).toBe("the provider returned an error");
    expect(decisionOf(assistant("", "aborted"))).toMatchObject({
      status: "aborted",
      abortReason: "aborted by pi",
      abortSource: "child",
      retryable: false,
    });
    expect(decisionOf(assistant("cut", "length"))).toMatchObject({ status: "truncated", retryable: false });
  });
});

describe("a retry", () => {
  checkTable([
    ["decided+error", {}, retry, "open", "revoked"],
    ["held+error", { settles: true }, retry, "open", "none"],
    ["open+error", {}, retry, "open", "none"],
    // Only an error is retried: a retry event never takes an answer back.
    ["decided", {}, retry, "decided", "none"],
    ["held", { settles: true }, retry, "held", "none"],
    ["settled", {}, retry, "settled", "none"],
    ["final", {}, retry, "final", "none"],
  ]);

  it("the retried error no longer decides: the next terminal message does", () => {
    expect(transition(stateOf("decided+error", {}), retry).state.phase).toEqual({ name: "open", candidate: undefined });
  });
});

describe("pi working again (turn_start, agent_start)", () => {
  const turnStarted: OutcomeEvent = { type: "turn_start" };
  const agentStarted: OutcomeEvent = { type: "agent_start" };
  checkTable([
    ["open", {}, turnStarted, "open", "none"],
    ["held", { queued: 1 }, turnStarted, "open", "none"],
    ["decided", {}, turnStarted, "open", "revoked"],
    ["decided@settle", { settles: true }, agentStarted, "open", "revoked"],
    ["settled", { settles: true }, agentStarted, "open", "revoked"],
    ["final", {}, agentStarted, "final", "none"],
  ]);

  it("what had decided stays the candidate while the continuation works; agent_start clears agent_end", () => {
    const step = transition(stateOf("decided", { agentEnded: true }), agentStarted);
    expect(step.state.phase).toEqual({ name: "open", candidate: answer });
    expect(step.state.agentEnded).toBe(false);
    expect(transition(stateOf("decided", { agentEnded: true }), turnStarted).state.agentEnded).toBe(true);
  });
});

describe("agent_end", () => {
  const ended: OutcomeEvent = { type: "agent_end" };
  checkTable([
    // A pi without agent_settled never goes on after agent_end: what it holds is lost.
    ["held", { queued: 1 }, ended, "decided", "decided"],
    ["held", { settles: true }, ended, "held", "none"],
    ["open+answer", {}, ended, "open", "none"],
    ["decided", {}, ended, "decided", "none"],
  ]);

  it("is remembered: a message queued after it holds nothing", () => {
    const step = transition(stateOf("decided", {}), ended);
    expect(step.state.agentEnded).toBe(true);
    expect(transition(step.state, queue(1)).state.phase.name).toBe("decided");
  });
});

describe("messages pi holds (queue_update, live messages told from outside)", () => {
  checkTable([
    ["decided", {}, queue(1), "held", "revoked"],
    ["decided", {}, live(2), "held", "revoked"],
    ["decided", { agentEnded: true }, queue(1), "decided", "none"],
    // Not after an error: pi does not take its queue then.
    ["decided+error", {}, queue(1), "decided", "none"],
    // A pi that settles: agent_settled is the watermark, whatever it holds.
    ["decided@settle", { settles: true }, queue(1), "decided", "none"],
    ["held", { settles: true }, live(0), "held", "none"],
    ["held", { queued: 1 }, queue(0), "decided", "decided"],
    ["held", { livePending: 1 }, live(0), "decided", "decided"],
    ["held", { queued: 1, livePending: 1 }, queue(0), "held", "none"],
    ["open", {}, queue(1), "open", "none"],
    ["final", {}, live(1), "final", "none"],
  ]);

  it("a live count is a whole number of messages, never below zero", () => {
    expect(transition(stateOf("open", {}), live(-3)).state.livePending).toBe(0);
    expect(transition(stateOf("open", {}), live(2.7)).state.livePending).toBe(2);
  });
});

describe("agent_settled", () => {
  checkTable([
    ["held", { settles: true }, settledEvent(), "decided", "decided"],
    ["open+answer", { settles: true }, settledEvent(), "decided", "decided"],
    ["open", { settles: true }, settledEvent(), "settled", "settled"],
    // A second one with no work between changes nothing.
    ["decided@settle", { settles: true }, settledEvent(), "decided", "none"],
    ["settled", { settles: true }, settledEvent(), "settled", "none"],
    // The first one of a pi not known to settle: decided again, graceMs counts from it.
    ["decided", {}, settledEvent(), "decided", "decided"],
    ["final", {}, settledEvent(), "final", "none"],
    // pi's own abort with no aborted message to show for it (during a retry's wait).
    ["held+error", { settles: true }, settledEvent(true), "decided", "decided", ["abort:child"]],
    ["open", { settles: true }, settledEvent(true), "decided", "decided", ["abort:child"]],
    ["held+abort", { settles: true }, settledEvent(true), "decided", "decided"],
  ]);

  it("makes the candidate final (no retry can follow) and teaches the state that its pi settles", () => {
    const step = transition(stateOf("held+error", {}), settledEvent());
    expect(step.state.phase).toEqual({ name: "decided", decision: { ...error, retryable: false }, atSettle: true });
    expect(step.state.settles).toBe(true);
    expect(error.retryable).toBe(true);
  });

  it("pi's abort keeps the last assistant message for the report", () => {
    const last = message("half done", "error");
    const step = transition(stateOf("held+error", { settles: true, lastAssistant: last }), settledEvent(true));
    expect(decidedOf(step.state.phase)).toEqual({
      status: "aborted",
      message: last,
      abortReason: "aborted by pi",
      abortSource: "child",
      retryable: false,
    });
  });
});

describe("a signal or time-out", () => {
  checkTable([
    ["open", {}, interrupt, "final", "stop"],
    ["held", { settles: true }, interrupt, "final", "stop"],
    ["open+answer", {}, interrupt, "final", "stop"],
    // The outcome is known: nothing changes (the run only speeds up its stop).
    ["decided", {}, interrupt, "decided", "none"],
    ["settled", { settles: true }, interrupt, "settled", "none"],
    ["final", {}, interrupt, "final", "none"],
  ]);

  it("decides with its status and reason", () => {
    const step = transition(stateOf("held", {}), { type: "interrupt", status: "timed_out", errorMessage: "slow" });
    expect(decidedOf(step.state.phase)).toEqual({ status: "timed_out", errorMessage: "slow", retryable: false });
  });
});

describe("the phase predicates", () => {
  it.each([
    // [phase, decided, provisional, answered]
    ["open", undefined, undefined, false],
    ["open+answer", undefined, answer, true],
    ["open+error", undefined, error, false],
    ["held", undefined, answer, true],
    ["held+error", undefined, error, false],
    ["decided", answer, undefined, true],
    ["decided+error", error, undefined, true],
    ["settled", undefined, undefined, false],
    ["final", timedOut, undefined, true],
  ] as const)("%s", (from, decided, provisional, answered) => {
    expect(decidedOf(phases[from])).toBe(decided);
    expect(provisionalOf(phases[from])).toBe(provisional);
    expect(hasAnswered(phases[from])).toBe(answered);
  });
});

describe("pi's events as the machine's", () => {
  it.each([
    ["auto_retry_start", retryStart(), { type: "retry" }],
    ["agent_end with willRetry", agentEnd(true), { type: "retry" }],
    ["agent_end", agentEnd(false), { type: "agent_end" }],
    ["compaction_end with willRetry", { type: "compaction_end", willRetry: true }, { type: "retry" }],
    ["compaction_end", { type: "compaction_end" }, undefined],
    ["agent_start", agentStart(), { type: "agent_start" }],
    ["turn_start", turnStart(), { type: "turn_start" }],
    ["queue_update", queueUpdate(["a", "b"], ["c"]), { type: "queue_update", count: 3 }],
    ["agent_settled", agentSettled(true), { type: "agent_settled", aborted: true }],
    ["tool_execution_start", { type: "tool_execution_start" }, undefined],
  ] as const)("%s", (_name, event, expected) => {
    expect(outcomeEventOf(event as PiEvent)).toEqual(expected);
  });
});

it("a step never changes the state it was given", () => {
  const deepFreeze = <T>(value: T): T => {
    if (value && typeof value === "object") {
      for (const inner of Object.values(value)) deepFreeze(inner);
      Object.freeze(value);
    }
    return value;
  };
  const events: OutcomeEvent[] = [stop, retry, settledEvent(true), queue(2), live(1), interrupt, { type: "agent_end" }];
  for (const from of Object.keys(phases) as From[]) {
    for (const event of events) {
      const state = deepFreeze(structuredClone(stateOf(from, {})));
      expect(() => transition(state, event)).not.toThrow();
    }
  }
});
