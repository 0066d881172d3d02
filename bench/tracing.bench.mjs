#!/usr/bin/env node
import { readFileSync } from "node:fs";
// Tracing's cost to a turn: the same real-pi turn through the wrapper with no OTLP endpoint and
// with one (a loopback receiver in this process that answers at once), alternated in one run.
// With an endpoint the wrapper gives pi a TRACEPARENT, loads and warms the OpenTelemetry SDK
// and its exporter while pi waits on the model, and after result.json builds the turn's spans
// from events.jsonl and sends them over the warm exporter. The start of the child (wrapper
// start → run_start) is measured in the same runs: tracing adds nothing before pi starts.
import http from "node:http";
import path from "node:path";
import {
  benchLines,
  benchPiHome,
  fmt,
  median,
  now,
  rounds,
  row,
  runProcess,
  startBenchLlm,
  tempDir,
  WRAPPER_BIN,
  whenFileAppears,
  writeMeta,
} from "./support.mjs";

async function receiver() {
  let spans = 0;
  const server = http.createServer((req, res) => {
    req.on("data", () => {});
    req.on("end", () => {
      spans += 1;
      res.writeHead(200, { "content-type": "application/x-protobuf" });
      res.end();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    exports: () => spans,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** One wrapper run of `line`'s real pi; wall time and the child's start (wrapper start → run_start). */
async function turn(line, home, env) {
  const { dir, cleanup } = tempDir();
  try {
    const meta = writeMeta(dir, { agentPath: "/root/bench", task: "say hi" });
    const resultAt = whenFileAppears(path.join(dir, "out"), "result.json");
    const started = now();
    const run = await runProcess(line.node, [WRAPPER_BIN, meta], {
      cwd: dir,
      env: { ...home.env, OTEL_EXPORTER_OTLP_ENDPOINT: "", ...env },
    });
    if (run.code !== 0) throw new Error(`the wrapper exited ${run.code}: ${run.stderr.slice(-300)}`);
    const first = JSON.parse(readFileSync(path.join(dir, "out/events.jsonl"), "utf8").split("\n")[0]);
    return { wallMs: run.ms, startMs: first.ts - started, endMs: run.startedAt + run.ms - (await resultAt) };
  } finally {
    cleanup();
  }
}

const MODEL_MS = 500;

export async function run() {
  const collector = await receiver();
  // A model that answers in half a second: the exporter loads while pi waits on it, as with a real one.
  const llm = await startBenchLlm(() => ({ text: "hi", delayMs: MODEL_MS }));
  const lines = benchLines().map((line) => ({
    line,
    home: benchPiHome(llm.url, line),
    off: { wall: [], start: [], end: [] },
    on: { wall: [], start: [], end: [] },
  }));
  try {
    for (let i = 0; i < rounds(8); i++) {
      for (const target of lines) {
        const steps = [
          async () => {
            const a = await turn(target.line, target.home, {});
            target.off.wall.push(a.wallMs);
            target.off.start.push(a.startMs);
            target.off.end.push(a.endMs);
          },
          async () => {
            const b = await turn(target.line, target.home, { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url });
            target.on.wall.push(b.wallMs);
            target.on.start.push(b.startMs);
            target.on.end.push(b.endMs);
          },
        ];
        for (const step of i % 2 ? steps.reverse() : steps) await step();
      }
    }
    const traced = lines.reduce((sum, target) => sum + target.on.wall.length, 0);
    if (collector.exports() < traced) throw new Error("the traced turns did not all reach the receiver");
  } finally {
    await collector.close();
    await llm.close();
    for (const target of lines) target.home.cleanup();
  }
  const point = (input, value, baseline, target) => ({
    input,
    value: fmt.ms(value),
    baseline: fmt.ms(baseline),
    ratio: `${value >= baseline ? "+" : ""}${(value - baseline).toFixed(1)} ms`,
    ...(target !== undefined && { pass: value - baseline <= target }),
    raw: value,
  });
  return lines.map(({ line, off, on }) =>
    row({
      id: `tracing-turn-${line.name}`,
      what: `a turn with tracing on (OTLP endpoint set) vs off, ${line.label}`,
      target: "≤ +20 ms",
      points: [
        point("result.json written → wrapper exit (the parent waits for it)", median(on.end), median(off.end), 20),
        point("child start (wrapper start → run_start)", median(on.start), median(off.start), 20),
        point("whole turn (wrapper start → exit; on a loaded machine mostly noise)", median(on.wall), median(off.wall)),
      ],
      note: `The same one-request turn of the real pi through subagent-wrapper, alternated with and without OTEL_EXPORTER_OTLP_ENDPOINT (a loopback receiver in the bench process), against a loopback model that answers in ${MODEL_MS} ms. On: pi gets a TRACEPARENT; at pi's first event the wrapper starts loading the OpenTelemetry SDK (while pi waits on the model) and warms it — the tracer with a dropped span, the exporter with one empty export request, since a process's first HTTP request is the slow one — and once result.json is written it builds the turn's spans from events.jsonl and sends them as OTLP/HTTP protobuf on that exporter. What tracing adds to a turn is the wait after result.json (the export) and nothing before pi starts; the whole turn is shown too, but its spread on a shared machine is far above 20 ms. Off: nothing of the SDK is loaded (test/wrapper/tracing.test.ts checks it), so a child's start with tracing off is the start-up row's. Medians of 8 runs each.`,
    }),
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
