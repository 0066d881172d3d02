#!/usr/bin/env node
// Reading a realistic pi json stream: the wrapper's PiLineReader (skips deltas by prefix)
// versus the design card's ndjson.parse (split2 + JSON.parse of every line), side by side in
// one run. Each measurement runs in a fresh process so peak RSS is its own. Prints medians.
import { spawnSync } from "node:child_process";
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { median } from "./support.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const MESSAGES = 6;
const DELTAS = 600;
const DELTA_CHARS = 40;

/** pi's stream for MESSAGES answers of DELTAS deltas each: every update repeats the message twice. */
function* piStream() {
  yield JSON.stringify({ type: "session", version: 3, id: "bench", timestamp: "t", cwd: "/" });
  for (let m = 0; m < MESSAGES; m++) {
    let text = "";
    const message = () => ({ role: "assistant", content: [{ type: "text", text }], provider: "fake", model: "fast", stopReason: "stop" });
    yield JSON.stringify({ type: "message_start", message: message() });
    for (let d = 0; d < DELTAS; d++) {
      const delta = `${"lorem ipsum ".repeat(4)}`.slice(0, DELTA_CHARS);
      text += delta;
      yield JSON.stringify({ type: "message_update", assistantMessageEvent: { type: "text_delta", delta, partial: message() }, message: message() });
    }
    yield JSON.stringify({ type: "message_end", message: { ...message(), usage: { input: 1, output: 1, totalTokens: 2 } } });
    yield JSON.stringify({ type: "tool_execution_start", toolCallId: `c${m}`, toolName: "bash", args: { command: "ls" } });
    yield JSON.stringify({ type: "tool_execution_end", toolCallId: `c${m}`, toolName: "bash", result: { content: [] }, isError: false });
    yield JSON.stringify({ type: "turn_end", message: message(), toolResults: [] });
  }
  yield JSON.stringify({ type: "agent_end", messages: [] });
}

/** One long answer streamed as a single huge update line (a child that dumps a big file). */
function* hugeLineStream() {
  const text = "x".repeat(48 * 1024 * 1024);
  yield JSON.stringify({ type: "message_update", message: { role: "assistant", content: [{ type: "text", text }] } });
  yield JSON.stringify({ type: "message_end", message: { role: "assistant", content: [{ type: "text", text: "done" }], stopReason: "stop" } });
}

/** Each measurement reads the stream from a file in 64 KiB chunks, as from a pipe. */
async function measure(kind, file) {
  const { PiLineReader } = await import("../dist/wrapper/line-reader.js");
  const { default: ndjson } = await import("ndjson");
  const input = () => createReadStream(file, { highWaterMark: 65536 });
  let events = 0;
  let bytes = 0;
  const started = process.hrtime.bigint();
  if (kind === "reader") {
    const reader = new PiLineReader({ event: () => events++, garbage: () => {}, raw: () => {} });
    // As the wrapper does: 'data' events straight into the reader.
    await new Promise((resolve, reject) => {
      input()
        .on("data", (chunk) => {
          bytes += chunk.length;
          reader.push(chunk);
        })
        .on("end", () => resolve(reader.end()))
        .on("error", reject);
    });
  } else {
    await new Promise((resolve, reject) => {
      input()
        .on("data", (chunk) => (bytes += chunk.length))
        .pipe(ndjson.parse({ strict: false }))
        .on("data", (event) => {
          if (event.type !== "message_update") events++;
        })
        .on("end", resolve)
        .on("error", reject);
    });
  }
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  return { ms, maxRssMiB: process.resourceUsage().maxRSS / 1024, events, bytes };
}


if (process.argv[2] === "--child") {
  console.log(JSON.stringify(await measure(process.argv[3], process.argv[4])));
} else {
  const self = fileURLToPath(import.meta.url);
  const dir = mkdtempSync(path.join(os.tmpdir(), "psa-bench-"));
  const baseline = spawnSync(process.execPath, ["-e", "import('ndjson').then(()=>import('./dist/wrapper/line-reader.js')).then(()=>console.log(process.resourceUsage().maxRSS/1024))"], { encoding: "utf8", cwd: path.join(path.dirname(self), "..") });
  for (const [label, stream] of [
    [`typical stream: ${MESSAGES} answers × ${DELTAS} deltas`, piStream],
    ["one 48 MiB message_update line", hugeLineStream],
  ]) {
  const file = path.join(dir, "stream.ndjson");
  writeFileSync(file, `${[...stream()].join("\n")}\n`);
  const samples = { reader: [], ndjson: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const kind of round % 2 === 0 ? ["reader", "ndjson"] : ["ndjson", "reader"]) {
      const child = spawnSync(process.execPath, [self, "--child", kind, file], { encoding: "utf8" });
      if (child.status !== 0) throw new Error(child.stderr);
      samples[kind].push(JSON.parse(child.stdout));
    }
  }
  const size = samples.reader[0].bytes / 1024 / 1024;
  console.log(`\n${label}: ${size.toFixed(1)} MiB; ${ROUNDS} rounds, medians`);
  const row = (name, list) => {
    const ms = median(list.map((s) => s.ms));
    const rss = median(list.map((s) => s.maxRssMiB));
    console.log(`${name.padEnd(34)} ${ms.toFixed(1).padStart(8)} ms ${(size / (ms / 1000)).toFixed(0).padStart(6)} MiB/s  peak RSS ${rss.toFixed(0).padStart(4)} MiB  events delivered ${list[0].events}`);
    return { ms, rss };
  };
  const reader = row("PiLineReader (prefix skip)", samples.reader);
  const nd = row("ndjson.parse (parse every line)", samples.ndjson);
  console.log(`→ PiLineReader is ${(nd.ms / reader.ms).toFixed(1)}× as fast; peak RSS ratio ndjson/PiLineReader ${(nd.rss / reader.rss).toFixed(2)}`);
  }
  rmSync(dir, { recursive: true, force: true });
  console.log(`\n(node with both modules loaded, doing nothing: peak RSS ${Number(baseline.stdout).toFixed(0)} MiB)`);
}
