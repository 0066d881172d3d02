#!/usr/bin/env node
// A child with dialogs (meta.json `dialogs`: pi in RPC mode, the task sent as a `prompt`
// command) against the same child without (json mode, the task on the command line): how long
// from the wrapper's launch to the child's first model request, and to the wrapper's exit. The
// real pi on each installed line, through `subagent-wrapper`, against a loopback LLM that
// answers at once; alternated, medians.
import { mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import {
  benchLines,
  benchPiHome,
  fmt,
  median,
  now,
  readResult,
  rounds,
  row,
  runWrapper,
  startBenchLlm,
  writeMeta,
} from "./support.mjs";

async function measure(line) {
  const state = { firstAt: 0 };
  const llm = await startBenchLlm(() => {
    if (!state.firstAt) state.firstAt = now();
    return { text: "done" };
  });
  const { home, env, cleanup } = benchPiHome(llm.url, line);
  const runEnv = { ...env, PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0" };
  const samples = { rpc: { first: [], exit: [] }, json: { first: [], exit: [] } };
  try {
    for (let round = 0; round < rounds(7); round++) {
      for (const rpc of round % 2 ? [false, true] : [true, false]) {
        const dir = path.join(home, `run-${round}-${rpc}`);
        mkdirSync(dir, { recursive: true });
        const meta = writeMeta(dir, {
          task: "say done",
          graceMs: 5000,
          ...(rpc && { dialogs: { timeoutMs: 60_000 } }),
        });
        state.firstAt = 0;
        const launchedAt = now();
        const run = await runWrapper(meta, { env: runEnv });
        const exitedAt = now();
        const result = readResult(dir);
        if (result.status !== "completed" || result.forcedExit)
          throw new Error(`${line.label} run ended ${result.status}: ${result.errorMessage ?? run.stderr}`);
        const into = rpc ? samples.rpc : samples.json;
        into.first.push(state.firstAt - launchedAt);
        into.exit.push(exitedAt - launchedAt);
        rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    await llm.close();
    cleanup();
  }
  return {
    first: { rpc: median(samples.rpc.first), json: median(samples.json.first) },
    exit: { rpc: median(samples.rpc.exit), json: median(samples.json.exit) },
  };
}

export async function run() {
  const first = [];
  const whole = [];
  for (const line of benchLines()) {
    const m = await measure(line);
    for (const [points, pair] of [
      [first, m.first],
      [whole, m.exit],
    ]) {
      points.push({
        input: line.label,
        value: fmt.ms(pair.rpc),
        baseline: fmt.ms(pair.json),
        ratio: `${(pair.rpc / pair.json).toFixed(2)}×`,
        // Within the noise of a pi start on a shared machine: no more than json mode's, 5 % either way.
        pass: pair.rpc <= pair.json * 1.05,
        raw: pair.rpc,
      });
    }
  }
  const note = `The real pi on each installed line (0.73.1 on this Node; pi 1.x on the Node 22 from node_modules, or under BENCH_PI1_ROOT), through \`subagent-wrapper\`, against a loopback LLM in the bench process that answers "done" at once. Measured: a run with meta.json \`dialogs\` (pi in RPC mode, the task sent as the \`prompt\` command, stdin ended when pi's work is over); baseline: the same run without it (json mode). Alternated, medians of ${rounds(7)} runs each.`;
  return [
    row({
      id: "rpc-start",
      what: "a child's start with dialogs (RPC mode): the wrapper's launch → the child's first model request (baseline: json mode)",
      target: "no more than json mode (≤ 1.05×)",
      points: first,
      note,
    }),
    row({
      id: "rpc-run",
      what: "a child's whole run with dialogs (RPC mode): the wrapper's launch → its exit (baseline: json mode)",
      target: "no more than json mode (≤ 1.05×)",
      points: whole,
      note,
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
