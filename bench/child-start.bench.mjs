#!/usr/bin/env node
// What the extension adds to a child's start: a real pi run as a child of a tree would be
// (PI_SUBAGENTS_TREE_DIR and PI_SUBAGENTS_AGENT_PATH set), answering one prompt that needs
// no delegation, with `-e dist/extension/index.js` (measured) and without it (baseline),
// alternated run by run on both pi lines. Measured: the CPU time (user + system) of the pi
// process and the processes it waited for, from the bench's own cutime + cstime in
// /proc/self/stat before and after each run (exact, not sampled); medians. One warm-up run
// of each kind first, so jiti's transform cache and the page cache are warm.
import fs from "node:fs";
import path from "node:path";
import { benchLines, benchPiHome, fmt, median, REPO_ROOT, rounds, row, runProcess, startBenchLlm } from "./support.mjs";

const CLOCK_TICKS = 100; // USER_HZ on Linux: /proc's CPU times are in 1/100 s
const EXTENSION = path.join(REPO_ROOT, "dist", "extension", "index.js");

/** CPU (ms) of this process's children that have ended and been waited for. */
function reapedChildrenCpuMs() {
  const stat = fs.readFileSync("/proc/self/stat", "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / CLOCK_TICKS;
}

/** One pi run to its end: its CPU (ms) and wall time (ms). */
async function piRun(entry, withExtension) {
  const args = ["--mode", "json", "--no-session", "--no-extensions", ...(withExtension ? ["-e", EXTENSION] : []), "hi"];
  const before = reapedChildrenCpuMs();
  const run = await runProcess(entry.line.piCli, args, { cwd: entry.home, env: entry.childEnv, timeoutMs: 120_000 });
  if (run.code !== 0) throw new Error(`pi exited ${run.code}: ${run.stderr.slice(-500)}`);
  return { cpu: reapedChildrenCpuMs() - before, wall: run.ms };
}

export async function run() {
  const llm = await startBenchLlm(() => ({ text: "done" }));
  const lines = benchLines().map((line) => {
    const home = benchPiHome(llm.url, line);
    const treeDir = path.join(home.home, "trees", "bench-tree");
    fs.mkdirSync(treeDir, { recursive: true });
    // What the parent's launcher sets: this pi is the child /root/worker of that tree.
    const childEnv = { ...home.env, PI_SUBAGENTS_TREE_DIR: treeDir, PI_SUBAGENTS_AGENT_PATH: "/root/worker" };
    return { line, ...home, childEnv, with: [], without: [] };
  });
  try {
    for (const entry of lines) for (const withExtension of [true, false]) await piRun(entry, withExtension);
    for (let round = 0; round < rounds(7); round++) {
      for (const entry of lines) {
        entry.with.push(await piRun(entry, true));
        entry.without.push(await piRun(entry, false));
      }
    }
  } finally {
    await llm.close();
    for (const { cleanup } of lines) cleanup();
  }
  return lines.map(({ line, with: withRuns, without }) => {
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
      note: `Real pi (${line.label}; loopback LLM answering at once) run as a tree's child /root/worker (its tree directory and path in the environment), \`--mode json --no-session --no-extensions\`, with \`-e dist/extension/index.js\` (measured) and without (baseline), alternated; CPU = user + system of pi and what it waited for (the bench's cutime + cstime from /proc/self/stat around each run); medians of ${withRuns.length}, after one warm-up of each. Wall: ${fmt.ms(wall)} with, ${fmt.ms(bareWall)} without.`,
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
