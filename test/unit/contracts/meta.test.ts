import { describe, expect, it } from "vitest";
import { MetaError } from "../../../src/contracts/meta.js";
import {
  checkMeta,
  nearestKnownField,
  parseMeta,
  resolveExtensionEntry,
  unknownFieldWarning,
} from "../../../src/contracts/meta-check.js";
import { BASE_META as base, INVALID_META } from "../../support/meta-examples.js";

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
    const meta = parseMeta(
      { ...base, sessionPath: "/abs/s.jsonl", stdoutPath: "logs/out.log", systemPromptPath: "../p.md" },
      "/base/dir",
    );
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

describe("checkMeta: every problem at once", () => {
  it("{} lists the five required fields in order", () => {
    expect(checkMeta({}, "/b").problems).toEqual(
      ["runId", "task", "cwd", "resultPath", "eventsPath"].map((f) => `meta.json is missing required field "${f}"`),
    );
  });

  it("limits: valid keys are kept; each bad key is a problem naming it, the field left out", () => {
    expect(checkMeta({ ...base, limits: { max_turns: 5, max_cost: 0.5 } }, "/b")).toMatchObject({
      problems: [],
      fields: { limits: { max_turns: 5, max_cost: 0.5 } },
    });
    const bad = checkMeta({ ...base, limits: { max_turns: 1.5, colour: 1 } }, "/b");
    expect(bad.problems).toEqual([
      "meta.json field limits.max_turns must be a positive whole number, not 1.5",
      'meta.json field limits: unknown key "colour" (known: max_turns, max_tokens, max_cost, time_limit, grace_turns, grace_seconds)',
    ]);
    expect(bad.fields).not.toHaveProperty("limits");
    // An older meta.json with only timeoutMs stays valid.
    expect(checkMeta({ ...base, timeoutMs: 1000 }, "/b").problems).toEqual([]);
  });

  it("reports each bad field once, keeps the valid ones (paths resolved), and parseMeta's error holds them all", () => {
    const raw = { ...base, runId: 3, tools: "x", timeoutMs: 0, env: { A: 1, B: "ok", C: null }, stdoutPath: "o.log" };
    const { problems, fields } = checkMeta(raw, "/b");
    expect(problems).toEqual([
      'meta.json field "runId" must be a string, not a number',
      'meta.json field "tools" must be an array of non-empty strings',
      'meta.json field "timeoutMs" must be a positive number of milliseconds, not 0',
      'meta.json field "env.A" must be a string, not a number',
      'meta.json field "env.C" must be a string, not null',
    ]);
    expect(fields).toMatchObject({
      task: "do it",
      cwd: "/b",
      resultPath: "/b/out/result.json",
      stdoutPath: "/b/o.log",
    });
    expect(fields).not.toHaveProperty("runId");
    expect(fields).not.toHaveProperty("env");
    const error = errorOf(raw);
    expect(error.problems).toEqual(problems);
    expect(error.message).toBe(problems.join("; "));
    expect(error.resultPath).toBe("/base/out/result.json");
    expect(error.runId).toBeUndefined();
  });

  it("lists unknown fields with the nearest known one, and none for a name nothing is close to", () => {
    const { unknown, problems } = checkMeta({ ...base, timeoutMS: 5, graceMS: 1, futureField: 1, version: 1 }, "/b");
    expect(problems).toEqual([]);
    expect(unknown).toEqual([
      { field: "timeoutMS", nearest: "timeoutMs" },
      { field: "graceMS", nearest: "graceMs" },
      { field: "futureField" },
    ]);
  });
});

describe("nearestKnownField", () => {
  it.each([
    ["timeoutMS", "timeoutMs"],
    ["RUNID", "runId"],
    ["evntsPath", "eventsPath"],
    ["resultpth", "resultPath"],
    ["stdout", "stdoutPath"],
    ["grace", "graceMs"],
    ["tool", "tools"],
    ["mod", "mode"],
    ["sytemPromptPath", "systemPromptPath"],
    ["versoin", "version"],
  ])("%s → %s", (field, nearest) => {
    expect(nearestKnownField(field)).toBe(nearest);
  });

  it.each([
    // another spelling of the same name
    ["timeout_ms", "timeoutMs"],
    ["result-path", "resultPath"],
    ["Thinking", "thinking"],
    // a name writers use for the field, never a field that is only spelt alike
    ["model", "resolvedModel"],
    ["Model", "resolvedModel"],
    ["models", "resolvedModel"],
    ["model_id", "resolvedModel"],
    ["prompt", "task"],
    ["instructions", "task"],
    ["timeout", "timeoutMs"],
    ["timeLimit", "timeoutMs"],
    ["workdir", "cwd"],
    ["pwd", "cwd"],
    ["reasoning", "thinking"],
    ["role", "agent"],
    ["environment", "env"],
    ["systemPrompt", "systemPromptPath"],
    // a plural is still the same word
    ["modes", "mode"],
    ["tool", "tools"],
  ])("%s → %s (the same meaning)", (field, nearest) => {
    expect(nearestKnownField(field)).toBe(nearest);
  });

  it.each([
    // a longer word built on a known name means something else
    "taskId",
    "agentId",
    "modeName",
    "envFile",
    // a short word with another first letter is another word, not a typo
    "code",
    "node",
    "mask",
  ])("%s → nothing: it would name a field of another meaning", (field) => {
    expect(nearestKnownField(field)).toBeUndefined();
  });

  it.each(["futureField", "x", "priority", "labels", "zz"])("%s → nothing", (field) => {
    expect(nearestKnownField(field)).toBeUndefined();
  });

  it("words the warning with and without a suggestion", () => {
    expect(unknownFieldWarning({ field: "timeoutMS", nearest: "timeoutMs" })).toBe(
      'meta.json field "timeoutMS" is not a known field and is ignored; did you mean "timeoutMs"?',
    );
    expect(unknownFieldWarning({ field: "futureField" })).toBe(
      'meta.json field "futureField" is not a known field and is ignored',
    );
  });
});
