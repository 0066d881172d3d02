#!/usr/bin/env node
// Wrapper start-up: `subagent-wrapper meta.json` started → pi spawned, for tasks of growing
// size, against `node -e 0` (start to exit) in the same run, alternated.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fmt, median, now, rounds, row, runProcess, runWrapper, tempDir, writeMeta } from "./support.mjs";

/** `true` stands in for pi: it exits at once, so only the wrapper's own work is timed. */
const TRUE_BIN = ["/usr/bin/true", "/bin/true"].find((candidate) => {
  try {
    readFileSync(candidate);
    return true;
  } catch {
    return false;
  }
});

async function startup(taskBytes) {
  const { dir, cleanup } = tempDir();
  try {
    const meta = writeMeta(dir, {
      task: "t".repeat(taskBytes),
      stdoutPath: "out/stdout.log",
      stderrPath: "out/stderr.log",
      transcriptPath: "out/transcript.md",
    });
    const started = now();
    await runWrapper(meta, { piBin: TRUE_BIN });
    const first = readFileSync(path.join(dir, "out/events.jsonl"), "utf8").split("\n")[0];
    const runStart = JSON.parse(first);
    if (runStart.type !== "run_start") throw new Error(`first record is ${runStart.type}`);
    // run_start is stamped right after pi's 'spawn' event, in whole ms.
    return runStart.ts - started;
  } finally {
    cleanup();
  }
}

export async function run() {
  const points = [];
  for (const [taskBytes, label] of [
    [1024, "1 KiB task"],
    [128 * 1024, "128 KiB task"],
    [1024 * 1024, "1 MiB task"],
  ]) {
    const wrapper = [];
    const node = [];
    for (let i = 0; i < rounds(15); i++) {
      wrapper.push(await startup(taskBytes));
      node.push((await runProcess(process.execPath, ["-e", "0"])).ms);
    }
    const value = median(wrapper);
    const baseline = median(node);
    points.push({ input: label, value: fmt.ms(value), baseline: fmt.ms(baseline), ratio: fmt.x(value / baseline), pass: value / baseline <= 1.5 });
  }
  return [
    row({
      id: "startup",
      what: "wrapper start-up: process start → pi spawned",
      target: "≤ 1.5× `node -e 0`",
      points,
      note: "From the bench's `spawn()` of `node bin/subagent-wrapper meta.json` to the `run_start` record's `ts` (stamped on the child's 'spawn' event; whole ms), with `true` as the pi binary and the extension's artifact set (events, stdout/stderr logs, transcript). Baseline: `spawn()` of `node -e 0` to its exit. The wrapper reads and validates meta.json, then opens the artifacts while it writes the task file and spawns pi.",
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
