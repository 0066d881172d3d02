import { describe, expect, it } from "vitest";
import type { PiEvent } from "../../../src/wrapper/normalize.js";
import { OutcomeTracker, type Transition } from "../../../src/wrapper/outcome.js";
import { assistantEnd, retryStart, toolEnd, toolStart } from "../../support/pi-events.js";

const NO_EXIT = { exitCode: 0, signal: null, stderrTail: "" };

function feed(events: PiEvent[]): { tracker: OutcomeTracker; transitions: Transition["kind"][] } {
  const tracker = new OutcomeTracker();
  const transitions = events.map((event) => tracker.observe(event).transition.kind);
  return { tracker, transitions };
}

describe("OutcomeTracker: when a run is over", () => {
  it("does not end on a toolUse message; the later true completion decides", () => {
    const { tracker, transitions } = feed([
      assistantEnd({ text: "starting", stopReason: "toolUse", toolCalls: [{ id: "c1", name: "read" }] }),
      toolStart("c1", "read", { path: "src/auth.ts" }),
      toolEnd("c1", "read"),
      assistantEnd({ text: "final", stopReason: "stop" }),
    ]);
    expect(transitions).toEqual(["none", "none", "none", "decided"]);
    expect(tracker.finish(NO_EXIT)).toEqual({
      status: "completed",
      stopReason: "stop",
      rawStopReason: "stop",
      finalText: "final",
    });
    expect(tracker.toolCalls).toBe(1);
    expect(tracker.turns).toBe(2);
  });

  it.each([
    ["stop", "completed"],
    ["end_turn", "completed"],
    ["length", "truncated"],
    ["max_tokens", "truncated"],
    ["error", "failed"],
  ])("a terminal %s message makes the run %s", (stopReason, status) => {
    const { tracker, transitions } = feed([assistantEnd({ text: "x", stopReason })]);
    expect(transitions).toEqual(["decided"]);
    expect(tracker.finish(NO_EXIT).status).toBe(status);
  });

  it("a stop message that still holds a tool call is not terminal", () => {
    const { transitions } = feed([
      assistantEnd({ text: "x", stopReason: "stop", toolCalls: [{ id: "c", name: "bash" }] }),
    ]);
    expect(transitions).toEqual(["none"]);
  });

  it("an unknown stop reason is not terminal", () => {
    const { tracker, transitions } = feed([
      assistantEnd({ text: "hmm", stopReason: "weird" }),
      assistantEnd({ text: "real end" }),
    ]);
    expect(transitions).toEqual(["none", "decided"]);
    expect(tracker.finish(NO_EXIT).finalText).toBe("real end");
  });

  it("the first terminal message wins; later messages, markers and signals change nothing", () => {
    const tracker = new OutcomeTracker();
    tracker.observe(assistantEnd({ text: "done" }));
    const later = tracker.observe(assistantEnd({ text: "[ABORT] too late", stopReason: "stop" }));
    expect(later.transition.kind).toBe("none");
    expect(later.records.map((r) => r.type)).toEqual(["assistant_text"]);
    expect(tracker.interrupt("interrupted", "SIGTERM").kind).toBe("none");
    expect(tracker.interrupt("timed_out", "slow").kind).toBe("none");
    expect(tracker.finish({ exitCode: null, signal: "SIGTERM", stderrTail: "" })).toMatchObject({
      status: "completed",
      finalText: "done",
    });
    expect(tracker.turns).toBe(2);
  });

  it("sums usage over every assistant message, failed attempts included", () => {
    const { tracker } = feed([
      assistantEnd({ stopReason: "error", errorMessage: "boom" }),
      retryStart(),
      assistantEnd({ text: "ok", usage: { input: 1, output: 1, totalTokens: 2, cost: { total: 1 } } }),
      assistantEnd({ text: "after", usage: { input: 100, totalTokens: 100 } }),
    ]);
    expect(tracker.usage.input).toBe(10 + 1 + 100);
    expect(tracker.usage.totalTokens).toBe(18 + 2 + 100);
    expect(tracker.usage.cost.total).toBeCloseTo(0.0033 + 1);
    expect(tracker.turns).toBe(3);
    expect(tracker.resolvedModel).toBe("fake/fast");
  });

  it("its counts are read-only from outside: usage is handed out as a copy", () => {
    const { tracker } = feed([assistantEnd({ text: "done" })]);
    const usage = tracker.usage;
    usage.input = 1_000_000;
    usage.cost.total = 99;
    expect(tracker.usage.input).toBe(10);
    expect(tracker.usage.cost.total).toBeCloseTo(0.0033);
    // @ts-expect-error turns has no setter
    expect(() => (tracker.turns = 7)).toThrow(TypeError);
    expect(tracker.turns).toBe(1);
  });
});

