import { describe, expect, it } from "vitest";
import type { TurnLimits } from "../../../src/contracts/limits.js";
import { type LimitStep, LimitTracker, wrapUpMessage } from "../../../src/wrapper/limit-tracker.js";
import type { PiEvent } from "../../../src/wrapper/normalize.js";
import { assistantEnd } from "../../support/pi-events.js";

/** USAGE of pi-events: 10 in + 5 out = 15 tokens (18 with cache), $0.0033 a request. */
const work = (text = "working") =>
  assistantEnd({ text, stopReason: "toolUse", toolCalls: [{ id: "c", name: "bash" }] });
const answer = (text = "done") => assistantEnd({ text, stopReason: "stop" });
const user = (text: string): PiEvent => ({
  type: "message_end",
  message: { role: "user", content: [{ type: "text", text }] },
});

/** A step of a case: an event, time passing (`{ advance: ms }`), or the wrap-up message being read. */
type Step = PiEvent | { advance: number } | "wrap-up read";

function run(
  limits: TurnLimits,
  steps: Step[],
): { tracker: LimitTracker; kinds: LimitStep["kind"][]; last: LimitStep } {
  let now = 1_000_000;
  const tracker = new LimitTracker(limits, () => now);
  const kinds: LimitStep["kind"][] = [];
  let last: LimitStep = { kind: "none" };
  for (const step of steps) {
    let result: LimitStep;
    if (step === "wrap-up read") result = tracker.observe(user(tracker.wrapUpText ?? "?"));
    else if (typeof step.advance === "number") {
      now += step.advance;
      result = tracker.check();
    } else result = tracker.observe(step as PiEvent);
    kinds.push(result.kind);
    if (result.kind !== "none") last = result;
  }
  return { tracker, kinds, last };
}

