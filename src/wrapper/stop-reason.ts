import type { StopReason } from "../contracts/events.js";

const CANONICAL: ReadonlyMap<string, StopReason> = new Map([
  ["stop", "stop"],
  ["end_turn", "stop"],
  ["endturn", "stop"],
  ["length", "length"],
  ["max_tokens", "length"],
  ["tooluse", "toolUse"],
  ["tool_use", "toolUse"],
  ["aborted", "aborted"],
  ["error", "error"],
]);

export interface NormalizedStopReason {
  /** Canonical value; `undefined` for a reason we do not know (never terminal). */
  stopReason: StopReason | undefined;
  /** What pi sent, trimmed; `undefined` when it sent nothing usable. */
  rawStopReason: string | undefined;
}

/** Canonicalize a raw stop reason case-insensitively, keeping the raw value. */
export function normalizeStopReason(value: unknown): NormalizedStopReason {
  if (typeof value !== "string" || value.trim() === "") {
    return { stopReason: undefined, rawStopReason: undefined };
  }
  const rawStopReason = value.trim();
  return { stopReason: CANONICAL.get(rawStopReason.toLowerCase()), rawStopReason };
}

/**
 * Whether an assistant message with this stop reason ends the run. `toolUse` and unknown
 * reasons never do; `stop`/`length` only when the message holds no tool call (pi would run
 * it); `aborted`/`error` always (pi never runs half-streamed calls in those).
 */
export function isTerminalStop(stopReason: StopReason | undefined, hasToolCall: boolean): boolean {
  switch (stopReason) {
    case "aborted":
    case "error":
      return true;
    case "stop":
    case "length":
      return !hasToolCall;
    default:
      return false;
  }
}
