/** The runner tests' skip rule (test/support/needs.ts): a plain reason where a tool is missing, a failure under CI. */
import { afterEach, describe, expect, it } from "vitest";
import { findTool, missingNeeds, skipOrFail } from "../support/needs.js";

const savedCi = process.env.CI;
afterEach(() => {
  if (savedCi === undefined) delete process.env.CI;
  else process.env.CI = savedCi;
});

describe("missingNeeds and skipOrFail", () => {
  it("names each missing tool, and nothing when all are there", () => {
    expect(findTool("sh")).toBeDefined();
    expect(missingNeeds(["sh"])).toBeUndefined();
    expect(missingNeeds(["sh", "no-such-tool-a", "no-such-tool-b"])).toBe(
      "missing: no-such-tool-a, no-such-tool-b (.ci/run installs them)",
    );
  });

  it("skips with the reason when CI is not set", () => {
    delete process.env.CI;
    const notes: Array<string | undefined> = [];
    skipOrFail({ skip: (note) => void notes.push(note) }, "missing: example-tool (a made-up reason)");
    expect(notes).toEqual(["missing: example-tool (a made-up reason)"]);
  });

  it("fails with the reason when CI is set", () => {
    process.env.CI = "true";
    const notes: Array<string | undefined> = [];
    expect(() =>
      skipOrFail({ skip: (note) => void notes.push(note) }, "missing: other-tool (a made-up reason)"),
    ).toThrow("CI is set, so this test fails instead of skipping: missing: other-tool (a made-up reason)");
    expect(notes).toEqual([]);
  });

  it("does nothing when nothing is missing", () => {
    process.env.CI = "true";
    expect(() => skipOrFail({ skip: () => expect.unreachable() }, undefined)).not.toThrow();
  });
});
