/**
 * Verification on a runner's far side, from the local wrapper's side, with the fake pi and a
 * `command` runner whose prefix starts `subagent-wrapper serve` on this machine: each check
 * runs in the workspace the turn left on the far side (not in the local checkout), with the
 * child's environment; a failing one sends the child back in the same session and the repair's
 * far side continues in the same kept workspace; one that hangs is ended at its time-out with
 * everything it started; a far side that cannot run checks says so in one line.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { MetaV1 } from "../../src/contracts/meta.js";
import type { ResolvedRunner } from "../../src/contracts/runners.js";
import { FarChecks } from "../../src/wrapper/remote/far-checks.js";
import { killAll, pidRunning } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, WRAPPER_BIN, wrapperCase } from "../support/wrapper-harness.js";

afterEach(async () => {
  await killAll();
  await cleanupWrapperCases();
});

const SERVE = [process.execPath, WRAPPER_BIN];
const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, encoding: "utf8" }).trim();

/** A fake pi that works with a shell command in its cwd (the far scratch workspace), then answers. */
const working = (command: string) => ({
  steps: [
    { agentStart: true },
    { turnStart: true },
    { user: true },
    { shell: { command, path: "shell.out" } },
    { assistant: { text: "done", stopReason: "stop" } },
    { turnEnd: true },
    { agentEnd: true },
    { exit: 0 },
  ],
});

/** A case on a `command` runner whose cwd is a repository with one commit, with checks. */
async function farCase(scenario: object, verify: object, runner: object = {}) {
  const c = await wrapperCase({
    meta: defaultMeta({
      cwd: "repo",
      runner: { name: "here", kind: "command", capacity: 1, command: ["env"], remote_command: SERVE, ...runner },
      verify: { maxRepairs: 1, timeoutMs: 20_000, ...verify },
      env: { CHECK_LOG: "" },
    }),
    scenario,
  });
  const repo = path.join(c.dir, "repo");
  fs.mkdirSync(repo);
  git(repo, "init", "-q", "-b", "main");
  fs.writeFileSync(path.join(repo, "a.txt"), "a\n");
  git(repo, "add", "-A");
  git(repo, "commit", "-q", "-m", "initial");
  // The agent's runner workspace (the far side keeps the turn's workspace under its key) and
  // a log the checks write to, named through the child's environment (meta.json `env`).
  const meta = JSON.parse(fs.readFileSync(c.metaPath, "utf8"));
  const log = path.join(c.dir, "checks.log");
  meta.runnerWorkspacePath = path.join(c.dir, "agent", "runner-workspace");
  meta.env = { CHECK_LOG: log };
  fs.writeFileSync(c.metaPath, JSON.stringify(meta));
  return { c, repo, log };
}

const lines = (file: string) => fs.readFileSync(file, "utf8").split("\n").filter(Boolean);

