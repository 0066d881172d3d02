import os from "node:os";
import { describe, expect, it } from "vitest";
import { runProcess } from "../../../src/lib/run-process.js";

/** The nice value of the shell `runProcess` starts, read from /proc once the priority is set (the sleep). */
async function niceOfChild(niceness?: number): Promise<string> {
  const result = await runProcess("/bin/sh", ["-c", 'sleep 0.2; cut -d" " -f19 /proc/$$/stat'], {
    cwd: os.tmpdir(),
    env: process.env,
    timeoutMs: 10_000,
    ...(niceness !== undefined && { niceness }),
  });
  expect(result.code).toBe(0);
  return result.stdout.toString("utf8").trim();
}

describe("runProcess niceness", () => {
  it("runs the process at the nice value asked for, and at this process's own without one", async () => {
    expect(await niceOfChild(19)).toBe("19");
    expect(await niceOfChild()).toBe(String(os.getPriority()));
  });
});
