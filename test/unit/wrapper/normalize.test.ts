import { describe, expect, it } from "vitest";
import { normalizeUsage } from "../../../src/contracts/usage.js";
import { normalizePiEvent } from "../../../src/wrapper/normalize.js";
import { assistantEnd, retryStart, toolEnd, toolStart, USAGE } from "../../support/pi-events.js";

describe("normalizePiEvent", () => {
  it.each([
    [
      "an assistant message_end with the canonical stop reason and the raw one kept",
      assistantEnd({ text: "Final answer", stopReason: "end_turn" }),
      [
        {
          type: "assistant_text",
          text: "Final answer",
          model: "fake/fast",
          stopReason: "stop",
          rawStopReason: "end_turn",
          usage: USAGE,
        },
      ],
    ],
    [
      "text blocks joined by a newline and trimmed, thinking and tool calls left out",
      assistantEnd({
        text: ["  first", "second  \n"],
        thinking: "secret",
        toolCalls: [{ id: "c1", name: "bash" }],
        stopReason: "toolUse",
      }),
      [
        {
          type: "assistant_text",
          text: "first\nsecond",
          model: "fake/fast",
          stopReason: "toolUse",
          rawStopReason: "toolUse",
          usage: USAGE,
        },
      ],
    ],
    [
      "an unknown stop reason as undefined with the raw value",
      assistantEnd({ text: "hmm", stopReason: "weird" }),
      [{ type: "assistant_text", text: "hmm", model: "fake/fast", rawStopReason: "weird", usage: USAGE }],
    ],
    [
      "pi's error message",
      assistantEnd({ stopReason: "error", errorMessage: "500 upstream" }),
      [
        {
          type: "assistant_text",
          text: "",
          model: "fake/fast",
          stopReason: "error",
          rawStopReason: "error",
          usage: USAGE,
          errorMessage: "500 upstream",
        },
      ],
    ],
    [
      "a tool start",
      toolStart("call_1", "bash", { command: "ls" }),
      [{ type: "tool_call", toolCallId: "call_1", toolName: "bash", args: { command: "ls" } }],
    ],
    [
      "a tool end",
      toolEnd("call_1", "bash", true),
      [{ type: "tool_result", toolCallId: "call_1", toolName: "bash", isError: true }],
    ],
    [
      "a retry start",
      retryStart(2),
      [{ type: "retry", phase: "start", attempt: 2, maxAttempts: 3, delayMs: 2000, errorMessage: "429 rate limited" }],
    ],
    [
      "a retry end",
      { type: "auto_retry_end", success: false, attempt: 3, finalError: "gave up" },
      [{ type: "retry", phase: "end", attempt: 3, success: false, finalError: "gave up" }],
    ],
    [
      "pi's agent_settled as a settled record, aborted kept",
      { type: "agent_settled", aborted: true },
      [{ type: "settled", aborted: true }],
    ],
    ["an agent_settled without aborted as a bare settled record", { type: "agent_settled" }, [{ type: "settled" }]],
    [
      "pi 1.x's system message_end as nothing",
      { type: "message_end", message: { role: "system", content: "", sections: {} } },
      [],
    ],
    ["a user message_end as nothing", { type: "message_end", message: { role: "user", content: "hi" } }, []],
    ["a tool result message_end as nothing", { type: "message_end", message: { role: "toolResult", content: [] } }, []],
    ["message_update as nothing", { type: "message_update", message: assistantEnd().message }, []],
    ["the session header as nothing", { type: "session", version: 3, id: "x" }, []],
    ["an unknown event type as nothing", { type: "something_new", payload: 1 }, []],
  ])("normalizes %s", (_name, event, records) => {
    expect(normalizePiEvent(event)).toEqual(records);
  });

  it("tolerates a message_end whose message is malformed", () => {
    expect(normalizePiEvent({ type: "message_end", message: "nope" })).toEqual([]);
    expect(normalizePiEvent({ type: "message_end", message: { role: "assistant", content: "not an array" } })).toEqual([
      { type: "assistant_text", text: "", usage: normalizeUsage(undefined) },
    ]);
  });
});

describe("normalizeUsage", () => {
  it("reads missing or non-numeric fields as 0", () => {
    expect(normalizeUsage({ input: 3, output: "x", cost: { total: 0.5 } })).toEqual({
      input: 3,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 0,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0.5 },
    });
  });
});
