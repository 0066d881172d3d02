import { describe, expect, it } from "vitest";
import { checkMeta } from "../../../src/contracts/meta-check.js";
import { checkResult } from "../../../src/contracts/result.js";

const meta = { runId: "r", task: "t", cwd: "/tmp", resultPath: "/tmp/r.json", eventsPath: "/tmp/e.jsonl" };
const result = {
  version: 1,
  runId: "r",
  status: "completed",
  exitCode: 0,
  finalText: "",
  usage: {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  },
  turns: 0,
  toolCalls: 0,
  startedAt: "2026-01-01T00:00:00.000Z",
  endedAt: "2026-01-01T00:00:00.000Z",
  durationMs: 0,
  childExitCode: 0,
  childSignal: null,
  forcedExit: false,
};

describe("fallback fields in the contracts", () => {
  it("meta.json fallbackModels: a list of non-empty model names; anything else is a problem naming the field", () => {
    expect(checkMeta({ ...meta, fallbackModels: ["a/x", "b/y"] }, "/").fields.fallbackModels).toEqual(["a/x", "b/y"]);
    expect(checkMeta({ ...meta, fallbackModels: ["a/x", ""] }, "/").problems).toEqual([
      'meta.json field "fallbackModels" must be an array of non-empty strings',
    ]);
    expect(checkMeta({ ...meta, fallbackModels: "a/x" }, "/").problems).toHaveLength(1);
    expect(checkMeta({ ...meta, fallbackModels: ["a/x"] }, "/").unknown).toEqual([]);
  });

  it("result.json attempts: each model, error_class, message and at; a malformed one is a damaged result", () => {
    const attempt = { model: "a/x", error_class: "rate_limit", message: "429", at: "2026-01-01T00:00:00.000Z" };
    expect(checkResult({ ...result, attempts: [attempt, { ...attempt, retry_after_ms: 20_000 }] }).ok).toBe(true);
    expect(checkResult(result).ok).toBe(true);
    const bad = checkResult({ ...result, attempts: [{ model: "a/x" }] });
    expect(bad.ok).toBe(false);
    expect(bad.ok ? "" : bad.problem).toContain("attempts");
  });
});
