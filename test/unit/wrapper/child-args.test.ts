import { describe, expect, it } from "vitest";
import { parseMeta } from "../../../src/contracts/meta-check.js";
import { TASK_PLACEHOLDER } from "../../../src/contracts/task-handoff.js";
import { buildChildArgs } from "../../../src/wrapper/child.js";

const base = { runId: "r", task: "t", cwd: "/w", resultPath: "/w/r.json", eventsPath: "/w/e.jsonl" };
const args = (extra: object) => buildChildArgs(parseMeta({ ...base, ...extra }, "/w"), "/ext/task.js");

describe("buildChildArgs", () => {
  it("runs json mode with templates off, the task extension, no saved session and the placeholder last", () => {
    expect(args({})).toEqual([
      "--mode",
      "json",
      "--no-prompt-templates",
      "--extension",
      "/ext/task.js",
      "--no-session",
      TASK_PLACEHOLDER,
    ]);
  });

  // The task extension first: its tool_call wait (cwdReadyPath) comes before any other
  // extension's handlers, and their input handlers see the task, not the placeholder.
  it("passes every flag meta asks for, the task extension before meta's extensions", () => {
    expect(
      args({
        requestedModel: "fake/fast",
        resolvedModel: "fake/deep",
        thinking: "high",
        tools: ["read", "grep"],
        extensions: ["./a.ts", "npm:pkg"],
        noExtensions: true,
        noContextFiles: true,
        systemPromptPath: "prompt.md",
        sessionPath: "s/session.jsonl",
      }),
    ).toEqual([
      "--mode",
      "json",
      "--no-prompt-templates",
      "--model",
      "fake/deep",
      "--thinking",
      "high",
      "--tools",
      "read,grep",
      "--no-extensions",
      "--no-context-files",
      "--extension",
      "/ext/task.js",
      "--extension",
      "/w/a.ts",
      "--extension",
      "npm:pkg",
      "--append-system-prompt",
      "/w/prompt.md",
      "--session",
      "/w/s/session.jsonl",
      TASK_PLACEHOLDER,
    ]);
  });

  it("falls back to the requested model and maps an empty tool list to --no-tools", () => {
    const built = args({ requestedModel: "fake/fast", tools: [] });
    expect(built).toContain("--no-tools");
    expect(built[built.indexOf("--model") + 1]).toBe("fake/fast");
  });

  it("never puts the task on the command line, whatever it holds", () => {
    for (const task of ["-rf", "@secrets.txt", "/skill:x go", "x".repeat(200_000)]) {
      const built = args({ task });
      expect(built).not.toContain(task);
      expect(built.at(-1)).toBe(TASK_PLACEHOLDER);
    }
  });

  it("turns skills off only for a task pi would otherwise expand as a skill", () => {
    expect(args({ task: "/skill:deploy now" })).toContain("--no-skills");
    expect(args({ task: "use /skill:deploy later" })).not.toContain("--no-skills");
  });
});