describe("OutcomeTracker: retries", () => {
  it("an error followed by auto_retry_start is not final; the next terminal message decides", () => {
    const { tracker, transitions } = feed([
      assistantEnd({ stopReason: "error", errorMessage: "429" }),
      { type: "agent_end", willRetry: false },
      retryStart(),
      assistantEnd({ text: "recovered" }),
    ]);
    expect(transitions).toEqual(["decided", "none", "revoked", "decided"]);
    expect(tracker.finish(NO_EXIT)).toMatchObject({ status: "completed", finalText: "recovered" });
  });

  it.each([
    ["agent_end with willRetry", { type: "agent_end", willRetry: true }],
    ["compaction_end with willRetry", { type: "compaction_end", willRetry: true }],
  ])("%s takes an error decision back", (_name, event) => {
    const { transitions } = feed([assistantEnd({ stopReason: "error" }), event]);
    expect(transitions).toEqual(["decided", "revoked"]);
  });

  it("an error with no retry stays failed, with pi's message", () => {
    const { tracker } = feed([
      assistantEnd({ stopReason: "error", errorMessage: "provider exploded" }),
      { type: "agent_end" },
    ]);
    expect(tracker.finish(NO_EXIT)).toMatchObject({
      status: "failed",
      stopReason: "error",
      errorMessage: "provider exploded",
    });
  });

  it("a retry event never revokes a completed run", () => {
    const { transitions } = feed([assistantEnd({ text: "done" }), retryStart()]);
    expect(transitions).toEqual(["decided", "none"]);
  });
});

describe("OutcomeTracker: [ABORT]", () => {
  it("latches the first marker, stops the child at once, and records its reason", () => {
    const tracker = new OutcomeTracker();
    const seen = tracker.observe(
      assistantEnd({ text: ["intro", "Checked.\n[ABORT] API is not enabled for this project"] }),
    );
    expect(seen.transition).toMatchObject({ kind: "decided", stopNow: true });
    expect(seen.records.at(-1)).toEqual({
      type: "abort",
      reason: "API is not enabled for this project",
      source: "marker",
    });
    expect(tracker.finish(NO_EXIT)).toMatchObject({
      status: "aborted",
      abortReason: "API is not enabled for this project",
      abortSource: "marker",
    });
  });

  it("a marker in a toolUse message ends the run too", () => {
    const { tracker, transitions } = feed([
      assistantEnd({ text: "[ABORT] no credentials", stopReason: "toolUse", toolCalls: [{ id: "c", name: "bash" }] }),
    ]);
    expect(transitions).toEqual(["decided"]);
    expect(tracker.finish(NO_EXIT).status).toBe("aborted");
  });

  it("a marker quoted mid-line does not count", () => {
    const { tracker } = feed([assistantEnd({ text: "Note: do not write [ABORT] here" })]);
    expect(tracker.finish(NO_EXIT).status).toBe("completed");
  });

  it("pi's own abort is aborted with source child and pi's message", () => {
    const tracker = new OutcomeTracker();
    const seen = tracker.observe(assistantEnd({ stopReason: "aborted", errorMessage: "Request was aborted" }));
    expect(seen.transition).toMatchObject({ kind: "decided", stopNow: false });
    expect(seen.records.at(-1)).toEqual({ type: "abort", reason: "Request was aborted", source: "child" });
    expect(tracker.finish(NO_EXIT)).toMatchObject({
      status: "aborted",
      abortSource: "child",
      abortReason: "Request was aborted",
    });
  });
});

describe("OutcomeTracker: a child that exits without a terminal message", () => {
  it("is incomplete when its last message asked for a tool", () => {
    const { tracker } = feed([
      assistantEnd({ text: "running ls", stopReason: "toolUse", toolCalls: [{ id: "c", name: "bash" }] }),
    ]);
    const outcome = tracker.finish({ exitCode: 3, signal: null, stderrTail: "boom: something broke\n" });
    expect(outcome).toMatchObject({ status: "incomplete", stopReason: "toolUse", finalText: "running ls" });
    expect(outcome.errorMessage).toContain("exited with code 3");
    expect(outcome.errorMessage).toContain("boom: something broke");
  });

  it("is failed otherwise, naming the signal", () => {
    const { tracker } = feed([]);
    const outcome = tracker.finish({ exitCode: null, signal: "SIGSEGV", stderrTail: "" });
    expect(outcome.status).toBe("failed");
    expect(outcome.errorMessage).toBe("pi was killed by SIGSEGV without a final answer");
  });

  it("an interruption before any terminal message decides the run", () => {
    const tracker = new OutcomeTracker();
    tracker.observe(assistantEnd({ text: "thinking aloud", stopReason: "toolUse" }));
    expect(tracker.interrupt("timed_out", "run exceeded timeoutMs (5 ms)")).toMatchObject({
      kind: "decided",
      stopNow: true,
    });
    expect(tracker.observe(assistantEnd({ text: "late" })).transition.kind).toBe("none");
    expect(tracker.finish({ exitCode: null, signal: "SIGTERM", stderrTail: "" })).toMatchObject({
      status: "timed_out",
      finalText: "thinking aloud",
      errorMessage: "run exceeded timeoutMs (5 ms)",
    });
  });
});
