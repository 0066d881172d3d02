#!/usr/bin/env node
// Starting git from pi's process vs from the process helper (src/lib/process-helper.ts).
// A fork costs the parent in proportion to its memory, and pi's process is ~200 MB. In a Node
// process grown to 50, 200 and 400 MB (as pi is at start and later in a long session), `git
// --version` is run alternately through runProcess directly and through a ProcessHelper, in
// the same process; per run: how long the caller's event loop was blocked starting it, and the
// whole run. Medians. Target: the event loop blocked at most a quarter as long at 200 MB.
import { spawn } from "node:child_process";
import path from "node:path";
import { fmt, median, REPO_ROOT, rounds, row } from "./support.mjs";

const RUNS = () => rounds(40);

/** The measuring process: grows to `mb` MB, then alternates direct and helper runs. */
const PROGRAM = (mb, runs) => `
import { runProcess } from ${JSON.stringify(path.join(REPO_ROOT, "dist/lib/run-process.js"))};
import { ProcessHelper } from ${JSON.stringify(path.join(REPO_ROOT, "dist/lib/process-helper.js"))};
const keep = [];
while (process.memoryUsage().rss < ${mb} * 1e6) keep.push(Array.from({ length: 50_000 }, (_, i) => ({ i, s: "x" + i })));
const helper = new ProcessHelper();
const options = { cwd: "/", env: process.env, timeoutMs: 10_000 };
const launchers = { direct: runProcess, helper: helper.launch };
const samples = { direct: { blocked: [], total: [] }, helper: { blocked: [], total: [] } };
await helper.launch("git", ["--version"], options);
for (let i = 0; i < ${runs}; i++) {
  for (const name of i % 2 ? ["direct", "helper"] : ["helper", "direct"]) {
    const start = performance.now();
    const done = launchers[name]("git", ["--version"], options);
    samples[name].blocked.push(performance.now() - start);
    await done;
    samples[name].total.push(performance.now() - start);
  }
}
console.log(JSON.stringify({ rss: process.memoryUsage().rss, samples }));
`;

function measure(mb) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", PROGRAM(mb, RUNS())], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`measuring process exited ${code}`)),
    );
  });
}

export async function run() {
  const points = [];
  const totals = [];
  for (const mb of [50, 200, 400]) {
    const { rss, samples } = await measure(mb);
    const helper = median(samples.helper.blocked);
    const direct = median(samples.direct.blocked);
    points.push({
      input: `${Math.round(rss / 1e6)} MB caller`,
      value: fmt.ms(helper),
      baseline: fmt.ms(direct),
      ratio: fmt.x(helper / direct),
      ...(mb === 200 && { pass: helper / direct <= 0.25 }),
    });
    totals.push(
      `${Math.round(rss / 1e6)} MB: ${fmt.ms(median(samples.helper.total))} through the helper vs ${fmt.ms(median(samples.direct.total))} direct`,
    );
  }
  return [
    row({
      id: "process-helper",
      what: "event loop blocked to start `git --version`: through the process helper vs directly",
      target: "≤ 0.25× at 200 MB",
      points,
      note: `A Node process grown to the size shown runs \`git --version\` ${RUNS()} times each way, alternated; the figure is how long the call that starts it held the caller's event loop (a fork copies the caller's page tables, so it grows with the caller's memory; pi's process is ~200 MB at start). Whole run, medians: ${totals.join("; ")}. The extension starts git and the worktree setup command through the helper when it loads in pi (docs/architecture.md, lib/process-helper.ts).`,
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  const rows = await run();
  printRows(rows);
  for (const r of rows) console.log(`\n${r.note}`);
}
