#!/usr/bin/env node
// What the extension adds to a child's start: a real pi run as a child of a tree is run — in
// RPC mode, as the wrapper runs every child (its extensions then have a UI: ctx.hasUI is true),
// with the tree directory, its path and the dialog route in the environment — answering one
// prompt that needs no delegation, with `-e dist/extension/index.js` (measured) and without it
// (baseline), alternated run by run on both pi lines. Measured: the CPU time (user + system) of
// the pi process and the processes it waited for, from the bench's own cutime + cstime in
// /proc/self/stat before and after each run (exact, not sampled); medians. One warm-up run of
// each kind first, so jiti's transform cache and the page cache are warm. BENCH_CHILD_START_BEFORE=<another
// build's dist/extension/index.js> adds that extension to the rotation (a change's before and after
// in one run); its median goes into the note.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { benchLines, benchPiHome, fmt, median, REPO_ROOT, rounds, row, startBenchLlm } from "./support.mjs";

const CLOCK_TICKS = 100; // USER_HZ on Linux: /proc's CPU times are in 1/100 s
const EXTENSION = path.join(REPO_ROOT, "dist", "extension", "index.js");
const RUN_LIMIT_MS = 120_000;
const BEFORE = process.env.BENCH_CHILD_START_BEFORE;

/** CPU (ms) of this process's children that have ended and been waited for. */
function reapedChildrenCpuMs() {
  const stat = fs.readFileSync("/proc/self/stat", "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / CLOCK_TICKS;
}

/**
 * pi in RPC mode to its end, driven as the wrapper drives a child: the prompt on stdin, stdin
 * ended once pi's work is over (`agent_settled` on a pi that emits it, else its `agent_end`:
 * one answer, no retry). Resolves with the exit code, its wall time and stderr.
 */
function rpcRun(entry, args) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(entry.line.piCli, args, {
      cwd: entry.home,
      env: entry.childEnv,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const endsAt = entry.line.name === "0.73" ? "agent_end" : "agent_settled";
    let stderr = "";
    let pending = "";
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.stdout.on("data", (chunk) => {
      pending += chunk;
      let newline = pending.indexOf("\n");
      while (newline !== -1) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (line.includes(`"type":"${endsAt}"`)) child.stdin.end();
        newline = pending.indexOf("\n");
      }
    });
    child.stdin.on("error", () => undefined);
    const timer = setTimeout(() => child.kill("SIGKILL"), RUN_LIMIT_MS);
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, ms: performance.now() - started, stderr });
    });
    child.stdin.write(`${JSON.stringify({ type: "prompt", message: "hi" })}\n`);
  });
}

/** One pi run to its end (with `extension` loaded, or none): its CPU (ms) and wall time (ms). */
async function piRun(entry, extension) {
  const args = ["--mode", "rpc", "--no-session", "--no-extensions", ...(extension ? ["-e", extension] : [])];
  const before = reapedChildrenCpuMs();
  const run = await rpcRun(entry, args);
  if (run.code !== 0) throw new Error(`pi exited ${run.code}: ${run.stderr.slice(-500)}`);
  return { cpu: reapedChildrenCpuMs() - before, wall: run.ms };
}

export async function run() {
  const llm = await startBenchLlm(() => ({ text: "done" }));
  const lines = benchLines().map((line) => {
    const home = benchPiHome(llm.url, line);
    const treeDir = path.join(home.home, "trees", "bench-tree");
    // The child's folder, as its parent's spawn made it (its runs/ holds its turns).
    fs.mkdirSync(path.join(treeDir, "agents", "worker", "runs"), { recursive: true });
    // What the parent's launcher sets: this pi is the child /root/worker of that tree, its
    // dialogs go up to a person (the root had a UI).
    const childEnv = {
      ...home.env,
      PI_SUBAGENTS_TREE_DIR: treeDir,
      PI_SUBAGENTS_AGENT_PATH: "/root/worker",
      PI_SUBAGENTS_DIALOG_ROUTE: "person",
      PI_SUBAGENT_PARENT_SESSION: "bench-tree",
    };
    return { line, ...home, childEnv, with: [], without: [], before: [] };
  });
  try {
    const kinds = [EXTENSION, undefined, ...(BEFORE ? [BEFORE] : [])];
    for (const entry of lines) for (const extension of kinds) await piRun(entry, extension);
    for (let round = 0; round < rounds(7); round++) {
      for (const entry of lines) {
        entry.with.push(await piRun(entry, EXTENSION));
        entry.without.push(await piRun(entry, undefined));
        if (BEFORE) entry.before.push(await piRun(entry, BEFORE));
      }
    }
  } finally {
    await llm.close();
    for (const { cleanup } of lines) cleanup();
  }
  return lines.map(({ line, with: withRuns, without, before }) => {
    const cpu = median(withRuns.map((r) => r.cpu));
    const bare = median(without.map((r) => r.cpu));
    const wall = median(withRuns.map((r) => r.wall));
    const bareWall = median(without.map((r) => r.wall));
    return row({
      id: `child-start-${line.name}`,
      what: `CPU the extension adds to a child's pi start (one prompt, no delegation) (${line.label})`,
      target: "≤ +150 ms",
      points: [
        {
          input: "1 answer",
          value: fmt.ms(cpu),
          baseline: fmt.ms(bare),
          ratio: `+${fmt.ms(cpu - bare)}`,
          pass: cpu - bare <= 150,
        },
      ],
      note: `Real pi (${line.label}; loopback LLM answering at once) run as the wrapper runs a tree's child /root/worker (its folder in place; its tree directory, path and dialog route in the environment), \`--mode rpc --no-session --no-extensions\` with the prompt on stdin, stdin ended when pi's work is over, with \`-e dist/extension/index.js\` (measured) and without (baseline), alternated; CPU = user + system of pi and what it waited for (the bench's cutime + cstime from /proc/self/stat around each run); medians of ${withRuns.length}, after one warm-up of each. Wall: ${fmt.ms(wall)} with, ${fmt.ms(bareWall)} without.${before.length ? ` ${BEFORE}: ${fmt.ms(median(before.map((r) => r.cpu)))}.` : ""}`,
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
