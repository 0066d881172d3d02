/**
 * OutcomeTracker on both pi lines: `agent_settled` as the watermark on a pi that emits it
 * (1.x), and continuations (a `stop` message followed by `turn_start`, messages pi still holds
 * in its queue) on both. Each row: the events in order, the transition each one gives, and
 * what the run reports once the child exits.
 */
import { describe, expect, it } from "vitest";
import type { PiEvent } from "../../../src/wrapper/normalize.js";
import { type Outcome, OutcomeTracker, type Transition } from "../../../src/wrapper/outcome.js";
import {
  agentEnd,
  agentSettled,
  agentStart,
  assistantEnd,
  queueUpdate,
  retryStart,
  systemMessage,
  toolEnd,
  toolStart,
  turnEnd,
  turnStart,
} from "../../support/pi-events.js";

const NO_EXIT = { exitCode: 0, signal: null, stderrTail: "" };

function feed(settles: boolean, events: PiEvent[]): { tracker: OutcomeTracker; transitions: Transition["kind"][] } {
  const tracker = new OutcomeTracker({ settles });
  return { tracker, transitions: events.map((event) => tracker.observe(event).transition.kind) };
}

const stop = (text: string) => assistantEnd({ text, stopReason: "stop" });
const error = (message = "503 overloaded") => assistantEnd({ stopReason: "error", errorMessage: message });
const toolUse = (id: string) =>
  assistantEnd({ text: "checking", stopReason: "toolUse", toolCalls: [{ id, name: "bash" }] });

type Row = [name: string, events: PiEvent[], transitions: Transition["kind"][], outcome: Partial<Outcome>];

