import { describe, expect, it } from "vitest";
import { clampTimeout } from "../../../../src/extension/tools/wait-agent.js";

describe("wait_agent timeout_ms", () => {
  it.each([
    [undefined, 30_000],
    ["5000", 30_000],
    [Number.NaN, 30_000],
    [-5, 0],
    [0, 0],
    [1500.7, 1500],
    [3_600_000, 3_600_000],
    [99_999_999, 3_600_000],
    [Number.POSITIVE_INFINITY, 30_000],
  ])("%j waits %i ms", (given, effective) => {
    expect(clampTimeout(given)).toBe(effective);
  });
});
