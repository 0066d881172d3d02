import { execFileSync } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { skipOrFail } from "../support/needs.js";
import { killAll, pidRunning } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, wrapperCase } from "../support/wrapper-harness.js";

afterEach(async () => {
  await killAll();
  await cleanupWrapperCases();
});

/**
 * A fake pi that "works" with a shell command, then answers. With `attempt → fixed`, its first
 * start leaves only `attempt` and its second writes `fixed`: a child that repairs its work
 * when sent back.
 */
function working(command: string, text = "done"): object {
  return {
    steps: [
      { agentStart: true },
      { turnStart: true },
      { shell: { command, path: "shell.out" } },
      { assistant: { text, stopReason: "stop" } },
      { turnEnd: true },
      { agentEnd: true },
      { exit: 0 },
    ],
  };
}
const repairsOnSecondStart = working("if [ -f attempt ]; then echo ok > fixed; else touch attempt; fi");
const CHECK_FIXED = "test -f fixed || { echo 'fixed is missing'; exit 3; }";

async function starts(dir: string): Promise<Array<{ argv: string[]; task: string }>> {
  const text = await readFile(path.join(dir, "starts.jsonl"), "utf8");
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

const sessionOf = (argv: string[]) => argv[argv.indexOf("--session") + 1];

const bwrapMissing = (): string | undefined => {
  try {
    execFileSync("bwrap", ["--ro-bind", "/", "/", "true"], { stdio: "ignore" });
    return undefined;
  } catch {
    return "bwrap (Debian package bubblewrap) is missing or cannot make a namespace here";
  }
};

describe("subagent-wrapper: verification", () => {
  it("a failing check sends the child back in the same session; it repairs, the checks run again and pass", async () => {
    const c = await wrapperCase({
      meta: defaultMeta({ verify: { run: [CHECK_FIXED], maxRepairs: 2, timeoutMs: 20_000 } }),
      scenario: repairsOnSecondStart,
    });
    const run = await c.run({ env: { FAKE_PI_RECORDS: path.join(c.dir, "starts.jsonl") } });
    expect(run.code).toBe(0);
    expect(run.result).toMatchObject({ status: "completed", finalText: "done" });
    expect(run.result?.verification).toMatchObject({
      status: "passed",
      repairs: 1,
      checks: [{ name: CHECK_FIXED, kind: "run", exit_code: 0 }],
    });
    const pis = await starts(c.dir);
    expect(pis).toHaveLength(2);
    // The same conversation goes on: one session file for both pi processes.
    expect(sessionOf(pis[0]!.argv)).toBe(sessionOf(pis[1]!.argv));
    expect(pis[1]!.task).toContain(`the check \`${CHECK_FIXED}\` failed (exit code 3)`);
    expect(pis[1]!.task).toContain("fixed is missing");
    expect(pis[1]!.task).toContain("Fix it and answer again");
    // Both pi processes count for the turn (its limits see every model request).
    expect(run.result?.turns).toBe(2);
    const types = run.events.map((event) => event.type);
    expect(types.filter((type) => type === "check")).toHaveLength(2);
    expect(run.events.find((event) => event.type === "repair")).toMatchObject({ round: 1, checks: [CHECK_FIXED] });
  });

  it("checks that still fail after max_repairs leave the turn completed, its verification failed", async () => {
    const c = await wrapperCase({
      meta: defaultMeta({ verify: { run: ["echo still broken; exit 1"], maxRepairs: 2, timeoutMs: 20_000 } }),
      scenario: working("true"),
    });
    const run = await c.run({ env: { FAKE_PI_RECORDS: path.join(c.dir, "starts.jsonl") } });
    expect(run.result?.status).toBe("completed");
    expect(run.result?.verification).toMatchObject({
      status: "failed",
      repairs: 2,
      checks: [{ kind: "run", exit_code: 1, output_tail: "still broken" }],
    });
    expect(await starts(c.dir)).toHaveLength(3);
  });

  it("a turn that did not complete is not checked", async () => {
    const c = await wrapperCase({
      meta: defaultMeta({ verify: { run: ["touch checked"], maxRepairs: 2, timeoutMs: 20_000 } }),
      scenario: "error-final",
    });
    const run = await c.run();
    expect(run.result?.status).toBe("failed");
    expect(run.result?.verification).toEqual({ status: "not_run", repairs: 0, checks: [] });
    await expect(readFile(path.join(c.dir, "checked"))).rejects.toThrow();
  });

  it("a check that hangs is ended at its time-out, with everything it started", async () => {
    const hang = "sleep 600 & echo $! > background.pid; echo waiting; wait";
    const c = await wrapperCase({
      meta: defaultMeta({ verify: { run: [hang], maxRepairs: 0, timeoutMs: 3000 } }),
      scenario: working("true"),
    });
    const run = await c.run();
    expect(run.result?.status).toBe("completed");
    const [check] = run.result?.verification?.checks ?? [];
    expect(check).toMatchObject({ name: hang, kind: "run" });
    expect(check?.exit_code).toBeUndefined();
    expect(check?.output_tail).toMatch(/waiting\n\[timed out after 3 s\]$/);
    expect(run.result?.verification?.status).toBe("failed");
    const background = Number((await readFile(path.join(c.dir, "background.pid"), "utf8")).trim());
    expect(pidRunning(background)).toBe(false);
  });

  it("a command's result is reused while the workspace's content is the same, and run again once it changes", async () => {
    const c = await wrapperCase({ scenario: working("true") });
    const repo = path.join(c.dir, "repo");
    await mkdir(repo);
    const git = (...args: string[]) => execFileSync("git", args, { cwd: repo, stdio: "ignore" });
    git("init", "-q");
    await writeFile(path.join(repo, "a.txt"), "one\n");
    await writeFile(path.join(repo, ".gitignore"), "ignored/\n");
    git("add", "-A");
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start");
    await writeFile(path.join(repo, "new.txt"), "untracked\n");
    const command = "echo ran >> ../check-runs.log; echo checked";
    const runOnce = async (n: number) => {
      const metaPath = path.join(c.dir, `meta-${n}.json`);
      const meta = defaultMeta({
        runId: `run-${n}`,
        cwd: "repo",
        resultPath: `out-${n}/result.json`,
        eventsPath: `out-${n}/events.jsonl`,
        verify: { run: [command], maxRepairs: 0, timeoutMs: 20_000, statePath: "verify-checks.json" },
      });
      await writeFile(metaPath, JSON.stringify(meta));
      await c.run({ args: [metaPath] });
      return JSON.parse(await readFile(path.join(c.dir, `out-${n}`, "result.json"), "utf8"));
    };
    const first = await runOnce(1);
    expect(first.verification.checks[0]).toMatchObject({ exit_code: 0, output_tail: "checked" });
    expect(first.verification.checks[0].reused).toBeUndefined();
    // An ignored file is not the workspace's content.
    await mkdir(path.join(repo, "ignored"));
    await writeFile(path.join(repo, "ignored", "build.log"), "noise\n");
    const second = await runOnce(2);
    expect(second.verification).toMatchObject({
      status: "passed",
      checks: [{ exit_code: 0, output_tail: "checked", reused: true }],
    });
    // The same content committed is the same workspace.
    git("add", "-A");
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "work");
    expect((await runOnce(3)).verification.checks[0].reused).toBe(true);
    await writeFile(path.join(repo, "new.txt"), "changed\n");
    expect((await runOnce(4)).verification.checks[0].reused).toBeUndefined();
    expect((await readFile(path.join(c.dir, "check-runs.log"), "utf8")).split("\n").filter(Boolean)).toHaveLength(2);
  });

  it("a sandbox child's check runs inside its sandbox: it works in the agent's checkout and cannot write the parent's repository", async (ctx) => {
    skipOrFail(ctx, bwrapMissing());
    const c = await wrapperCase({ scenario: working("true") });
    const main = path.join(c.dir, "main");
    await mkdir(main);
    const git = (cwd: string, ...args: string[]) =>
      execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, stdio: "ignore" });
    git(main, "init", "-q", "-b", "main");
    await writeFile(path.join(main, "a.txt"), "a\n");
    git(main, "add", "-A");
    git(main, "commit", "-qm", "start");
    // The agent works in a worktree of its own, as a runner's child always does.
    git(main, "worktree", "add", "-q", "-b", "agent", path.join(c.dir, "wt"));
    const escaped = path.join(main, "escaped.txt");
    const check = `if touch ${escaped}; then echo WROTE THE PARENT; exit 1; fi; echo checked > inside.txt`;
    const metaPath = path.join(c.dir, "sandbox-meta.json");
    const meta = defaultMeta({
      cwd: "wt",
      // The fake pi's script is one of this process's variables: named, so the sandbox passes it on.
      runner: { name: "box", kind: "sandbox", env: ["FAKE_PI_SCRIPT"] },
      verify: { run: [check], maxRepairs: 0, timeoutMs: 60_000 },
    });
    await writeFile(metaPath, JSON.stringify(meta));
    const run = await c.run({ args: [metaPath], env: { FAKE_PI_RECORD: "" }, timeoutMs: 90_000 });
    expect(run.result?.status, run.stderr).toBe("completed");
    expect(run.result?.verification, run.stderr).toMatchObject({
      status: "passed",
      checks: [{ name: check, kind: "run", exit_code: 0 }],
    });
    expect(run.result?.verification?.checks[0]?.output_tail).not.toContain("WROTE THE PARENT");
    await expect(readFile(escaped)).rejects.toThrow();
    expect(await readFile(path.join(c.dir, "wt", "inside.txt"), "utf8")).toBe("checked\n");
  });
});