describe("verification on a runner's far side (command prefix, fake pi)", () => {
  it("a failing check runs on the far side; the child repairs there in the same session; the checks pass", async () => {
    const check = 'pwd >> "$CHECK_LOG"; test -f fixed || { echo "fixed is missing"; exit 3; }';
    const { c, repo, log } = await farCase(working("if [ -f attempt ]; then echo ok > fixed; else touch attempt; fi"), {
      run: [check],
    });
    const run = await c.run({ env: { FAKE_PI_RECORDS: path.join(c.dir, "starts.jsonl") } });
    expect(run.code, run.stderr).toBe(0);
    expect(run.result).toMatchObject({ status: "completed", finalText: "done" });
    expect(run.result?.verification).toMatchObject({
      status: "passed",
      repairs: 1,
      checks: [{ name: check, kind: "run", exit_code: 0 }],
    });
    // Both rounds ran on the far side, in its scratch workspace, never in the local checkout.
    const where = lines(log);
    expect(where).toHaveLength(2);
    for (const dir of where) {
      expect(dir.startsWith(path.join(c.dir, "tmp"))).toBe(true);
      expect(dir.startsWith(repo)).toBe(false);
    }
    const starts = lines(path.join(c.dir, "starts.jsonl")).map((line) => JSON.parse(line));
    expect(starts).toHaveLength(2);
    expect(starts[1].task).toContain("fixed is missing");
    // The repair's work landed too.
    expect(git(repo, "show", "HEAD:fixed")).toBe("ok");
  });

  it("a far check that hangs is ended at its time-out with everything it started, and no repair follows a final failure", async () => {
    const hang = 'sleep 600 & echo $! > "$CHECK_LOG"; echo waiting; wait';
    const { c, log } = await farCase(working("true"), { run: [hang], maxRepairs: 0, timeoutMs: 2000 });
    const run = await c.run();
    expect(run.result?.status).toBe("completed");
    const [checked] = run.result?.verification?.checks ?? [];
    expect(checked?.exit_code).toBeUndefined();
    expect(checked?.output_tail).toMatch(/waiting\n\[timed out after 2 s\]$/);
    expect(run.result?.verification).toMatchObject({ status: "failed", repairs: 0 });
    const background = Number(fs.readFileSync(log, "utf8").trim());
    expect(pidRunning(background)).toBe(false);
  });

  it("a stop of the run during a far check ends the check on the far side; the run ends with nothing of it left", async () => {
    const hang = 'sleep 600 & echo $! > "$CHECK_LOG"; wait';
    const { c, log } = await farCase(working("true"), { run: [hang], maxRepairs: 1, timeoutMs: 120_000 });
    const run = c.start();
    while (!fs.existsSync(log) || fs.readFileSync(log, "utf8").trim() === "") {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    run.kill("SIGTERM");
    const out = await c.collect(await run.done);
    expect(out.result?.verification).toMatchObject({ status: "failed", repairs: 0 });
    expect(out.result?.verification?.checks[0]?.output_tail).toMatch(/\[stopped: the run was stopped\]$/);
    expect(pidRunning(Number(fs.readFileSync(log, "utf8").trim()))).toBe(false);
  });

  it("a far side that cannot run checks (an older serve) says so in one line, and nothing of it is left", async () => {
    // A far side that answers hello as an older serve does (no `check`), then waits for stdin's end.
    const older = [
      process.execPath,
      "-e",
      'process.stdout.write(JSON.stringify({t:"hello",version:2,server:"old",have:[]})+"\\n"); process.stdin.resume(); process.stdin.on("end", () => process.exit(0));',
    ];
    let cleaned = 0;
    const meta = { runId: "r", cwd: process.cwd(), runnerWorkspacePath: "/agent/runner-workspace" } as MetaV1;
    const runner = { name: "far", kind: "ssh" } as ResolvedRunner;
    const far = new FarChecks(meta, runner, () => ({
      argv: older,
      env: { PATH: process.env.PATH ?? "" },
      cleanup: () => void cleaned++,
    }));
    const result = await far.run("true", 5000, new AbortController().signal);
    expect(result).toMatchObject({ exitCode: null, cannotRun: true });
    expect(result.output).toBe(
      "the check could not run on the far side: runner far (ssh): its subagent-wrapper cannot run checks (older than this one): update it there",
    );
    await far.close();
    expect(cleaned).toBe(1);
  });

  it("a far side whose prefix cannot start: the check fails with why, and the round still ends", async () => {
    const meta = { runId: "r", cwd: process.cwd(), runnerWorkspacePath: "/agent/runner-workspace" } as MetaV1;
    const runner = { name: "far", kind: "command" } as ResolvedRunner;
    const far = new FarChecks(meta, runner, () => ({
      argv: ["/nonexistent/prefix"],
      env: {},
      cleanup: () => undefined,
    }));
    const result = await far.run("true", 5000, new AbortController().signal);
    expect(result).toMatchObject({ exitCode: null, cannotRun: true });
    expect(result.output).toMatch(/^the check could not run on the far side: runner far \(command\): .*ENOENT/);
    await far.close();
  });
});
