#!/usr/bin/env node
// Limits: how long after the wrapper finds a limit reached (meta.json `limits`, max_turns 1)
// does the child's next model request go out carrying the wrap-up message, next to the delay
// from the same first answer to the next request with no limit. The real pi, on each pi line
// installed, through `subagent-wrapper` (no inboxPath: the wrapper's private inbox), against a
// loopback LLM whose first answer is a quick bash call (`echo`): the harshest case, as the
// wrap-up has only the tool's run to reach pi. The limit's time is the wrapper's `limit`
// record (events.jsonl), the baseline's the first `assistant_text` record; the request's
// arrival is the bench server's clock: one machine, one epoch.
import { mkdirSync, readFileSync, rmSync } from "node:fs";
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

const WRAP_UP = "[LIMIT max_turns]";

function recordTs(eventsFile, type) {
  for (const line of readFileSync(eventsFile, "utf8").split("\n")) {
    if (line.includes(`"type":"${type}"`)) return JSON.parse(line).ts;
  }
  throw new Error(`no ${type} record in ${eventsFile}`);
}

async function measure(line) {
  const state = { requests: [] };
  const llm = await startBenchLlm((body) => {
    const users = body.messages
      .filter((m) => m.role === "user")
      .map((m) => (typeof m.content === "string" ? m.content : m.content.map((p) => p.text).join("")));
    const carries = users.some((text) => text.startsWith(WRAP_UP));
    state.requests.push({ at: now(), carries });
    // Tool calls until the wrap-up arrives (the limited run) or once (the plain run), then the answer.
    if (!carries && state.requests.length < (state.limited ? 10 : 2))
      return { calls: [["bash", { command: "echo ok" }]] };
    return { text: "done: one step; left: none" };
  });
  const { home, env, cleanup } = benchPiHome(llm.url, line);
  const runEnv = { ...env, PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0" };
  const samples = { limited: [], plain: [], later: 0 };
  try {
    for (let round = 0; round < rounds(7); round++) {
      for (const limited of round % 2 ? [false, true] : [true, false]) {
        const dir = path.join(home, `run-${round}-${limited}`);
        mkdirSync(dir, { recursive: true });
        state.limited = limited;
        state.requests = [];
        const meta = writeMeta(dir, {
          task: "run the tool",
          graceMs: 500,
          ...(limited && { limits: { max_turns: 1, grace_turns: 10 } }),
        });
        const run = await runWrapper(meta, { env: runEnv });
        const result = readResult(dir);
        if (result.status !== "completed")
          throw new Error(`${line.label} run ended ${result.status}: ${result.errorMessage ?? run.stderr}`);
        const events = path.join(dir, "out/events.jsonl");
        if (limited) {
          const index = state.requests.findIndex((r) => r.carries);
          if (index < 1 || result.limit?.name !== "max_turns")
            throw new Error(`${line.label}: no request carried the wrap-up (${state.requests.length} requests)`);
          if (index > 1) samples.later += 1;
          samples.limited.push(state.requests[index].at - recordTs(events, "limit"));
        } else {
          samples.plain.push(state.requests[1].at - recordTs(events, "assistant_text"));
        }
        rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    await llm.close();
    cleanup();
  }
  return { limited: median(samples.limited), plain: median(samples.plain), later: samples.later, runs: rounds(7) };
}

export async function run() {
  const points = [];
  for (const line of benchLines()) {
    const { limited, plain, later, runs } = await measure(line);
    points.push({
      input: line.label,
      value: fmt.ms(limited),
      baseline: fmt.ms(plain),
      ratio: `${limited - plain >= 0 ? "+" : ""}${(limited - plain).toFixed(0)} ms${later ? ` (${later}/${runs} a request later)` : ""}`,
      pass: limited <= 300,
      raw: limited,
    });
  }
  return [
    row({
      id: "limits",
      what: "limit reached → the child's next model request carrying the wrap-up message (baseline: the same answer → the next request, no limit)",
      target: "median ≤ 300 ms",
      points,
      note: `The real pi on each installed line, through \`subagent-wrapper\` with \`limits: {max_turns: 1}\` and no \`inboxPath\` (the wrapper's private inbox), against a loopback LLM in the bench process whose first answer is a bash call (\`echo ok\`) and whose later answers call it again until a request carries the wrap-up. Measured: from the wrapper's \`limit\` record (events.jsonl, written as the first answer's \`message_end\` is read) to the arrival of the first request carrying the wrap-up message; baseline: from the first \`assistant_text\` record to the next request in the same run without limits. A wrap-up that missed the request right after the tool (the tool ended before the task extension handed it to pi) arrives in the one after: counted as "a request later". Alternated, medians of ${rounds(7)} runs each.`,
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
