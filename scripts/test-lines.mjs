#!/usr/bin/env node
/**
 * Runs the vitest suite on the pi lines (scripts/pi-lines.mjs): pi 1.x on the Node 22 from
 * node_modules, and pi 0.73.1 on the machine's own Node. vitest itself runs on the line's
 * node, with PI_SUBAGENTS_TEST_PI_LINE set and the line's `node`/`pi` folder first on PATH, so
 * everything the tests start (the wrapper, the fake pi, pi) runs on that node too.
 *
 *   node scripts/test-lines.mjs [both|current|0.73] [vitest arguments…]
 *
 * `both` (what `npm test` runs): the tests that depend on the line (test/e2e and any test that
 * uses the line's pi or node: lineDependentTests) on pi 1.x and on pi 0.73.1, and every other
 * test once, on pi 0.73.1's Node (the oldest Node the package supports). The two line passes run
 * at once, each with two vitest workers (four test files at a time keep two cores busy where
 * one pass alone leaves them idle a third of the time: tests that wait for a child, a tmux pane
 * or a Slurm job); the other tests are cut into REST_SHARDS shards (vitest's --shard), which
 * each lane takes one at a time once its line pass is done, so the two lanes end together
 * whichever line is slower on this machine. Each line of a pass's output is tagged with its
 * pass. PI_SUBAGENTS_TEST_AT_ONCE=0 runs the passes one after the other instead (a machine
 * with one core, or other work on it).
 * `current` or `0.73`: every test, on that line only.
 *
 * A test file that runs past PI_SUBAGENTS_TEST_FILE_MINUTES (default 10) is taken as hung: the
 * watchdog reporter (scripts/test-watchdog.mjs) names it, its test and its processes, and ends
 * its worker, so the pass goes on instead of holding CI until its time-out. A pass that runs
 * past PI_SUBAGENTS_TEST_PASS_MINUTES (default 40) is ended whole, with where its workers were.
 *
 * Exits non-zero if a run fails. The summary names the failed tests (up to 20) under each pass;
 * the last line sums the runs: `total: N passed, N failed, N skipped`.
 * PI_SUBAGENTS_TEST_REPORTS=<folder> keeps each run's vitest JSON report there as <line>.json
 * (per-file start and end times: where the time goes).
 */
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describeLine, ensureLineBin, LINE_ENV, LINE_NAMES, linePath, resolveLine, SCOPE_ENV } from "./pi-lines.mjs";
import { HUNG_FILE, killTree, workerRecords } from "./test-watchdog.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const VITEST = path.join(ROOT, "node_modules", "vitest", "vitest.mjs");
const REPORTS_ENV = "PI_SUBAGENTS_TEST_REPORTS";
const AT_ONCE_ENV = "PI_SUBAGENTS_TEST_AT_ONCE";
const WATCH_DIR_ENV = "PI_SUBAGENTS_TEST_WATCH_DIR";
const PASS_MINUTES_ENV = "PI_SUBAGENTS_TEST_PASS_MINUTES";
/** A whole pass past this is ended (the CI job's own limit is 90 min for both passes and the install). */
const passLimitMs = (Number(process.env[PASS_MINUTES_ENV]) || 40) * 60_000;
/** How many failed tests the summary names (the rest are in vitest's output above it). */
const FAILURES_SHOWN = 20;

const args = process.argv.slice(2);
const choice = args[0] === "both" || LINE_NAMES.includes(args[0]) ? args.shift() : "both";

/**
 * @typedef {object} Pass
 * @property {import("./pi-lines.mjs").LineName} line
 * @property {"line" | "rest" | "all"} scope the tests that depend on the line, the others, or every test
 * @property {string} [tag] put before each line of its output (when passes share the terminal)
 * @property {string} [shard] vitest's `--shard` (`i/n`): this part of the scope's test files
 */

/**
 * How many shards the tests that do not depend on the line are cut into: enough that the lane
 * that finishes its line pass first takes most of them, few enough that vitest's own start
 * (a few seconds each) stays small beside them.
 */
const REST_SHARDS = 6;

/**
 * The passes: each lane runs its own passes one after the other, then takes passes from the
 * shared queue until it is empty; the lanes run at once.
 * @type {{ lanes: Pass[][], queue: Pass[] }}
 */
const plan =
  choice === "both"
    ? {
        lanes: [
          [{ line: "current", scope: "line", tag: "1.x  │ " }],
          [{ line: "0.73", scope: "line", tag: "0.73 │ " }],
        ],
        queue: Array.from({ length: REST_SHARDS }, (_, i) => ({
          line: /** @type {const} */ ("0.73"),
          scope: /** @type {const} */ ("rest"),
          tag: `rest${i + 1} │ `,
          shard: `${i + 1}/${REST_SHARDS}`,
        })),
      }
    : { lanes: [[{ line: /** @type {import("./pi-lines.mjs").LineName} */ (choice), scope: "all" }]], queue: [] };
