/**
 * scripts/stress-test as a user runs it: plain node, no vitest, the real pi against the
 * scripted loopback LLM. Three fast scenarios here; all 11 run, with deeper assertions, in
 * tree-scenarios-a/b and tree-interrupts.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ONE_LINE_IS_ENOUGH, REAL_PI, REPO_ROOT } from "../support/pi-home.js";
import { runProcess } from "../support/processes.js";
import type { StressSummary } from "../support/stress/run.js";
import { basicSpawnWait } from "../support/stress/scenarios-a.js";
import { startTree } from "../support/tree-harness.js";

const SCRIPT = path.join(REPO_ROOT, "scripts", "stress-test");
let out: string;

/** Newest change under the harness's sources (what tsconfig.stress.json compiles), as the script judges it. */
const newestChange = (file: string): number => {
  const stat = fs.statSync(file);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...fs.readdirSync(file).map((name) => newestChange(path.join(file, name))));
};
const harnessIsStale = () => {
  const entry = path.join(REPO_ROOT, "build", "stress", "test", "support", "stress", "cli.js");
  const sources = ["test/support", "src", "tsconfig.stress.json"].map((part) => path.join(REPO_ROOT, part));
  return !fs.existsSync(entry) || fs.statSync(entry).mtimeMs < Math.max(...sources.map(newestChange));
};

beforeAll(async () => {
  // The script runs the compiled harness: build it from the sources under test, unless
  // `npm run build` (which npm test runs first) already has.
  if (harnessIsStale()) {
    const build = await runProcess(
      path.join(REPO_ROOT, "node_modules", ".bin", "tsc"),
      ["-p", path.join(REPO_ROOT, "tsconfig.stress.json")],
      {
        timeoutMs: 60_000,
      },
    );
    expect(build.code, build.stdout + build.stderr).toBe(0);
  }
  out = fs.mkdtempSync(path.join(os.tmpdir(), "stress-test-"));
}, 70_000);

afterAll(() => fs.rmSync(out, { recursive: true, force: true }));

const stressTest = (args: string[], timeoutMs = 100_000, env?: NodeJS.ProcessEnv) =>
  runProcess(process.execPath, [SCRIPT, ...args], { cwd: out, timeoutMs, ...(env && { env }) });

