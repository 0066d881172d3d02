import { describe, expect, it } from "vitest";
import { checkMeta } from "../../../src/contracts/meta-check.js";
import { chooseVerify, describeVerification, parseVerify } from "../../../src/contracts/verify.js";
import { parseVerdict } from "../../../src/wrapper/review-check.js";

describe("verify: parsed from any source, each problem naming its field", () => {
  it.each([
    [{ run: ["npm test"] }, { run: ["npm test"] }],
    [{ run: "npm test" }, { run: ["npm test"] }],
    [{ review: " reviewer " }, { review: "reviewer" }],
    [
      { run: ["a", "b"], max_repairs: 0, timeout: 30 },
      { run: ["a", "b"], max_repairs: 0, timeout: 30 },
    ],
  ])("%o → %o", (input, verify) => {
    expect(parseVerify(input)).toEqual({ ok: true, verify });
  });

  it.each([
    ["npm test", "verify must be an object, not a string"],
    [{ run: [""] }, "verify.run must be a list of shell commands"],
    [{ run: [1] }, "verify.run must be a list of shell commands"],
    [{ review: 3 }, "verify.review must name an agent definition"],
    [{ run: ["x"], max_repairs: 9 }, "verify.max_repairs must be a whole number from 0 to 5, not 9"],
    [{ run: ["x"], max_repairs: 1.5 }, "verify.max_repairs must be a whole number from 0 to 5, not 1.5"],
    [{ run: ["x"], timeout: 0 }, "verify.timeout must be a positive number of seconds, not 0"],
    [{ run: ["x"], timeout: "10" }, 'verify.timeout must be a positive number of seconds, not "10"'],
    [{ run: ["x"], retries: 2 }, 'verify: unknown key "retries" (known: run, review, max_repairs, timeout)'],
    [{ run: ["x"], constructor: 1 }, 'verify: unknown key "constructor"'],
    [{ max_repairs: 1 }, "verify needs run (shell commands) or review (an agent definition)"],
  ])("%o → %s", (input, problem) => {
    const parsed = parseVerify(input);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.problem).toContain(problem);
  });

  it("absent is no verification; the first layer that sets one wins (spawn, definition, settings)", () => {
    expect(parseVerify(undefined)).toEqual({ ok: true, verify: undefined });
    expect(parseVerify(null)).toEqual({ ok: true, verify: undefined });
    expect(chooseVerify(undefined, { run: ["b"] }, { run: ["c"] })).toEqual({ run: ["b"] });
    expect(chooseVerify({ run: ["a"] }, { run: ["b"] })).toEqual({ run: ["a"] });
    expect(chooseVerify(undefined, undefined)).toBeUndefined();
  });

  it("a turn's verification in one line", () => {
    expect(describeVerification({ status: "failed", repairs: 2, checks: [] })).toBe(
      "verification failed after 2 repairs",
    );
    expect(describeVerification({ status: "passed", repairs: 1, checks: [] })).toBe(
      "verification passed after 1 repair",
    );
    expect(describeVerification({ status: "passed", repairs: 0, checks: [] })).toBe("verification passed");
  });
});

describe("meta.json verify", () => {
  const base = { runId: "r", task: "t", cwd: "/w", resultPath: "/w/r.json", eventsPath: "/w/e.jsonl" };
  it("is checked field by field, and its paths resolve against meta.json's folder", () => {
    const ok = checkMeta(
      { ...base, verify: { run: ["npm test"], maxRepairs: 2, timeoutMs: 1000, statePath: "state.json" } },
      "/runs/1",
    );
    expect(ok.problems).toEqual([]);
    expect(ok.fields.verify?.statePath).toBe("/runs/1/state.json");
    const bad = checkMeta({ ...base, verify: { run: "npm test", maxRepairs: 7, timeoutMs: 0 } }, "/runs/1");
    expect(bad.problems).toEqual([
      'meta.json field "verify".run must be an array of shell commands',
      'meta.json field "verify".maxRepairs must be a whole number from 0 to 5',
      'meta.json field "verify".timeoutMs must be a positive number of milliseconds',
    ]);
  });
});

describe("a reviewer's verdict: its answer's last line", () => {
  it.each([
    ["Looks right.\nVERDICT: pass", "pass"],
    ["Tests missing.\nVERDICT: fail\n\n", "fail"],
    ["**VERDICT: pass**", "pass"],
    ["verdict: Pass", "pass"],
    ["VERDICT: pass\nbut one more thing", undefined],
    ["I think it passes", undefined],
    ["", undefined],
  ])("%j → %s", (answer, verdict) => {
    expect(parseVerdict(answer)).toBe(verdict);
  });
});
