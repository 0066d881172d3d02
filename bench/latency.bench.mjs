#!/usr/bin/env node
// Completion latency: the child writes its terminal line (the stream-pi fixture records the
// epoch time right after the write) → result.json appears (seen through inotify). Once with a
// child that exits at once, after streams of growing size; once with a child that lingers,
// for growing graceMs.
import { readFileSync } from "node:fs";
import path from "node:path";
import {
  fmt,
  MiB,
  median,
  rounds,
  row,
  runWrapper,
  STREAM_PI,
  tempDir,
  whenFileAppears,
  writeMeta,
} from "./support.mjs";

async function latency({ streamBytes = 0, graceMs, linger = false }) {
  const { dir, cleanup } = tempDir();
  try {
    const meta = writeMeta(dir, {
      stdoutPath: "out/stdout.log",
      stderrPath: "out/stderr.log",
      transcriptPath: "out/transcript.md",
      ...(graceMs && { graceMs }),
    });
    const mark = path.join(dir, "mark");
    const appeared = whenFileAppears(path.join(dir, "out"), "result.json");
    const run = await runWrapper(meta, {
      piBin: STREAM_PI,
      env: { BENCH_STREAM_BYTES: String(streamBytes), BENCH_MARK_FILE: mark, BENCH_LINGER: linger ? "1" : "0" },
    });
    const result = JSON.parse(readFileSync(path.join(dir, "out/result.json"), "utf8"));
    if (result.status !== "completed")
      throw new Error(`latency run ended ${result.status}: ${result.errorMessage ?? run.stderr}`);
    if (linger !== result.forcedExit) throw new Error(`forcedExit ${result.forcedExit} with linger ${linger}`);
    return (await appeared) - JSON.parse(readFileSync(mark, "utf8")).terminalAt;
  } finally {
    cleanup();
  }
}

export async function run() {
  const completion = [];
  for (const [bytes, n] of [
    [0, rounds(11)],
    [8 * MiB, rounds(7)],
    [64 * MiB, rounds(5)],
  ]) {
    const samples = [];
    for (let i = 0; i < n; i++) samples.push(await latency({ streamBytes: bytes }));
    const value = median(samples);
    completion.push({
      input: `${fmt.mib(bytes)} streamed before it`,
      value: fmt.ms(value),
      baseline: "—",
      ratio: "—",
      pass: value <= 50,
      raw: value,
    });
  }
  const lingering = [];
  for (const graceMs of [200, 500, 1000]) {
    const samples = [];
    for (let i = 0; i < rounds(5); i++) samples.push(await latency({ graceMs, linger: true }));
    const value = median(samples);
    lingering.push({
      input: `graceMs ${graceMs}`,
      value: fmt.ms(value),
      baseline: fmt.ms(graceMs),
      ratio: `+${(value - graceMs).toFixed(0)} ms`,
      pass: value <= graceMs + 100,
      raw: value,
    });
  }
  return [
    row({
      id: "completion",
      what: "completion latency: terminal line written → result.json on disk (child exits at once)",
      target: "median ≤ 50 ms",
      points: completion,
      note: "Child: bench/fixtures/stream-pi.mjs (a synthetic pi stream, then the terminal `message_end`, then exit 0). The wrapper writes events.jsonl, stdout/stderr logs and the transcript as the extension asks. The time is from the child's write of the terminal line to the rename of result.json (inotify in the bench process).",
    }),
    row({
      id: "lingering",
      what: "lingering child: terminal line → result.json",
      target: "≤ graceMs + 100 ms",
      points: lingering,
      note: "Child: the same fixture, which stays alive after its terminal line; the wrapper stops it when graceMs runs out (SIGTERM to its group) and result.json says forcedExit: true.",
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