describe.skipIf(ONE_LINE_IS_ENOUGH)("scripts/stress-test", () => {
  it("runs scenarios 01, 03 and 09 against the loopback LLM and writes a log per scenario and summary.json", async () => {
    const run = await stressTest(["--only", "1,nested-chain,09", "--out", path.join(out, "ok")]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/PASS 01-basic-spawn-wait/);
    expect(run.stdout).toMatch(/3\/3 passed/);

    const summary = JSON.parse(fs.readFileSync(path.join(out, "ok", "summary.json"), "utf8")) as StressSummary;
    expect(summary).toMatchObject({ version: 1, mode: "scripted", totals: { scenarios: 3, passed: 3, failed: 0 } });
    expect(summary.scenarios.map((s) => [s.dir, s.verdict, s.reasons, s.markers])).toEqual([
      ["01-basic-spawn-wait", "pass", [], ["STRESS_01_OK"]],
      ["03-nested-chain", "pass", [], ["STRESS_03_OK"]],
      ["09-limit-behavior", "pass", [], ["STRESS_09_OK"]],
    ]);
    for (const s of summary.scenarios) expect(s.durationMs).toBeGreaterThan(0);
    expect(summary.scenarios[1]!.agents.map((a) => [a.path, a.status])).toEqual([
      ["/root/mid", "completed"],
      ["/root/mid/leaf", "completed"],
    ]);
    expect(summary.scenarios[2]!.agents.map((a) => a.path)).toEqual(["/root/attempt_5"]);

    // The log shows the command, what the root was told by each tool, its answer and the verdict.
    const log = fs.readFileSync(path.join(out, "ok", "09-limit-behavior", "log.txt"), "utf8");
    expect(log).toContain("$ pi --mode json -np -e ");
    expect(log).toContain("ERROR unknown agent_type: nonexistent_role");
    expect(log).toContain("ERROR agent task path already exists: /root/attempt_5");
    expect(log).toMatch(/\| STRESS_09_OK\n/);
    expect(log).toContain("=== verdict: PASS");
    const events = fs
      .readFileSync(path.join(out, "ok", "01-basic-spawn-wait", "root-stdout.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string });
    expect(events[0]!.type).toBe("session");
    expect(events.some((e) => e.type === "message_update")).toBe(false);
    expect(fs.existsSync(path.join(out, "ok", "01-basic-spawn-wait", "session.jsonl"))).toBe(true);
  }, 120_000);

  it("fails a scenario whose root cannot finish in time: exit 1, the reason in summary.json", async () => {
    const run = await stressTest(["--only", "01", "--timeout", "0.3", "--out", path.join(out, "slow")]);
    expect(run.code, run.stdout + run.stderr).toBe(1);
    const summary = JSON.parse(fs.readFileSync(path.join(out, "slow", "summary.json"), "utf8")) as StressSummary;
    expect(summary.totals).toEqual({ scenarios: 1, passed: 0, failed: 1 });
    expect(summary.scenarios[0]).toMatchObject({ verdict: "fail", markers: [null] });
    expect(summary.scenarios[0]!.reasons).toContain("pi did not finish within 0.3 s");
    expect(summary.scenarios[0]!.reasons).toContain("no line holding exactly STRESS_01_OK");
  }, 60_000);

  it("--live runs the pi it is given with the user's own configuration (here: a pi home whose provider is the loopback LLM)", async () => {
    // Stands in for the user's provider: the same scripted models, behind the user's own config.
    const h = await startTree();
    try {
      for (const hook of basicSpawnWait.scripted.script(h)) hook();
      const run = await stressTest(
        ["--live", "--pi", REAL_PI, "--model", "fake/fast", "--only", "01", "--out", path.join(out, "live")],
        100_000,
        h.home.env,
      );
      expect(run.code, run.stdout + run.stderr).toBe(0);
      const summary = JSON.parse(fs.readFileSync(path.join(out, "live", "summary.json"), "utf8")) as StressSummary;
      expect(summary).toMatchObject({ mode: "live", model: "fake/fast", totals: { passed: 1, failed: 0 } });
      const log = fs.readFileSync(path.join(out, "live", "01-basic-spawn-wait", "log.txt"), "utf8");
      expect(log).toContain(` --mode json -ne -np -e ${REPO_ROOT} --model fake/fast --session `);
      // The root got the scenario's natural-language instruction, in the scenario's scratch folder.
      const first = h.requestsOf("/root")[0]!;
      expect(JSON.stringify(first.messages)).toContain('spawn_agent with task_name \\"scout_one\\"');
      expect(fs.readFileSync(path.join(out, "live", "01-basic-spawn-wait", "work", "README.md"), "utf8")).toContain(
        "stress fixture",
      );
    } finally {
      await h.cleanup();
    }
  }, 120_000);

  it("answers bad usage with one line and exit code 2", async () => {
    for (const [args, line] of [
      [["--only", "12"], "stress-test: unknown scenario 12 (see --list)\n"],
      [["--model", "p/m"], "stress-test: --model needs --live\n"],
      [["--timeout", "soon"], "stress-test: --timeout soon: expected a positive number of seconds\n"],
    ] as const) {
      const run = await stressTest([...args]);
      expect([run.code, run.stderr, run.stdout]).toEqual([2, line, ""]);
    }
    const list = await stressTest(["--list"]);
    expect(list.code).toBe(0);
    expect(list.stdout.trim().split("\n")).toHaveLength(11);
  }, 60_000);
});