describe("OutcomeTracker on a pi that emits agent_settled", () => {
  const rows: Row[] = [
    [
      "a plain answer decides at agent_settled, not at the message",
      [agentStart(), turnStart(), stop("hi"), turnEnd(), agentEnd(false), agentSettled()],
      ["none", "none", "none", "none", "none", "decided"],
      { status: "completed", finalText: "hi" },
    ],
    [
      "a retried error: the retry's answer decides",
      [
        error(),
        turnEnd(),
        agentEnd(true),
        retryStart(),
        agentStart(),
        turnStart(),
        stop("after retry"),
        agentEnd(false),
        agentSettled(),
      ],
      ["none", "none", "none", "none", "none", "none", "none", "none", "decided"],
      { status: "completed", finalText: "after retry" },
    ],
    [
      "an answer pi produces after the first stop message (a recovery, a compaction retry) decides instead",
      [
        stop("first"),
        agentEnd(true),
        { type: "compaction_end", willRetry: true },
        agentStart(),
        stop("second"),
        agentEnd(false),
        agentSettled(),
      ],
      ["none", "none", "none", "none", "none", "none", "decided"],
      { status: "completed", finalText: "second" },
    ],
    [
      "a queued steering message taken after the final answer: the continuation's answer decides",
      [
        queueUpdate(["STEER-1"]),
        stop("final answer"),
        turnEnd(),
        turnStart(),
        queueUpdate(),
        stop("continuation"),
        agentEnd(false),
        agentSettled(),
      ],
      ["none", "none", "none", "none", "none", "none", "none", "decided"],
      { status: "completed", finalText: "continuation" },
    ],
    [
      "a follow-up delivered after agent_end (a new agent_start): the follow-up's answer decides",
      [
        stop("first"),
        agentEnd(false),
        agentStart(),
        turnStart(),
        toolUse("c1"),
        toolStart("c1", "bash"),
        toolEnd("c1", "bash"),
        stop("follow-up"),
        agentEnd(false),
        agentSettled(),
      ],
      ["none", "none", "none", "none", "none", "none", "none", "none", "none", "decided"],
      { status: "completed", finalText: "follow-up" },
    ],
    [
      "a final error with retries spent is failed at agent_settled",
      [
        error("503 overloaded 2"),
        agentEnd(false),
        { type: "auto_retry_end", success: false, attempt: 1, finalError: "503 overloaded 2" },
        agentSettled(),
      ],
      ["none", "none", "none", "decided"],
      { status: "failed", stopReason: "error", errorMessage: "503 overloaded 2" },
    ],
    [
      "agent_settled with aborted: true after pi's own aborted message is pi's abort",
      [
        assistantEnd({ stopReason: "aborted", errorMessage: "This operation was aborted" }),
        agentEnd(false),
        agentSettled(true),
      ],
      ["none", "none", "decided"],
      { status: "aborted", abortSource: "child", abortReason: "This operation was aborted" },
    ],
    [
      "agent_settled with aborted: true and no aborted message (an abort during a retry's wait) is pi's abort",
      [error(), agentEnd(true), retryStart(), agentSettled(true)],
      ["none", "none", "none", "decided"],
      { status: "aborted", abortSource: "child", abortReason: "aborted by pi" },
    ],
    [
      "a system message is not an assistant turn and decides nothing",
      [agentStart(), turnStart(), systemMessage(), stop("hi"), agentSettled()],
      ["none", "none", "none", "none", "decided"],
      { status: "completed", finalText: "hi" },
    ],
    [
      "a child that exits without agent_settled: the last terminal message decides",
      [stop("first"), turnStart(), toolUse("c1")],
      ["none", "none", "none"],
      { status: "completed", finalText: "first" },
    ],
  ];

  it.each(rows)("%s", (_name, events, transitions, outcome) => {
    const { tracker, transitions: seen } = feed(true, events);
    expect(seen).toEqual(transitions);
    expect(tracker.finish(NO_EXIT)).toMatchObject(outcome);
  });

  it("agent_settled records a settled record, with aborted as pi said it", () => {
    const tracker = new OutcomeTracker({ settles: true });
    expect(tracker.observe(agentSettled(false)).records).toEqual([{ type: "settled", aborted: false }]);
    const aborted = new OutcomeTracker({ settles: true });
    aborted.observe(assistantEnd({ stopReason: "aborted", errorMessage: "stop" }));
    expect(aborted.observe(agentSettled(true)).records).toEqual([{ type: "settled", aborted: true }]);
    expect(new OutcomeTracker().observe({ type: "agent_settled" }).records).toEqual([{ type: "settled" }]);
  });

  it("a terminal message is provisional until agent_settled", () => {
    const tracker = new OutcomeTracker({ settles: true });
    tracker.observe(stop("hi"));
    expect(tracker.decided).toBeUndefined();
    expect(tracker.provisional).toMatchObject({ status: "completed" });
    tracker.observe(agentSettled());
    expect(tracker.decided).toMatchObject({ status: "completed" });
    expect(tracker.provisional).toBeUndefined();
  });

  it("agent_settled without any terminal message says so (grace starts); the exit decides", () => {
    const { tracker, transitions } = feed(true, [toolUse("c1"), agentEnd(false), agentSettled()]);
    expect(transitions).toEqual(["none", "none", "settled"]);
    expect(tracker.finish({ exitCode: 0, signal: null, stderrTail: "" })).toMatchObject({
      status: "incomplete",
      finalText: "checking",
    });
  });

  it("pi working again after it settled (an extension started a new run) takes the decision back; the next agent_settled decides", () => {
    const { tracker, transitions } = feed(true, [
      stop("first"),
      agentSettled(),
      agentStart(),
      turnStart(),
      stop("second"),
      agentEnd(false),
      agentSettled(),
    ]);
    expect(transitions).toEqual(["none", "decided", "revoked", "none", "none", "none", "decided"]);
    expect(tracker.finish(NO_EXIT)).toMatchObject({ finalText: "second" });
  });

  it("a second agent_settled with no work between changes nothing", () => {
    const { transitions } = feed(true, [stop("hi"), agentSettled(), agentSettled()]);
    expect(transitions).toEqual(["none", "decided", "none"]);
  });

  it("an [ABORT] marker still stops at once, before agent_settled, and nothing takes it back", () => {
    const tracker = new OutcomeTracker({ settles: true });
    const seen = tracker.observe(assistantEnd({ text: "[ABORT] no credentials" }));
    expect(seen.transition).toMatchObject({ kind: "decided", stopNow: true });
    expect(
      [agentStart(), stop("later"), agentSettled()].map((event) => tracker.observe(event).transition.kind),
    ).toEqual(["none", "none", "none"]);
    expect(tracker.finish(NO_EXIT)).toMatchObject({
      status: "aborted",
      abortSource: "marker",
      abortReason: "no credentials",
    });
  });

  it("a time-out while the answer is provisional decides timed_out, keeping the answer's text", () => {
    const tracker = new OutcomeTracker({ settles: true });
    tracker.observe(stop("almost"));
    expect(tracker.interrupt("timed_out", "run exceeded timeoutMs (5 ms)")).toMatchObject({
      kind: "decided",
      stopNow: true,
    });
    expect(tracker.observe(agentSettled()).transition.kind).toBe("none");
    expect(tracker.finish(NO_EXIT)).toMatchObject({
      status: "timed_out",
      finalText: "almost",
      errorMessage: "run exceeded timeoutMs (5 ms)",
    });
  });

  it("a signal after agent_settled changes nothing: the outcome is known", () => {
    const tracker = new OutcomeTracker({ settles: true });
    tracker.observe(stop("done"));
    tracker.observe(agentSettled());
    expect(tracker.interrupt("interrupted", "SIGTERM").kind).toBe("none");
    expect(tracker.finish({ exitCode: null, signal: "SIGTERM", stderrTail: "" })).toMatchObject({
      status: "completed",
      finalText: "done",
    });
  });

  it("live messages told by the extension change nothing here: agent_settled is the watermark", () => {
    const tracker = new OutcomeTracker({ settles: true });
    tracker.observe(stop("hi"));
    expect(tracker.setLivePending(1).kind).toBe("none");
    expect(tracker.setLivePending(0).kind).toBe("none");
    expect(tracker.observe(agentSettled()).transition.kind).toBe("decided");
  });
});

