/**
 * The wrapper's stderr can fail under it: a wrapper.log on the disk that just filled up (a
 * synchronous write throws ENOSPC), or a pipe whose reader is gone. Its lines are lost then,
 * never its result: result.json is written and the exit code is the run's.
 */
import fs from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { cleanupWrapperCases, wrapperCase } from "../support/wrapper-harness.js";

afterEach(cleanupWrapperCases);

const hasDevFull = fs.existsSync("/dev/full");

describe.skipIf(!hasDevFull)("a wrapper whose stderr fails", () => {
  it("stderr on /dev/full (ENOSPC on every write): a run with warnings still writes result.json and exits with its code", async () => {
    // An unknown meta field and a failed run each make the wrapper write to stderr.
    const c = await wrapperCase({
      meta: {
        runId: "r1",
        task: "t",
        cwd: ".",
        resultPath: "out/result.json",
        eventsPath: "out/events.jsonl",
        graceMs: 300,
        timeoutMS: 5,
      },
      scenario: "error-final",
    });
    const full = fs.openSync("/dev/full", "w");
    try {
      const run = await c.run({ stdio: ["ignore", "pipe", full] });
      expect(run.timedOut).toBe(false);
      expect(run.result).toMatchObject({ runId: "r1", status: "failed" });
      expect(run.code).toBe(run.result?.exitCode);
    } finally {
      fs.closeSync(full);
    }
  });

  it("the same run with stderr captured says what /dev/full swallowed (so the first test exercises the writes)", async () => {
    const c = await wrapperCase({
      meta: {
        runId: "r1",
        task: "t",
        cwd: ".",
        resultPath: "out/result.json",
        eventsPath: "out/events.jsonl",
        graceMs: 300,
        timeoutMS: 5,
      },
      scenario: "error-final",
    });
    const run = await c.run();
    expect(run.stderr).toContain('did you mean "timeoutMs"?');
    expect(run.stderr).toMatch(/subagent-wrapper: failed: /);
    expect(run.result?.status).toBe("failed");
  });
});
