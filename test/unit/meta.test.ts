import { describe, expect, it } from "vitest";
import { MetaError, parseMeta, resolveExtensionEntry } from "../../src/contracts/meta.js";

const base = { runId: "r1", task: "do it", cwd: ".", resultPath: "out/result.json", eventsPath: "out/events.jsonl" };

function errorOf(raw: unknown): MetaError {
  try {
    parseMeta(raw, "/base");
  } catch (err) {
    if (err instanceof MetaError) return err;
    throw err;
  }
  throw new Error("expected a MetaError");
}

describe("parseMeta", () => {
  it("resolves relative paths against the meta file's folder and keeps absolute ones", () => {
    const meta = parseMeta({ ...base, sessionPath: "/abs/s.jsonl", stdoutPath: "logs/out.log", systemPromptPath: "../p.md" }, "/base/dir");
    expect(meta).toMatchObject({
      cwd: "/base/dir",
      resultPath: "/base/dir/out/result.json",
      eventsPath: "/base/dir/out/events.jsonl",
      sessionPath: "/abs/s.jsonl",
      stdoutPath: "/base/dir/logs/out.log",
      systemPromptPath: "/base/p.md",
    });
  });

  it("keeps the task verbatim, an empty one included", () => {
    const task = "  -x\n@file\n/template \"quoted\" ünïcödé  \n";
    expect(parseMeta({ ...base, task }, "/b").task).toBe(task);
    expect(parseMeta({ ...base, task: "" }, "/b").task).toBe("");
  });

  it("ignores unknown fields", () => {
    const meta = parseMeta({ ...base, futureField: { nested: true } }, "/b");
    expect(meta).not.toHaveProperty("futureField");
  });

  it("resolves extension paths but passes package specs through", () => {
    const meta = parseMeta({ ...base, extensions: ["./ext.ts", "/abs/ext.ts", "npm:pi-foo", "pi-bar@1.0"] }, "/b");
    expect(meta.extensions).toEqual(["/b/ext.ts", "/abs/ext.ts", "npm:pi-foo", "pi-bar@1.0"]);
    expect(resolveExtensionEntry("../up.ts", "/b/c")).toBe("/b/up.ts");
  });

  it.each([
    ["not an object", [1, 2], "meta.json must hold a JSON object, not an array"],
    ["null", null, "meta.json must hold a JSON object, not null"],
    ["missing runId", { ...base, runId: undefined }, 'meta.json is missing required field "runId"'],
    ["missing task", { ...base, task: undefined }, 'meta.json is missing required field "task"'],
    ["missing cwd", { ...base, cwd: undefined }, 'meta.json is missing required field "cwd"'],
    ["missing eventsPath", { ...base, eventsPath: undefined }, 'meta.json is missing required field "eventsPath"'],
    ["a numeric task", { ...base, task: 5 }, 'meta.json field "task" must be a string, not a number'],
    ["an empty cwd", { ...base, cwd: "" }, 'meta.json field "cwd" must not be empty'],
    ["a numeric model", { ...base, requestedModel: 3 }, 'meta.json field "requestedModel" must be a string, not a number'],
    ["tools as a string", { ...base, tools: "read,bash" }, 'meta.json field "tools" must be an array of non-empty strings'],
    ["extensions with a number", { ...base, extensions: ["a", 1] }, 'meta.json field "extensions" must be an array of non-empty strings'],
    ["noExtensions as a string", { ...base, noExtensions: "yes" }, 'meta.json field "noExtensions" must be a boolean, not a string'],
    ["a zero timeout", { ...base, timeoutMs: 0 }, 'meta.json field "timeoutMs" must be a positive number of milliseconds, not 0'],
    ["a negative grace", { ...base, graceMs: -5 }, 'meta.json field "graceMs" must be a positive number of milliseconds, not -5'],
    ["a string timeout", { ...base, timeoutMs: "100" }, 'meta.json field "timeoutMs" must be a positive number of milliseconds, not "100"'],
    ["an unknown thinking level", { ...base, thinking: "max" }, 'meta.json field "thinking" must be one of off, minimal, low, medium, high, xhigh, not "max"'],
    ["env as an array", { ...base, env: ["A=1"] }, 'meta.json field "env" must be an object of strings, not an array'],
    ["a numeric env value", { ...base, env: { A: 1 } }, 'meta.json field "env.A" must be a string, not a number'],
    ["another version", { ...base, version: 2 }, "meta.json version 2 is not supported (this wrapper reads version 1)"],
  ])("rejects %s with one clear line", (_name, raw, message) => {
    const error = errorOf(raw);
    expect(error.message).toBe(message);
    expect(error.message).not.toContain("\n");
  });

  it("carries the resolved resultPath and runId of an invalid meta so a failed result can be written", () => {
    const error = errorOf({ ...base, thinking: "lots" });
    expect(error.resultPath).toBe("/base/out/result.json");
    expect(error.runId).toBe("r1");
    expect(errorOf({ runId: "r2" }).resultPath).toBeUndefined();
  });
});