describe("OutcomeTracker on a pi without agent_settled (0.73.1): continuations", () => {
  const rows: Row[] = [
    [
      "a stop message followed by turn_start (a queued steer taken in the same run): the continuation decides",
      [stop("first"), turnEnd(), turnStart(), stop("continuation"), turnEnd(), agentEnd()],
      ["decided", "none", "revoked", "decided", "none", "none"],
      { status: "completed", finalText: "continuation" },
    ],
    [
      "a stop message decided while queue_update holds a message is provisional; agent_end makes it final (the message is lost)",
      [queueUpdate(["STEER-1"]), stop("final"), turnEnd(), agentEnd()],
      ["none", "none", "none", "decided"],
      { status: "completed", finalText: "final" },
    ],
    [
      "queue_update, then stop, then turn_start with the steer: the continuation's answer is the report",
      [
        queueUpdate(["STEER-1"]),
        stop("final answer"),
        turnEnd(),
        turnStart(),
        queueUpdate(),
        stop("continuation answer"),
        turnEnd(),
        agentEnd(),
      ],
      ["none", "none", "none", "none", "none", "decided", "none", "none"],
      { status: "completed", finalText: "continuation answer" },
    ],
    [
      "a message queued after the answer decided (before agent_end) takes the decision back until agent_end",
      [stop("final"), turnEnd(), queueUpdate(["late"]), agentEnd()],
      ["decided", "none", "revoked", "decided"],
      { status: "completed", finalText: "final" },
    ],
    [
      "a queue emptied without a continuation makes the held answer final",
      [queueUpdate(["x"]), stop("final"), queueUpdate()],
      ["none", "none", "decided"],
      { status: "completed", finalText: "final" },
    ],
    [
      "a queue_update after agent_end holds nothing: pi does not go on after it",
      [stop("final"), agentEnd(), queueUpdate(["too late"])],
      ["decided", "none", "none"],
      { status: "completed", finalText: "final" },
    ],
    [
      "an error while messages are queued is final at once (pi does not take its queue after an error)",
      [queueUpdate(["x"]), error("boom")],
      ["none", "decided"],
      { status: "failed", errorMessage: "boom" },
    ],
    [
      "a continuation that never answers: the earlier answer stands when the child exits",
      [stop("first"), turnStart(), toolUse("c1"), toolStart("c1", "bash")],
      ["decided", "revoked", "none", "none"],
      { status: "completed", finalText: "first" },
    ],
    [
      "a retried error that the child never answers is failed without a final answer (the error no longer decides)",
      [error("flaky"), agentEnd(), retryStart()],
      ["decided", "none", "revoked"],
      { status: "failed", errorMessage: "pi exited with code 0 without a final answer" },
    ],
  ];

  it.each(rows)("%s", (_name, events, transitions, outcome) => {
    const { tracker, transitions: seen } = feed(false, events);
    expect(seen).toEqual(transitions);
    expect(tracker.finish(NO_EXIT)).toMatchObject(outcome);
  });

  it("live messages the extension knows of hold a terminal answer like pi's queue; their delivery (turn_start) goes on", () => {
    const tracker = new OutcomeTracker();
    expect(tracker.setLivePending(1).kind).toBe("none");
    expect(tracker.observe(stop("final")).transition.kind).toBe("none");
    expect(tracker.provisional).toMatchObject({ status: "completed" });
    expect(tracker.observe(turnStart()).transition.kind).toBe("none");
    expect(tracker.setLivePending(0).kind).toBe("none");
    expect(tracker.observe(stop("answer to the message")).transition.kind).toBe("decided");
    expect(tracker.finish(NO_EXIT).finalText).toBe("answer to the message");
  });

  it("a live message told after the answer decided takes it back; its being dropped (count 0) decides again", () => {
    const tracker = new OutcomeTracker();
    tracker.observe(stop("final"));
    expect(tracker.setLivePending(2).kind).toBe("revoked");
    expect(tracker.setLivePending(0).kind).toBe("decided");
  });

  it("a first agent_settled tells the tracker its pi settles: a pending error is final, and grace starts again from it", () => {
    const { tracker, transitions } = feed(false, [error(), agentEnd(false), agentSettled(), retryStart()]);
    expect(transitions).toEqual(["decided", "none", "decided", "none"]);
    expect(tracker.emitsSettled).toBe(true);
    expect(tracker.finish(NO_EXIT)).toMatchObject({ status: "failed" });
  });
});
