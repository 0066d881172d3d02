#!/usr/bin/env node
/**
 * Runs the vitest suite on each pi line (scripts/pi-lines.mjs): pi 1.x on the Node 22 from
 * node_modules, then pi 0.73.1 on the machine's own Node. vitest itself runs on the line's
 * node, with PI_SUBAGENTS_TEST_PI_LINE set and the line's `node`/`pi` folder first on PATH, so
 * everything the tests start (the wrapper, the fake pi, pi) runs on that node too.
 *
 *   node scripts/test-lines.mjs [both|current|0.73] [vitest arguments…]
 *
 * `npm test` builds once, then runs this for both lines; it exits non-zero if either fails.
 * The last line sums both: `total: N passed, N failed`.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describeLine, ensureLineBin, LINE_ENV, LINE_NAMES, linePath, resolveLine } from "./pi-lines.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const VITEST = path.join(ROOT, "node_modules", "vitest", "vitest.mjs");

const args = process.argv.slice(2);
const choice = args[0] === "both" || LINE_NAMES.includes(args[0]) ? args.shift() : "both";
const names = choice === "both" ? LINE_NAMES : [choice];

/** @param {number} ms */
const minutes = (ms) => `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;

/** @type {import("node:child_process").ChildProcess | undefined} */
let running;
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    running?.kill(signal);
    process.exitCode = 130;
  });
}

/**
 * One line's run: vitest's own output as it goes, then its counts (from its JSON report).
 * @param {import("./pi-lines.mjs").LineName} name
 */
async function runLine(name) {
  const line = resolveLine(ROOT, name);
  ensureLineBin(line);
  const label = describeLine(line);
  process.stdout.write(`\n━━ ${label} · ${LINE_ENV}=${name} ━━\n`);
  const report = path.join(
    os.tmpdir(),
    `pi-subagent-tree-vitest-${process.pid}-${randomBytes(4).toString("hex")}.json`,
  );
  const started = Date.now();
  const code = await new Promise((resolve) => {
    running = spawn(
      line.node,
      [VITEST, "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...args],
      {
        cwd: ROOT,
        stdio: "inherit",
        env: { ...process.env, [LINE_ENV]: name, PATH: linePath(line, process.env.PATH) },
      },
    );
    running.once("error", (err) => {
      process.stderr.write(`could not start vitest on ${line.node}: ${err.message}\n`);
      resolve(1);
    });
    running.once("exit", (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0)));
  });
  running = undefined;
  let counts = { passed: 0, failed: 0, skipped: 0 };
  try {
    const json = JSON.parse(fs.readFileSync(report, "utf8"));
    counts = {
      passed: json.numPassedTests,
      failed: json.numFailedTests,
      skipped: json.numPendingTests + json.numTodoTests,
    };
  } catch {
    // vitest did not get to write it: its exit code says enough
  } finally {
    fs.rmSync(report, { force: true });
  }
  return { label, code, counts, ms: Date.now() - started };
}

const results = [];
for (const name of names) results.push(await runLine(name));

process.stdout.write("\n━━ pi lines ━━\n");
for (const { label, code, counts, ms } of results) {
  const verdict = code === 0 ? "passed" : `FAILED (exit ${code})`;
  process.stdout.write(
    `${verdict.padEnd(16)} ${label}: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped, ${minutes(ms)}\n`,
  );
}
const sum = (key) => results.reduce((total, result) => total + result.counts[key], 0);
process.stdout.write(`total: ${sum("passed")} passed, ${sum("failed")} failed, ${sum("skipped")} skipped\n`);
if (results.some((result) => result.code !== 0)) process.exitCode = 1;
