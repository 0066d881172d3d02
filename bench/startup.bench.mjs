#!/usr/bin/env node
// Wrapper start-up: `subagent-wrapper meta.json` started → pi spawned, for tasks of growing
// size, against `node -e 0` (start to exit) in the same run, alternated. Then what the
// start-up and the end of a run pay for their promises: the orphan guard (its start, its
// memory, its sweep once the wrapper is gone) and an atomic write with fsync.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { writeFileAtomic } from "../dist/lib/atomic-file.js";
import { processState } from "../dist/lib/process.js";
import { guardCommand, processesWithToken } from "../dist/wrapper/orphan-guard.js";
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

/**
 * One orphan guard as the wrapper starts it: the spawn call (the event loop is blocked for it),
 * its RSS, how long it takes to go once released (`exit`, a normal end), and its sweep after a
 * bare EOF (what a SIGKILLed wrapper leaves it to do).
 */
async function guardOnce(reservePath) {
  const [file, args] = guardCommand(randomBytes(16).toString("hex"), reservePath);
  const started = now();
  const guard = spawn(file, args, { stdio: ["pipe", "ignore", "ignore"], detached: true });
  const spawnMs = now() - started;
  await once(guard, "spawn");
  // Its memory once it waits on the pipe (state S): right after exec its pages are not in yet.
  for (let i = 0; i < 1000 && processState(guard.pid) !== "S"; i++)
    await new Promise((resolve) => setTimeout(resolve, 1));
  const rssKiB = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${guard.pid}/status`, "utf8"))?.[1] ?? Number.NaN);
  guard.stdin.write("pgid 999999999\ndone\n");
  const closed = now();
  guard.stdin.end();
  await once(guard, "exit");
  const sweepMs = now() - closed;
  const released = spawn(file, args, { stdio: ["pipe", "ignore", "ignore"], detached: true });
  await once(released, "spawn");
  const told = now();
  released.stdin.end("pgid 999999999\ndone\nexit\n");
  await once(released, "exit");
  return { spawnMs, rssKiB, sweepMs, releaseMs: now() - told };
}

async function guardRows() {
  const { dir, cleanup } = tempDir();
  const spawnMs = [];
  const rss = [];
  const sweepMs = [];
  const releaseMs = [];
  const scanMs = [];
  const trueMs = [];
  try {
    for (let i = 0; i < rounds(20); i++) {
      const one = await guardOnce(path.join(dir, ".result.json.reserve"));
      spawnMs.push(one.spawnMs);
      rss.push(one.rssKiB);
      sweepMs.push(one.sweepMs);
      releaseMs.push(one.releaseMs);
      const scanned = now();
      await processesWithToken(randomBytes(16).toString("hex"));
      scanMs.push(now() - scanned);
      const t = now();
      const child = spawn(TRUE_BIN, [], { stdio: "ignore" });
      trueMs.push(now() - t);
      await once(child, "exit");
    }
  } finally {
    cleanup();
  }
  const processes = readdirSync("/proc").filter((name) => /^\d+$/.test(name)).length;
  return row({
    id: "orphan-guard",
    what: "orphan guard (/bin/sh) per run",
    target: "—",
    points: [
      {
        input: "spawn() call (blocks the event loop)",
        value: fmt.ms(median(spawnMs)),
        baseline: fmt.ms(median(trueMs)),
        ratio: fmt.x(median(spawnMs) / median(trueMs)),
      },
      { input: "resident memory", value: `${(median(rss) / 1024).toFixed(1)} MiB`, baseline: "—", ratio: "—" },
      {
        input: `normal end: the wrapper's own look for the run's token (${processes} processes in /proc)`,
        value: fmt.ms(median(scanMs)),
        baseline: "—",
        ratio: "—",
      },
      { input: "normal end: released guard gone", value: fmt.ms(median(releaseMs)), baseline: "—", ratio: "—" },
      {
        input: "wrapper killed: the guard's sweep, nothing to end",
        value: fmt.ms(median(sweepMs)),
        baseline: "—",
        ratio: "—",
      },
    ],
    note: "The guard command of src/wrapper/orphan-guard.ts, started from the bench process as the wrapper starts it (detached, stdin a pipe). Baseline of the spawn: `spawn()` of `true` from the same process (a fork of the same Node). At a normal end the wrapper itself looks for processes carrying the run's token (processesWithToken: every /proc/*/environ read once, while result.json is written), then tells the guard `exit` and waits for it to go; both are on the wrapper's path to its exit. When the wrapper was killed, the guard's sweep (one `grep -l` over /proc/*/environ) runs after the wrapper is gone. The guard's start overlaps the wrapper's first file writes (they run on libuv's threads during the fork), so the start-up row above includes it.",
  });
}

/** writeFileAtomic with and without fsync of the file and its folder, in the system temp dir. */
async function fsyncRow() {
  const { dir, cleanup } = tempDir();
  const points = [];
  try {
    for (const [bytes, label] of [
      [2 * 1024, "2 KiB (a result.json)"],
      [300 * 1024, "300 KiB (a long report)"],
    ]) {
      const text = "x".repeat(bytes);
      const durable = [];
      const quick = [];
      for (let i = 0; i < rounds(30); i++) {
        let t = now();
        await writeFileAtomic(path.join(dir, "durable.json"), text);
        durable.push(now() - t);
        t = now();
        await writeFileAtomic(path.join(dir, "quick.json"), text, { durable: false });
        quick.push(now() - t);
      }
      points.push({
        input: label,
        value: fmt.ms(median(durable)),
        baseline: fmt.ms(median(quick)),
        ratio: `+${fmt.ms(median(durable) - median(quick))}`,
      });
    }
  } finally {
    cleanup();
  }
  return row({
    id: "fsync",
    what: "atomic write with fsync (file + folder) vs without",
    target: "—",
    points,
    note: "src/lib/atomic-file.ts's writeFileAtomic (temp file, rename) with `durable` (the default: fsync the temp file before the rename and the folder after it) against `durable: false`, alternated, in the system temp dir's file system. result.json and the extension's records use the default: a few ms per write buys that a power loss never leaves an empty or missing file where the rename said the new one was.",
  });
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
    points.push({
      input: label,
      value: fmt.ms(value),
      baseline: fmt.ms(baseline),
      ratio: fmt.x(value / baseline),
      pass: value / baseline <= 1.5,
    });
  }
  const rows = [
    row({
      id: "startup",
      what: "wrapper start-up: process start → pi spawned",
      target: "≤ 1.5× `node -e 0`",
      points,
      note: "From the bench's `spawn()` of `node bin/subagent-wrapper meta.json` to the `run_start` record's `ts` (stamped on the child's 'spawn' event; whole ms), with `true` as the pi binary and the extension's artifact set (events, stdout/stderr logs, transcript). Baseline: `spawn()` of `node -e 0` to its exit. The wrapper reads and validates meta.json (its paths with non-blocking checks), then opens the artifacts while it writes the task file and the result.json reserve, starts the orphan guard and spawns pi.",
    }),
  ];
  rows.push(await guardRows());
  rows.push(await fsyncRow());
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
