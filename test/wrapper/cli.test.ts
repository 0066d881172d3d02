import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/pi-home.js";
import { killAll, runProcess } from "../support/processes.js";
import { WRAPPER_BIN } from "../support/wrapper-harness.js";

afterEach(killAll);

const cli = (...args: string[]) => runProcess(process.execPath, [WRAPPER_BIN, ...args], { timeoutMs: 10_000 });

describe("subagent-wrapper CLI", () => {
  it("--help explains usage, exit codes and the environment, and exits 0", async () => {
    const run = await cli("--help");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("Usage: subagent-wrapper");
    expect(run.stdout).toContain("run <meta.json>");
    expect(run.stdout).toMatch(/Exit codes: 0 completed, 1 .*\n.*2 usage or meta\.json error/);
    expect(run.stdout).toMatch(/\n {12}3 result\.json could not be written, /);
    expect(run.stdout).toContain("PI_SUBAGENTS_PI_BIN");
  });

  it("a meta.json that is not JSON: one line saying where it breaks, by line and column (exit 2)", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "cli-json-"));
    try {
      const metaPath = path.join(dir, "meta.json");
      await writeFile(metaPath, '{\n  "runId": "r1",\n  "task": "hi",\n}\n');
      const run = await cli(metaPath);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(
        new RegExp(`^subagent-wrapper: meta file ${metaPath} is not valid JSON: [^\\n]+ at line 4, column 1\\n$`),
      );
      expect(run.stderr).not.toMatch(/position/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it.each(["--version", "-v"])("%s prints the package version", async (flag) => {
    const { version } = JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as { version: string };
    const run = await cli(flag);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe(version);
  });

  it.each([
    [[], "missing required argument 'meta.json'"],
    [["a.json", "b.json"], "too many arguments"],
    [["--frobnicate", "a.json"], "unknown option '--frobnicate'"],
  ])("usage error %j: one line, exit 2", async (args, message) => {
    const run = await cli(...args);
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe(run.stderr.trim().split("\n")[0]);
    expect(run.stderr).toContain(`subagent-wrapper: error: ${message}`);
  });
});
