import { describe, expect, it } from "vitest";
import { RunWarnings } from "../../../src/wrapper/run-warnings.js";

describe("RunWarnings", () => {
  it("says a warning with the documented `warning:` prefix; result.json gets its text without it", () => {
    const heard: string[] = [];
    const warnings = new RunWarnings((line) => heard.push(line));
    warnings.add("events /x/events.jsonl could not be written: EROFS");
    warnings.addOnce("events /x/events.jsonl could not be written: EROFS");
    warnings.warn("result /x/result.json went into the space reserved for it: the disk is full or failing");
    warnings.say("result /x/result.json could not be written: ENOSPC");
    expect(heard).toEqual([
      "subagent-wrapper: warning: events /x/events.jsonl could not be written: EROFS",
      "subagent-wrapper: warning: result /x/result.json went into the space reserved for it: the disk is full or failing",
      "subagent-wrapper: result /x/result.json could not be written: ENOSPC",
    ]);
    expect(warnings.all).toEqual(["events /x/events.jsonl could not be written: EROFS"]);
  });

  it("a hook that throws never fails the run", () => {
    const warnings = new RunWarnings(() => {
      throw new Error("ENOSPC");
    });
    expect(() => warnings.add("x")).not.toThrow();
    expect(warnings.all).toEqual(["x"]);
  });
});
