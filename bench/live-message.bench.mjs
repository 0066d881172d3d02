#!/usr/bin/env node
// Live messages: how long after the child's running tool call ends does its next model
// request go out when that request carries a live message (written into the run's inbox
// while the tool ran), next to the same delay with no message. The real pi, on each pi line
// installed, through `subagent-wrapper` with meta.json `inboxPath`, against a loopback LLM.
// The tool's end is pi's own timestamp on the toolResult message (stdout.log); the request's
// arrival is the bench server's clock: one machine, one epoch.
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
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

const NOTE = "[MESSAGE from /root · task bench · id msg-1]\nskip the legacy/ folder";
const TOOL_MS = 1000;

/** pi's timestamp of the (one) tool result, from the run's stdout.log. */
function toolEndedAt(stdoutLog) {
  for (const line of readFileSync(stdoutLog, "utf8").split("\n")) {
    if (!line.includes('"toolResult"') || !line.startsWith('{"type":"message_end"')) continue;
    return JSON.parse(line).message.timestamp;
  }
  throw new Error("no tool result in stdout.log");
}

async function measure(line) {
  const state = { withMessage: false, inbox: "", requests: [] };
  const llm = await startBenchLlm((body) => {
    const index = state.requests.length;
    const users = body.messages
      .filter((m) => m.role === "user")
      .map((m) => (typeof m.content === "string" ? m.content : m.content.map((p) => p.text).join("")));
    state.requests.push({ at: now(), carries: users.includes(NOTE) });
    if (index === 0) {
      if (state.withMessage) {
        setTimeout(() => {
          const temp = path.join(state.inbox, ".00000001.json.tmp");
          writeFileSync(temp, JSON.stringify({ id: "msg-1", text: NOTE }));
          renameSync(temp, path.join(state.inbox, "00000001.json"));
        }, TOOL_MS / 3);
      }
      return { calls: [["bash", { command: `sleep ${TOOL_MS / 1000}; echo done` }]] };
    }
    return { text: "done" };
  });
  // The line's `pi` and `node` come first on PATH (benchPiHome): the wrapper finds that pi and its version.
  const { home, env, cleanup } = benchPiHome(llm.url, line);
  const runEnv = { ...env, PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0" };
  const samples = { live: [], plain: [] };
  try {
    for (let round = 0; round < rounds(7); round++) {
      for (const withMessage of round % 2 ? [false, true] : [true, false]) {
        const dir = path.join(home, `run-${round}-${withMessage}`);
        state.inbox = path.join(dir, "inbox");
        mkdirSync(state.inbox, { recursive: true });
        state.withMessage = withMessage;
        state.requests = [];
        const meta = writeMeta(dir, {
          task: "run the tool",
          stdoutPath: "out/stdout.log",
          inboxPath: "inbox",
          graceMs: 500,
        });
        const run = await runWrapper(meta, { env: runEnv });
        const result = readResult(dir);
        if (result.status !== "completed")
          throw new Error(`${line.label} run ended ${result.status}: ${result.errorMessage ?? run.stderr}`);
        const next = state.requests[1];
        if (!next || next.carries !== withMessage)
          throw new Error(`${line.label}: the request after the tool ${withMessage ? "lacks" : "carries"} the message`);
        if (state.requests.length !== 2)
          throw new Error(`${line.label}: ${state.requests.length} requests, expected 2`);
        (withMessage ? samples.live : samples.plain).push(next.at - toolEndedAt(path.join(dir, "out/stdout.log")));
        rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    await llm.close();
    cleanup();
  }
  return { live: median(samples.live), plain: median(samples.plain) };
}

export async function run() {
  const points = [];
  for (const line of benchLines()) {
    const { live, plain } = await measure(line);
    points.push({
      input: line.label,
      value: fmt.ms(live),
      baseline: fmt.ms(plain),
      ratio: `${live - plain >= 0 ? "+" : ""}${(live - plain).toFixed(0)} ms`,
      pass: live <= 300,
      raw: live,
    });
  }
  return [
    row({
      id: "live-message",
      what: "live message: the child's tool call ends → its next model request, carrying the message (baseline: no message)",
      target: "median ≤ 300 ms",
      points,
      note: `The real pi on each installed line (0.73.1 on this Node; pi 1.x on the Node 22 from node_modules, or under BENCH_PI1_ROOT), through \`subagent-wrapper\` with \`inboxPath\`, against a loopback LLM in the bench process: the child's first request gets a bash call (\`sleep ${TOOL_MS / 1000}\`), and ${TOOL_MS / 3} ms into it the bench writes one message into the run's inbox (temp file + rename), which the task extension hands to pi as a steering message while the tool runs. Measured: from pi's own timestamp of the tool result (the toolResult \`message_end\` in stdout.log) to the arrival of the child's next request, which must carry the message; baseline: the same run with no message. Alternated, medians of ${rounds(7)} runs each.`,
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
