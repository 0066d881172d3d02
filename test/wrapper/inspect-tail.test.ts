/**
 * `subagent-wrapper inspect` and `tail` on real runs of the wrapper against the fake pi:
 * what a person sees, the exit codes, and that every file the wrapper writes holds to the
 * published schemas.
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { turnResult } from "../support/fake-turns.js";
import { killAll, runProcess, spawnProcess } from "../support/processes.js";
import { agentRecord } from "../support/records.js";
import { cleanupWrapperCases, defaultMeta, WRAPPER_BIN, wrapperCase } from "../support/wrapper-harness.js";

const dirs: string[] = [];
afterEach(async () => {
  await killAll();
  await cleanupWrapperCases();
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

const cli = (args: string[], cwd?: string) =>
  runProcess(process.execPath, [WRAPPER_BIN, ...args], { timeoutMs: 20_000, ...(cwd && { cwd }) });

const POLL = { timeout: 15_000, interval: 50 };

/** A step-by-step run that takes about a second and a half. */
const SLOW_TOOL_RUN = {
  steps: [
    { agentStart: true },
    { turnStart: true },
    {
      assistant: {
        text: "step one",
        toolCalls: [{ id: "c1", name: "bash", arguments: { command: "ls" } }],
        stopReason: "toolUse",
      },
    },
    { tool: { id: "c1", name: "bash", args: { command: "ls" } }, delayMs: 700 },
    { assistant: { text: "all done\nsecond line", stopReason: "stop" }, delayMs: 700 },
    { turnEnd: true },
    { agentEnd: true },
  ],
};

describe("subagent-wrapper inspect", () => {
  it("shows a finished run's summary and transcript; its files hold to the schemas (exit 0)", async () => {
    const c = await wrapperCase({ scenario: "tool-then-answer" });
    expect((await c.run()).code).toBe(0);
    const shown = await cli(["inspect", c.dir]);
    expect(shown.stderr).toBe("");
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("run       run-1  (");
    expect(shown.stdout).toMatch(/status {4}completed \(exit 0\) · stop reason stop\n/);
    expect(shown.stdout).toMatch(/usage {5}2 turns · 1 tool call · /);
    expect(shown.stdout).toContain("→ bash ");
    expect(shown.stdout).toContain("# end: completed (exit 0)");
    expect(shown.stdout).toContain("✓ meta.json\n✓ result.json\n✓ events.jsonl (6 records)\n");
    // The same run named by its meta.json, by its result.json, and by the artifacts' folder.
    for (const target of [c.metaPath, path.join(c.dir, "out", "result.json"), path.join(c.dir, "out")]) {
      const again = await cli(["inspect", target, "--no-transcript"]);
      expect(again.code).toBe(0);
      expect(again.stdout).toContain("── final answer ──\n");
    }
  });

  it.each(["abort-marker", "retry-then-success", "crash", "garbage", "pi-abort", "error-final"])(
    "every file of a %s run holds to the published schemas",
    async (scenario) => {
      const c = await wrapperCase({ scenario });
      await c.run();
      const shown = await cli(["inspect", c.dir, "--json"]);
      expect(shown.code).toBe(0);
      const report = JSON.parse(shown.stdout) as {
        state: { kind: string };
        contracts: { ok: boolean; findings: unknown[]; passed: string[] };
      };
      expect(report.contracts.findings).toEqual([]);
      expect(report.contracts.passed).toEqual([
        "meta.json",
        "result.json",
        expect.stringMatching(/^events\.jsonl \(\d+ records?\)$/),
      ]);
      expect(report.state.kind).toBe("finished");
    },
  );

  it("shows a run that is still going as running, with what it did so far", async () => {
    const c = await wrapperCase({ scenario: "slow" });
    const run = c.start();
    await vi.waitFor(
      async () => expect(await readFile(path.join(c.dir, "out/events.jsonl"), "utf8")).toContain("run_start"),
      POLL,
    );
    const shown = await cli(["inspect", c.dir]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/status {4}running \(pi pid \d+, [\d.]+ (ms|s) so far\)\n/);
    expect(shown.stdout).toContain("no result.json");
    run.kill("SIGTERM");
    await run.done;
  });

  it("a meta.json the wrapper refused: the one-line reason and the failed result", async () => {
    const c = await wrapperCase({
      metaText: JSON.stringify({
        runId: "bad",
        task: "x",
        cwd: ".",
        resultPath: "out/result.json",
        eventsPath: "out/events.jsonl",
        thinking: "maximum",
      }),
    });
    expect((await c.run()).code).toBe(2);
    const shown = await cli(["inspect", c.metaPath, "--no-transcript"]);
    expect(shown.stdout).toContain(
      'meta      ✗ meta.json field "thinking" must be one of off, minimal, low, medium, high, xhigh, max, not "maximum"\n',
    );
    expect(shown.stdout).toMatch(/status {4}failed \(exit 2\)/);
    expect(shown.stdout).toContain('✗ meta.json: /thinking: must be one of "off"');
    expect(shown.code).toBe(1);
  });

  it("reports files that break their contract by file and line (exit 1)", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "psa-inspect-"));
    dirs.push(dir);
    await writeFile(path.join(dir, "result.json"), JSON.stringify({ version: 1, runId: "x", status: "done" }));
    await writeFile(
      path.join(dir, "events.jsonl"),
      '{"type":"run_start","runId":"x","pid":null,"argv":[],"seq":1,"ts":1}\nnot json\n',
    );
    const shown = await cli(["inspect", dir, "--no-transcript"]);
    expect(shown.code).toBe(1);
    expect(shown.stdout).toContain("✗ result.json: /status: must be one of");
    expect(shown.stdout).toContain('✗ result.json: missing required field "exitCode"');
    expect(shown.stdout).toContain("✗ events.jsonl line 2: not JSON");
  });

  it.each([
    [["inspect", "/no/such/run"], "subagent-wrapper inspect: no run directory or meta file at /no/such/run"],
    [["tail", "/no/such/run"], "subagent-wrapper tail: no run directory or meta file at /no/such/run"],
    [
      ["inspect", os.tmpdir()],
      `subagent-wrapper inspect: ${os.tmpdir()} is not a run directory (no meta.json, result.json or events.jsonl in it)`,
    ],
  ])("%j is no run: one line, exit 2", async (args, line) => {
    const shown = await cli(args);
    expect(shown.code).toBe(2);
    expect(shown.stderr).toBe(`${line}\n`);
    expect(shown.stdout).toBe("");
  });
});

