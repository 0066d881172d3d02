import { describe, expect, it } from "vitest";
import type { VerificationCheck } from "../../../src/contracts/verify.js";
import { LOCAL_SERVE_COMMAND, sandboxCheckArgv } from "../../../src/wrapper/remote/prefix.js";
import { afterRound, checkPassed, repairPrompt, shouldCheck } from "../../../src/wrapper/verify-machine.js";

const run = (exit_code: number | undefined, name = "npm test"): VerificationCheck => ({
  name,
  kind: "run",
  ...(exit_code !== undefined && { exit_code }),
  duration_ms: 5,
  output_tail: exit_code === 0 ? "ok" : "1 failing",
});
const review = (verdict: "pass" | "fail" | undefined): VerificationCheck => ({
  name: "reviewer",
  kind: "review",
  ...(verdict && { verdict }),
  duration_ms: 5,
  output_tail: verdict ? `VERDICT: ${verdict}` : "no verdict: looks fine",
});

describe("verify machine: which turns are checked", () => {
  it.each([
    ["completed", false, true],
    ["completed", true, false],
    ["failed", false, false],
    ["interrupted", false, false],
    ["aborted", false, false],
    ["timed_out", false, false],
    ["incomplete", false, false],
    ["truncated", false, false],
  ] as const)("%s (limit reached: %s) → checked: %s", (status, limitReached, checked) => {
    expect(shouldCheck({ status, limitReached })).toBe(checked);
  });
});

describe("verify machine: after a round", () => {
  it.each([
    // checks, repairs done, max repairs, stopped → next
    ["every check passed", [run(0), review("pass")], 0, 2, false, "passed"],
    ["passed after a repair", [run(0)], 1, 2, false, "passed"],
    ["a command failed, repairs left", [run(1), review("pass")], 0, 2, false, "repair"],
    ["a command ended by its time-out", [run(undefined)], 1, 2, false, "repair"],
    ["the review said fail", [run(0), review("fail")], 0, 1, false, "repair"],
    ["the review gave no verdict", [run(0), review(undefined)], 0, 1, false, "repair"],
    ["no repairs left", [run(1)], 2, 2, false, "failed"],
    ["max_repairs 0", [run(1)], 0, 0, false, "failed"],
    ["the run was stopped during the checks", [run(undefined)], 0, 2, true, "failed"],
  ] as const)("%s → %s", (_title, checks, done, max, stopped, expected) => {
    const step = afterRound([...checks], done, max, stopped);
    if (expected === "repair") {
      expect(step).toMatchObject({ kind: "repair", round: done + 1 });
    } else {
      expect(step).toEqual({ kind: "done", verification: { status: expected, repairs: done, checks } });
    }
  });

  it("the repair names only the failed checks, with their exit code and output", () => {
    const step = afterRound([run(0, "lint"), run(2, "npm test")], 0, 2);
    expect(step.kind).toBe("repair");
    if (step.kind !== "repair") return;
    expect(step.failed.map((check) => check.name)).toEqual(["npm test"]);
    expect(step.prompt).toContain("the check `npm test` failed (exit code 2)");
    expect(step.prompt).toContain("1 failing");
    expect(step.prompt).not.toContain("`lint`");
    expect(step.prompt).toMatch(/Fix it and answer again/);
  });

  it("a review's failure says whether it gave a verdict", () => {
    expect(repairPrompt([review("fail")])).toContain("the reviewer's verdict is fail");
    expect(repairPrompt([review(undefined)])).toContain("the reviewer gave no verdict");
    expect(repairPrompt([run(undefined)])).toContain("did not finish");
  });

  it.each([
    [run(0), true],
    [run(1), false],
    [run(undefined), false],
    [review("pass"), true],
    [review("fail"), false],
    [review(undefined), false],
  ])("checkPassed(%o) = %s", (check, passed) => {
    expect(checkPassed(check)).toBe(passed);
  });
});

describe("a check inside a sandbox", () => {
  it("runs `sh -c` in place of serve, with the agent's checkout bound back and its cwd as the directory", () => {
    const serve = [
      "bwrap",
      "--ro-bind",
      "/",
      "/",
      "--tmpfs",
      "/work/wt",
      "--chdir",
      "/",
      "--",
      ...LOCAL_SERVE_COMMAND,
      "serve",
    ];
    expect(sandboxCheckArgv(serve, "/work/wt", "/work/wt/pkg", "npm test")).toEqual([
      "bwrap",
      "--ro-bind",
      "/",
      "/",
      "--tmpfs",
      "/work/wt",
      "--chdir",
      "/",
      "--bind",
      "/work/wt",
      "/work/wt",
      "--chdir",
      "/work/wt/pkg",
      "--",
      "/bin/sh",
      "-c",
      "npm test",
    ]);
  });
});