const SCOPE_LABELS = {
  line: ", the tests that depend on the line",
  rest: ", the tests that do not depend on the line",
  all: "",
};

/** @param {number} ms */
const minutes = (ms) => `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;

/** @type {Set<import("node:child_process").ChildProcess>} */
const running = new Set();
/** A signal ended the run: a lane starts no further pass. */
let interrupted = false;
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    interrupted = true;
    for (const child of running) child.kill(signal);
    process.exitCode = 130;
  });
}

/**
 * Copies a child's output to ours line by line, each line after `tag`, so that two runs at
 * once stay readable.
 * @param {import("node:stream").Readable} from
 * @param {NodeJS.WriteStream} to
 * @param {string} tag
 */
function tagLines(from, to, tag) {
  let partial = "";
  from.setEncoding("utf8");
  from.on("data", (chunk) => {
    const lines = (partial + chunk).split("\n");
    partial = lines.pop() ?? "";
    if (lines.length > 0) to.write(lines.map((line) => `${tag}${line}\n`).join(""));
  });
  from.on("end", () => {
    if (partial !== "") to.write(`${tag}${partial}\n`);
  });
}

/**
 * One pass: vitest's own output as it goes, then its counts and slowest files (from its JSON report).
 * @param {Pass} pass
 */
async function runPass({ line: name, scope, tag, shard }) {
  const line = resolveLine(ROOT, name);
  ensureLineBin(line);
  const label = `${describeLine(line)}${SCOPE_LABELS[scope]}${shard ? `, part ${shard}` : ""}`;
  process.stdout.write(`\n${tag ?? ""}━━ ${label} · ${LINE_ENV}=${name} ━━\n`);
  const report = path.join(
    os.tmpdir(),
    `pi-subagent-tree-vitest-${process.pid}-${randomBytes(4).toString("hex")}.json`,
  );
  const started = Date.now();
  // The watchdog (scripts/test-watchdog.mjs) ends a hung file's worker instead of the run hanging.
  const watchDir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-subagent-tree-watch-"));
  const vitestArgs = [
    VITEST,
    "run",
    "--reporter=default",
    "--reporter=json",
    `--reporter=${path.join(ROOT, "scripts", "test-watchdog.mjs")}`,
    `--outputFile.json=${report}`,
  ];
  // A filter may match no test of this scope: another pass still runs it.
  if (scope !== "all") vitestArgs.push("--passWithNoTests");
  if (shard) vitestArgs.push(`--shard=${shard}`);
  const env = { ...process.env, [LINE_ENV]: name, PATH: linePath(line, process.env.PATH), [WATCH_DIR_ENV]: watchDir };
  if (scope === "all") delete env[SCOPE_ENV];
  else env[SCOPE_ENV] = scope;
  // Tagged output is piped: keep vitest's colours when our own output is a terminal.
  if (tag && process.stdout.isTTY && env.FORCE_COLOR === undefined) env.FORCE_COLOR = "1";
  const code = await new Promise((resolve) => {
    const child = spawn(line.node, [...vitestArgs, ...args], {
      cwd: ROOT,
      stdio: tag ? ["ignore", "pipe", "pipe"] : "inherit",
      env,
    });
    running.add(child);
    const passTimer = setTimeout(() => endPass(child, watchDir, tag ?? ""), passLimitMs);
    child.once("exit", () => clearTimeout(passTimer));
    if (tag && child.stdout && child.stderr) {
      tagLines(child.stdout, process.stdout, tag);
      tagLines(child.stderr, process.stderr, tag);
    }
    child.once("error", (err) => {
      process.stderr.write(`could not start vitest on ${line.node}: ${err.message}\n`);
      resolve(1);
    });
    child.once("exit", (exitCode, signal) => {
      running.delete(child);
      const code = exitCode ?? (signal ? 1 : 0);
      // The rest of its output, unless a process it left behind holds the pipe open.
      const drained = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        resolve(code);
      }, 2000);
      child.once("close", () => {
        clearTimeout(drained);
        resolve(code);
      });
    });
  });
  const hung = readLines(path.join(watchDir, HUNG_FILE)).map((line) => `HUNG ${line}`);
  fs.rmSync(watchDir, { recursive: true, force: true });
  const { counts, slowest, failures } = readReport(
    report,
    scope === "all" ? name : `${name}-${scope}${shard ? `-${shard.replace("/", "of")}` : ""}`,
  );
  return { label, code, counts, slowest, failures: [...hung, ...failures], ms: Date.now() - started };
}

/**
 * The last resort for a pass that outlives passLimitMs (a hang the watchdog reporter could not
 * end): says which files were still in a worker, then kills vitest and every process under it.
 * @param {import("node:child_process").ChildProcess} child
 * @param {string} watchDir
 * @param {string} tag
 */
function endPass(child, watchDir, tag) {
  const say = (line) => process.stderr.write(`${tag}test-lines: ${line}\n`);
  say(`this pass has run ${passLimitMs / 60_000} min (${PASS_MINUTES_ENV}): ending it.`);
  for (const { pid, file, test } of workerRecords(watchDir)) {
    say(`worker ${pid} was last in ${path.relative(ROOT, file)} › "${test}"`);
  }
  fs.appendFileSync(path.join(watchDir, HUNG_FILE), `the pass: ended after ${passLimitMs / 60_000} min\n`);
  if (child.pid !== undefined) killTree(child.pid);
}

/**
 * The counts and the three slowest files of a vitest JSON report, which is then removed (or
 * kept in PI_SUBAGENTS_TEST_REPORTS).
 * @param {string} report
 * @param {string} name
 */
function readReport(report, name) {
  let counts = { passed: 0, failed: 0, skipped: 0 };
  let slowest = "";
  /** @type {string[]} */
  let failures = [];
  try {
    const json = JSON.parse(fs.readFileSync(report, "utf8"));
    counts = {
      passed: json.numPassedTests,
      failed: json.numFailedTests,
      skipped: json.numPendingTests + json.numTodoTests,
    };
    slowest = json.testResults
      .map((file) => ({ file: path.relative(ROOT, file.name), ms: file.endTime - file.startTime }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 3)
      .map(({ file, ms }) => `${file} ${Math.round(ms / 1000)} s`)
      .join(", ");
    failures = json.testResults.flatMap((file) => {
      const rel = path.relative(ROOT, file.name);
      const tests = (file.assertionResults ?? []).filter((t) => t.status === "failed");
      if (tests.length === 0 && file.status === "failed") return [`${rel}: ${firstLine(file.message)}`];
      return tests.map((t) => `${rel} › ${t.fullName}: ${firstLine(t.failureMessages?.[0])}`);
    });
    const keep = process.env[REPORTS_ENV];
    if (keep) {
      fs.mkdirSync(keep, { recursive: true });
      fs.copyFileSync(report, path.join(keep, `${name}.json`));
    }
  } catch {
    // vitest did not get to write it: its exit code says enough
  } finally {
    fs.rmSync(report, { force: true });
  }
  return { counts, slowest, failures };
}

/** @param {string} file the non-empty lines of file, none if it is missing */
function readLines(file) {
  try {
    return fs
      .readFileSync(file, "utf8")
      .split("\n")
      .filter((line) => line !== "");
  } catch {
    return [];
  }
}

/** @param {string | undefined} text */
const firstLine = (text) => (text ?? "").trim().split("\n")[0]?.slice(0, 300) ?? "";

const started = Date.now();
if (choice === "both") {
  // The stress harness that test/e2e/stress-test-script.test.ts runs is compiled into
  // build/stress/, which the script rebuilds when its sources changed: rebuilt here, once,
  // rather than by two passes writing the same files at once.
  spawnSync(process.execPath, [path.join(ROOT, "scripts", "stress-test"), "--help"], { cwd: ROOT, stdio: "ignore" });
}
/** @param {Pass[]} lane its own passes, then whatever the shared queue still holds */
async function runLane(lane) {
  /** @type {Awaited<ReturnType<typeof runPass>>[]} */
  const results = [];
  for (let pass = lane.shift() ?? plan.queue.shift(); pass; pass = lane.shift() ?? plan.queue.shift()) {
    if (interrupted) break;
    results.push(await runPass(pass));
  }
  return results;
}
const results =
  process.env[AT_ONCE_ENV] === "0"
    ? await runLane(plan.lanes.flat())
    : (await Promise.all(plan.lanes.map(runLane))).flat();

process.stdout.write("\n━━ pi lines ━━\n");
for (const { label, code, counts, slowest, failures, ms } of results) {
  const verdict = code === 0 ? "passed" : `FAILED (exit ${code})`;
  process.stdout.write(
    `${verdict.padEnd(16)} ${label}: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped, ${minutes(ms)}\n`,
  );
  if (slowest) process.stdout.write(`${"".padEnd(16)} slowest: ${slowest}\n`);
  for (const failure of failures.slice(0, FAILURES_SHOWN)) process.stdout.write(`${"".padEnd(16)} ✗ ${failure}\n`);
  if (failures.length > FAILURES_SHOWN)
    process.stdout.write(`${"".padEnd(16)} … and ${failures.length - FAILURES_SHOWN} more\n`);
}
const sum = (key) => results.reduce((total, result) => total + result.counts[key], 0);
process.stdout.write(`in ${minutes(Date.now() - started)}\n`);
process.stdout.write(`total: ${sum("passed")} passed, ${sum("failed")} failed, ${sum("skipped")} skipped\n`);
if (interrupted) process.exitCode = 130;
else if (results.some((result) => result.code !== 0)) process.exitCode = 1;
