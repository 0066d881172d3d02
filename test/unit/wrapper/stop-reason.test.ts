import { describe, expect, it } from "vitest";
import { isTerminalStop, normalizeStopReason } from "../../../src/wrapper/stop-reason.js";

describe("normalizeStopReason", () => {
  it.each([
    ["stop", "stop"],
    ["STOP", "stop"],
    ["end_turn", "stop"],
    ["EndTurn", "stop"],
    ["endturn", "stop"],
    ["length", "length"],
    ["max_tokens", "length"],
    ["MAX_TOKENS", "length"],
    ["toolUse", "toolUse"],
    ["tool_use", "toolUse"],
    ["TOOLUSE", "toolUse"],
    ["aborted", "aborted"],
    ["Aborted", "aborted"],
    ["error", "error"],
    ["ERROR", "error"],
  ] as const)("maps %s to %s and keeps the raw value", (raw, canonical) => {
    expect(normalizeStopReason(raw)).toEqual({ stopReason: canonical, rawStopReason: raw });
  });

  it.each(["custom_reason", "content_filter", "tool_calls", "stopped"])(
    "leaves unknown %s undefined but keeps it raw",
    (raw) => {
      expect(normalizeStopReason(raw)).toEqual({ stopReason: undefined, rawStopReason: raw });
    },
  );

  it.each([undefined, null, 42, "", "   "])("reads %j as no stop reason at all", (raw) => {
    expect(normalizeStopReason(raw)).toEqual({ stopReason: undefined, rawStopReason: undefined });
  });

  it("trims the raw value before mapping", () => {
    expect(normalizeStopReason("  end_turn\n")).toEqual({ stopReason: "stop", rawStopReason: "end_turn" });
  });
});

describe("isTerminalStop", () => {
  it.each([
    ["stop", false, true],
    ["stop", true, false],
    ["length", false, true],
    ["length", true, false],
    ["toolUse", false, false],
    ["toolUse", true, false],
    ["aborted", true, true],
    ["error", true, true],
    [undefined, false, false],
  ] as const)("stop reason %s with tool call %s → terminal %s", (reason, hasToolCall, terminal) => {
    expect(isTerminalStop(reason, hasToolCall)).toBe(terminal);
  });
});
