import { describe, expect, it } from "vitest";
import type { DialogAskV1 } from "../../../../../src/contracts/dialogs.js";
import {
  DialogLine,
  dialogHandling,
  dialogRecord,
  headedTitle,
  modelAnswerContent,
  presentedContent,
  questionId,
  treeDialogRoute,
} from "../../../../../src/extension/turns/dialogs/dialog-routing.js";

const ask = (over: Partial<DialogAskV1> = {}): DialogAskV1 => ({
  version: 1,
  id: "req-1",
  seq: 1,
  method: "select",
  title: "Allow rm -rf x?",
  options: ["Yes", "No"],
  askedAt: "2026-12-03T10:00:00.000Z",
  expiresAt: "2026-12-03T10:05:00.000Z",
  ...over,
});

describe("who answers a child's dialog", () => {
  it.each([
    ["person", true, "person"],
    ["person", false, "parent"],
    ["parent", true, "parent"],
    ["parent", false, "parent"],
    ["deny", true, "deny"],
    ["deny", false, "deny"],
  ] as const)("the root's setting %s with a UI %s hands down %s", (setting, ui, route) => {
    expect(treeDialogRoute(setting, ui)).toBe(route);
  });

  it.each([
    ["person", true, "present"],
    // a middle agent run without dialogs has no way up: its own model answers
    ["person", false, "parent_model"],
    ["parent", true, "parent_model"],
    ["parent", false, "parent_model"],
    ["deny", true, "deny"],
    ["deny", false, "deny"],
  ] as const)("route %s, this process has a UI %s: %s", (route, ui, handling) => {
    expect(dialogHandling(route, ui)).toBe(handling);
  });
});

describe("the title the person sees", () => {
  it("is headed with the asking agent's path", () => {
    expect(headedTitle("/root/fixer", "Allow?")).toBe("/root/fixer asks: Allow?");
  });

  it("a dialog passed up from below keeps the heading that names the agent that really asks", () => {
    const fromBelow = headedTitle("/root/mid/fixer", "Allow?");
    expect(headedTitle("/root/mid", fromBelow)).toBe("/root/mid/fixer asks: Allow?");
  });

  it("a heading that names no agent below the asker is the extension's own text: ours goes in front", () => {
    expect(headedTitle("/root/mid", "/root/other asks: Allow?")).toBe("/root/mid asks: /root/other asks: Allow?");
    expect(headedTitle("/root/mid", "/root/mid asks: Allow?")).toBe("/root/mid asks: /root/mid asks: Allow?");
  });
});

describe("an answer from the parent model", () => {
  it("a select takes one of its options, else says which there are", () => {
    expect(modelAnswerContent(ask(), { question_id: "q", value: "Yes" })).toEqual({ value: "Yes" });
    expect(() => modelAnswerContent(ask(), { question_id: "q", value: "Sure" })).toThrow(
      'question q: "Sure" is not one of its options ("Yes", "No")',
    );
  });

  it("a confirm takes confirmed; an input takes a value; nothing given cancels", () => {
    expect(modelAnswerContent(ask({ method: "confirm" }), { question_id: "q", confirmed: false })).toEqual({
      confirmed: false,
    });
    expect(() => modelAnswerContent(ask({ method: "confirm" }), { question_id: "q", value: "yes" })).toThrow(
      'answer with "confirmed"',
    );
    expect(modelAnswerContent(ask({ method: "input" }), { question_id: "q", value: "blue" })).toEqual({
      value: "blue",
    });
    expect(() => modelAnswerContent(ask({ method: "input" }), { question_id: "q", confirmed: true })).toThrow(
      'answer with "value"',
    );
    expect(modelAnswerContent(ask(), { question_id: "q" })).toEqual({ cancelled: true });
  });

  it("pi's dialog result: undefined cancels, a confirm is yes or no", () => {
    expect(presentedContent("select", undefined)).toEqual({ cancelled: true });
    expect(presentedContent("confirm", true)).toEqual({ confirmed: true });
    expect(presentedContent("input", "x")).toEqual({ value: "x" });
  });

  it("question ids name the child, its run and the dialog", () => {
    expect(questionId("/root/mid/fixer", "0002-followup", 3)).toBe("fixer.0002.3");
  });
});

describe("the person's dialogs, one at a time", () => {
  const item = (key: string) => ({ key });

  it("shows the first, queues the rest in order of arrival, counts them all", () => {
    const line = new DialogLine<{ key: string }>();
    expect(line.add(item("a"))).toEqual(item("a"));
    expect(line.add(item("b"))).toBeUndefined();
    expect(line.add(item("c"))).toBeUndefined();
    expect(line.add(item("b"))).toBeUndefined();
    expect(line.count).toBe(3);
    expect(line.done("a")).toEqual(item("b"));
    expect(line.done("b")).toEqual(item("c"));
    expect(line.done("c")).toBeUndefined();
    expect(line.count).toBe(0);
  });

  it("one answered elsewhere leaves the line; the shown one is to be closed", () => {
    const line = new DialogLine<{ key: string }>();
    line.add(item("a"));
    line.add(item("b"));
    line.add(item("c"));
    expect(line.drop("b")).toBe(false);
    expect(line.count).toBe(2);
    expect(line.drop("a")).toBe(true);
    expect(line.done("a")).toEqual(item("c"));
  });
});

describe("a dialogs.jsonl record", () => {
  it("holds the agent, the extension's text, who answered and when, and the answer", () => {
    expect(
      dialogRecord("/root/fixer", "0001-spawn", ask(), {
        value: "No",
        answeredBy: "person",
        answeredAt: "2026-12-03T10:00:03.000Z",
      }),
    ).toEqual({
      version: 1,
      agent: "/root/fixer",
      run: "0001-spawn",
      seq: 1,
      method: "select",
      title: "Allow rm -rf x?",
      options: ["Yes", "No"],
      askedAt: "2026-12-03T10:00:00.000Z",
      answeredBy: "person",
      answeredAt: "2026-12-03T10:00:03.000Z",
      value: "No",
    });
  });
});
