import { describe, expect, it } from "vitest";
import { MetaError, parseMeta, resolveExtensionEntry } from "../../src/contracts/meta.js";
import { BASE_META as base, INVALID_META } from "../support/meta-examples.js";

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
    const task = '  -x\n@file\n/template "quoted" ünïcödé  \n';
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

  it.each(INVALID_META)("rejects %s with one clear line", (_name, raw, message) => {
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