describe("LimitTracker: when a turn is told to wrap up, and when it is stopped", () => {
  it.each<[string, TurnLimits, Step[], LimitStep["kind"][], { name: string; value: number; used: number } | undefined]>(
    [
      [
        "max_turns is reached at the request that meets it and still works on",
        { max_turns: 2 },
        [work(), work()],
        ["none", "wrap_up"],
        { name: "max_turns", value: 2, used: 2 },
      ],
      [
        "an answer at the limit is the answer: no wrap-up",
        { max_turns: 2 },
        [work(), answer()],
        ["none", "none"],
        undefined,
      ],
      [
        "max_tokens counts input + output (not cache)",
        { max_tokens: 30 },
        [work(), work()],
        ["none", "wrap_up"],
        { name: "max_tokens", value: 30, used: 30 },
      ],
      [
        "max_tokens below the first request's use is reached at once",
        { max_tokens: 1 },
        [work()],
        ["wrap_up"],
        { name: "max_tokens", value: 1, used: 15 },
      ],
      [
        "max_cost counts usage cost.total in USD",
        { max_cost: 0.006 },
        [work(), work()],
        ["none", "wrap_up"],
        { name: "max_cost", value: 0.006, used: 0.0066 },
      ],
      [
        "time_limit is reached when its seconds have passed",
        { time_limit: 5 },
        [work(), { advance: 4999 }, { advance: 1 }],
        ["none", "none", "wrap_up"],
        { name: "time_limit", value: 5, used: 5 },
      ],
      [
        "nothing set but the time: requests never wrap up",
        { time_limit: 100 },
        [work(), work(), work(), work()],
        ["none", "none", "none", "none"],
        undefined,
      ],
      [
        "the first limit reached wins; a later one adds nothing",
        { max_turns: 1, max_tokens: 20 },
        [work(), work(), work()],
        ["wrap_up", "none", "none"],
        { name: "max_turns", value: 1, used: 1 },
      ],
    ],
  )("%s", (_title, limits, steps, kinds, reached) => {
    const result = run(limits, steps);
    expect(result.kinds).toEqual(kinds);
    expect(result.tracker.reached).toEqual(reached);
  });

  it.each<[string, TurnLimits, Step[], LimitStep["kind"][]]>([
    [
      "an answer within the grace: no stop",
      { max_turns: 1 },
      [work(), "wrap-up read", answer()],
      ["wrap_up", "none", "none"],
    ],
    [
      "the second grace request that still calls a tool stops the turn (grace_turns 2)",
      { max_turns: 1 },
      [work(), "wrap-up read", work(), work()],
      ["wrap_up", "none", "none", "stop"],
    ],
    [
      "grace_turns 1: the first request after the message that calls a tool stops",
      { max_turns: 1, grace_turns: 1 },
      [work(), "wrap-up read", work()],
      ["wrap_up", "none", "stop"],
    ],
    [
      "requests before the message is read are not the grace",
      { max_turns: 1, grace_turns: 1 },
      [work(), work(), work(), "wrap-up read", answer()],
      ["wrap_up", "none", "none", "none", "none"],
    ],
    [
      "grace_seconds run from the limit, read or not",
      { max_turns: 1, grace_seconds: 10 },
      [work(), { advance: 9999 }, { advance: 1 }],
      ["wrap_up", "none", "stop"],
    ],
    [
      "time_limit then its grace: the turn stops grace_seconds after the time ran out",
      { time_limit: 60 },
      [{ advance: 60_000 }, { advance: 60_000 }],
      ["wrap_up", "stop"],
    ],
    [
      "after a stop nothing more happens",
      { max_turns: 1, grace_turns: 1 },
      [work(), "wrap-up read", work(), work(), { advance: 1e9 }],
      ["wrap_up", "none", "stop", "none", "none"],
    ],
  ])("%s", (_title, limits, steps, kinds) => {
    expect(run(limits, steps).kinds).toEqual(kinds);
  });

  it("the stop says which limit and why; the grace's defaults are 2 requests and 60 s", () => {
    const { last } = run({ max_turns: 3 }, [work(), work(), work(), "wrap-up read", work(), work()]);
    expect(last).toEqual({
      kind: "stop",
      limit: { name: "max_turns", value: 3, used: 3 },
      reason: "limit max_turns reached (3 of 3): no answer within the grace of 2 model requests",
    });
    const timed = run({ max_turns: 1 }, [work(), { advance: 59_999 }, { advance: 1 }]);
    expect(timed.kinds).toEqual(["wrap_up", "none", "stop"]);
  });

  it("the wrap-up message names the limit, what to do and the grace", () => {
    const { last } = run({ max_turns: 1, grace_turns: 3, grace_seconds: 90 }, [work()]);
    expect(last.kind).toBe("wrap_up");
    const text = (last as Extract<LimitStep, { kind: "wrap_up" }>).message;
    expect(text).toBe(wrapUpMessage({ name: "max_turns", value: 1, used: 1 }, 3, 90));
    expect(text).toContain("[LIMIT max_turns]");
    expect(text).toContain("1 of 1 model requests");
    expect(text).toMatch(/Finish the tool call under way, start nothing new/);
    expect(text).toMatch(/what is done, what is left,\s+and the state of the files/);
    expect(text).toContain("3 more model requests and 90 s");
  });

  it("an outside limit (the tree's budget) wraps up once, like the run's own", () => {
    let now = 0;
    const tracker = new LimitTracker({}, () => now);
    tracker.observe(work());
    const step = tracker.reach("tree_budget_tokens", 10, tracker.used.totalTokens);
    expect(step).toMatchObject({ kind: "wrap_up", limit: { name: "tree_budget_tokens", value: 10, used: 18 } });
    expect(tracker.reach("tree_budget_cost", 1, 2).kind).toBe("none");
    now = 60_000;
    expect(tracker.check()).toMatchObject({ kind: "stop" });
  });

  it("counts what was used, and keeps the last assistant text that was not empty", () => {
    let now = 0;
    const tracker = new LimitTracker({}, () => now);
    tracker.observe(work("reading the code"));
    tracker.observe(assistantEnd({ stopReason: "toolUse", toolCalls: [{ id: "d", name: "read" }] }));
    now = 1234;
    expect(tracker.used).toEqual({ turns: 2, tokens: 30, totalTokens: 36, cost: 0.0066, seconds: 1.2 });
    expect(tracker.lastAssistantText).toBe("reading the code");
    expect(tracker.nextCheckAt()).toBe(30 * 60 * 1000);
  });
});

describe("LimitTracker: a wrap-up that cannot reach the child", () => {
  it("stops the run at once, saying why; nothing before a limit", () => {
    const tracker = new LimitTracker({ max_turns: 1 }, () => 0);
    expect(tracker.undeliverable("disk full").kind).toBe("none");
    tracker.observe(work());
    expect(tracker.undeliverable("disk full")).toEqual({
      kind: "stop",
      limit: { name: "max_turns", value: 1, used: 1 },
      reason: "limit max_turns reached (1 of 1): the wrap-up message could not be given to the child (disk full)",
    });
    expect(tracker.nextCheckAt()).toBeUndefined();
  });
});