describe("subagent-wrapper tail", () => {
  it("follows a live run record by record and returns with its outcome (exit 0)", async () => {
    const c = await wrapperCase({ scenario: SLOW_TOOL_RUN });
    // tail starts first: it waits for events.jsonl to appear.
    const tail = spawnProcess(process.execPath, [WRAPPER_BIN, "tail", c.metaPath], {
      timeoutMs: 25_000,
      env: { ...process.env, TZ: "UTC" },
    });
    const run = await c.run();
    expect(run.code).toBe(0);
    const followed = await tail.done;
    expect(followed.code).toBe(0);
    const out = followed.stdout;
    const order = [
      "# run run-1 (pid",
      "## assistant (fake/fast, stop: toolUse)",
      "→ bash",
      "← bash ok",
      "## assistant (fake/fast, stop: stop)",
      "# end: completed (exit 0)",
      "── completed (exit 0) ·",
    ];
    const positions = order.map((text) => out.indexOf(text));
    expect(positions.every((position) => position >= 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    expect(out).toMatch(/^\d\d:\d\d:\d\d ## assistant \(fake\/fast, stop: stop\)\n {9}all done\n {9}second line$/m);
  });

  it("on a finished run: the last --lines records, or all with --from-start, or the raw NDJSON with --json", async () => {
    const c = await wrapperCase({ scenario: "abort-marker" });
    const run = await c.run();
    expect(run.code).toBe(1);
    const last = await cli(["tail", c.dir, "-n", "1"]);
    expect(last.code).toBe(1);
    expect(last.stdout.trim().split("\n")).toEqual([
      expect.stringMatching(/^\d\d:\d\d:\d\d # end: aborted \(exit 1\)$/),
      expect.stringMatching(/^── aborted \(exit 1\) · /),
    ]);
    const all = await cli(["tail", c.dir, "--from-start"]);
    expect(all.stdout).toContain("# run run-1");
    const json = await cli(["tail", c.dir, "--json", "--from-start"]);
    expect(json.stdout).toBe(await run.read("out/events.jsonl"));
    expect(json.stderr).toMatch(/^── aborted \(exit 1\) · /);
  });

  it("stops cleanly on Ctrl-C (SIGINT): exit 130, no stack trace", async () => {
    const c = await wrapperCase({ scenario: "slow" });
    const run = c.start();
    // Watch tail's output so the signal comes once it is following (its handler is set).
    const tail = spawn(process.execPath, [WRAPPER_BIN, "tail", c.dir], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    tail.stdout.setEncoding("utf8").on("data", (text: string) => (stdout += text));
    tail.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text));
    const exited = new Promise<number | null>((resolve) => tail.once("close", (code) => resolve(code)));
    try {
      await vi.waitFor(() => expect(stdout).toContain("# run run-1"), POLL);
      tail.kill("SIGINT");
      expect(await exited).toBe(130);
      expect(stderr).not.toMatch(/at .*\(|Error/);
    } finally {
      if (tail.exitCode === null && tail.signalCode === null) tail.kill("SIGKILL");
      run.kill("SIGTERM");
      await run.done;
    }
  });
});

/** A tree directory in a case's folder: tree.json, and one agent whose one run the case's wrapper writes. */
async function treeCase(agentName: string, scenario: string | object) {
  const runDir = `agents/${agentName}/runs/0001-spawn`;
  const c = await wrapperCase({
    scenario,
    meta: defaultMeta({ resultPath: `${runDir}/result.json`, eventsPath: `${runDir}/events.jsonl` }),
  });
  await writeFile(path.join(c.dir, "tree.json"), JSON.stringify({ version: 1, rootSession: "/s/root.jsonl" }));
  await addAgent(c.dir, agentName, ["0001-spawn"]);
  return { c, runDir: path.join(c.dir, runDir) };
}

async function addAgent(treeDir: string, name: string, runs: string[], spawnSeq = 1): Promise<void> {
  const dir = path.join(treeDir, "agents", name);
  await mkdir(path.join(dir, "runs"), { recursive: true });
  await writeFile(path.join(dir, "agent.json"), JSON.stringify(agentRecord({ path: `/root/${name}`, runs, spawnSeq })));
}

describe("subagent-wrapper tail <tree directory>", () => {
  it("follows the tree's newest running run, and says which and how many others are going", async () => {
    const { c, runDir } = await treeCase("worker", SLOW_TOOL_RUN);
    // An older agent whose run is over.
    await addAgent(c.dir, "scout", ["0001-spawn"], 0);
    const scoutRun = path.join(c.dir, "agents/scout/runs/0001-spawn");
    await mkdir(scoutRun, { recursive: true });
    await writeFile(path.join(scoutRun, "result.json"), JSON.stringify(turnResult()));
    await utimes(scoutRun, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    const run = c.start();
    await vi.waitFor(
      async () => expect(await readFile(path.join(runDir, "events.jsonl"), "utf8")).toContain("run_start"),
      POLL,
    );
    const followed = await cli(["tail", c.dir]);
    expect((await run.done).code).toBe(0);
    expect(followed.code).toBe(0);
    expect(followed.stderr).toBe(
      `subagent-wrapper tail: the tree's newest running run, /root/worker (running): ${runDir}\n`,
    );
    expect(followed.stdout).toContain("# end: completed (exit 0)");
  });

  it("a tree whose runs are over: its newest run", async () => {
    const { c, runDir } = await treeCase("worker", "tool-then-answer");
    expect((await c.run()).code).toBe(0);
    const shown = await cli(["tail", c.dir, "-n", "1"]);
    expect(shown.code).toBe(0);
    expect(shown.stderr).toBe(`subagent-wrapper tail: the tree's newest run, /root/worker (completed): ${runDir}\n`);
    expect(shown.stdout).toMatch(/# end: completed \(exit 0\)\n── completed \(exit 0\) · /);
  });

  it("a tree with no run yet: one line saying what to pass (exit 2)", async () => {
    const treeDir = await mkdtemp(path.join(os.tmpdir(), "tail-tree-"));
    dirs.push(treeDir);
    await writeFile(path.join(treeDir, "tree.json"), JSON.stringify({ version: 1, rootSession: "/s/root.jsonl" }));
    await addAgent(treeDir, "queued", []);
    const shown = await cli(["tail", treeDir]);
    expect(shown.code).toBe(2);
    expect(shown.stdout).toBe("");
    expect(shown.stderr).toBe(
      `subagent-wrapper tail: ${treeDir} is a tree directory with no run yet; pass a run directory (agents/<name>/runs/<run>) or its meta.json\n`,
    );
  });
});

describe("subcommands beside run", () => {
  it("--help lists them; each has its own --help and --version", async () => {
    const help = await cli(["--help"]);
    expect(help.stdout).toMatch(/inspect \[options\] <run>/);
    expect(help.stdout).toMatch(/tail \[options\] <run>/);
    expect(help.stdout).toMatch(/doctor \[options\]/);
    for (const name of ["inspect", "tail", "doctor"]) {
      const sub = await cli([name, "--help"]);
      expect(sub.code).toBe(0);
      expect(sub.stdout).toContain(`Usage: subagent-wrapper ${name}`);
      expect(sub.stdout).toContain("Exit codes:");
      const version = await cli([name, "--version"]);
      expect(version.code).toBe(0);
      expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    }
  });

  it("a meta file named like a subcommand runs with `run <file>` or a path; the bare word is the subcommand, with a note", async () => {
    const c = await wrapperCase({ scenario: "default" });
    await mkdir(path.join(c.dir, "sub"), { recursive: true });
    const metaText = JSON.stringify({
      runId: "named-inspect",
      task: "hi",
      cwd: ".",
      resultPath: "out/result.json",
      eventsPath: "out/events.jsonl",
      graceMs: 300,
    });
    await writeFile(path.join(c.dir, "inspect"), metaText);
    const ran = await c.run({ args: ["run", "inspect"] });
    expect(ran.code).toBe(0);
    expect(ran.result?.runId).toBe("named-inspect");
    const byPath = await c.run({ args: ["./inspect"] });
    expect(byPath.code).toBe(0);
    const bare = await cli(["inspect"], c.dir);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain(
      'subagent-wrapper: note: "inspect" is the inspect command; to run the meta file ./inspect, use: subagent-wrapper run inspect\n',
    );
    expect(bare.stderr).toContain("missing required argument 'run'");
  });
});
