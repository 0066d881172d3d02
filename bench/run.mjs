#!/usr/bin/env node
// The benchmark suite: runs every bench side by side in one process run, prints one table of
// medians and ratios, and with --write rewrites docs/performance.md from this run.
//   npm run bench                      print the table
//   npm run bench -- --write           ... and rewrite docs/performance.md
//   npm run bench -- --only startup,latency
// BENCH_ROUNDS_FACTOR=0.5 halves every bench's rounds (quicker, noisier).
import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { machine, markdown, printRows } from "./report.mjs";
import { REPO_ROOT } from "./support.mjs";

const SUITES = [
  "report-budget",
  "ledger",
  "tracing",
  "startup",
  "latency",
  "stream",
  "pi-run",
  "live-message",
  "rpc-start",
  "dialog-route",
  "limits",
  "fallback",
  "verify",
  "fanout",
  "tree-fanout",
  "wait-cpu",
  "child-start",
  "result-latency",
  "memory",
  "local-cpu",
  "peers",
  "isolation-spawn",
  "durable",
  "runners",
  "runners-remote",
  "process-helper",
];

const args = process.argv.slice(2);
const write = args.includes("--write");
const onlyIndex = args.indexOf("--only");
const only = onlyIndex === -1 ? SUITES : (args[onlyIndex + 1]?.split(",") ?? []);
const unknown = only.filter((name) => !SUITES.includes(name));
if (unknown.length > 0 || (onlyIndex !== -1 && only.length === 0)) {
  console.error(`bench: unknown suite ${unknown.join(", ") || "(none given)"}; suites: ${SUITES.join(", ")}`);
  process.exit(2);
}
if (write && only.length !== SUITES.length) {
  console.error("bench: --write records the whole suite; drop --only");
  process.exit(2);
}

// The 1-minute load average, sampled through the run: the doc says when other work shared the machine.
const loadSamples = [os.loadavg()[0]];
const sampler = setInterval(() => loadSamples.push(os.loadavg()[0]), 5000);
sampler.unref();

function loadNote() {
  const cores = os.cpus().length;
  const peak = Math.max(...loadSamples);
  if (peak < cores * 0.5) return "";
  const mean = loadSamples.reduce((sum, value) => sum + value, 0) / loadSamples.length;
  return ` **This run was on a loaded machine**: the 1-minute load average, sampled every 5 s, was ${mean.toFixed(1)} on average and ${peak.toFixed(1)} at its peak, on ${cores} cores (other work was running), so its start-up and real-pi figures are higher than on a quiet one.`;
}

const started = Date.now();
const loadAtStart = os.loadavg()[0];
const rows = [];
for (const name of only) {
  const suiteStart = Date.now();
  process.stderr.write(`bench: ${name} …`);
  const { run } = await import(`./${name}.bench.mjs`);
  rows.push(...(await run()));
  process.stderr.write(` ${((Date.now() - suiteStart) / 1000).toFixed(0)} s\n`);
}
const seconds = (Date.now() - started) / 1000;
console.log();
printRows(rows);
const judged = rows.flatMap((r) => r.points).filter((p) => p.pass !== undefined);
const met = judged.filter((p) => p.pass).length;
const summary = `${met} of ${judged.length} measured points meet their target`;
console.log(`\n${summary}; ${seconds.toFixed(0)} s in all.`);

if (write) {
  const { table, notes } = markdown(rows);
  const factor = process.env.BENCH_ROUNDS_FACTOR;
  const command = `${factor ? `BENCH_ROUNDS_FACTOR=${factor} ` : ""}npm run bench -- --write`;
  const template = readFileSync(path.join(REPO_ROOT, "bench/performance.template.md"), "utf8");
  const filled = template
    .replace("{{command}}", command)
    .replace("{{date}}", new Date().toISOString().slice(0, 16).replace("T", " "))
    .replace("{{machine}}", machine(loadAtStart))
    .replace("{{summary}}", summary)
    .replace("{{duration}}", `${Math.round(seconds)} s`)
    .replace("{{table}}", table)
    .replace("{{notes}}", notes)
    .replace("{{load}}", loadNote());
  writeFileSync(path.join(REPO_ROOT, "docs/performance.md"), filled);
  console.log("wrote docs/performance.md");
}
