#!/usr/bin/env node
// Fallback models: how long after the provider's error does the turn's first request to the
// fallback model arrive. The real pi, on each pi line installed, through `subagent-wrapper`
// with meta.json `fallbackModels`, against a loopback LLM whose model `flaky` answers 429: the
// wrapper sees pi's error, pi exits, and a new pi continues the same session on `fast`. pi's
// own retries are off (retry.enabled false, retry.provider.maxRetries 0). Both ends are the
// bench server's clock. Baseline: the same run's first request, from the wrapper's launch.
// The wrapper starts the fallback model's pi beside the first as a warm standby
// (src/wrapper/standby.ts); each round also runs the first model without fallbacks (no
// standby: what the standby costs the first pi's start-up) and one whose model `slow` answers
// after SLOW_MS (the standby's resident memory while it waits, sampled from /proc).
import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import {
  benchLines,
  benchPiHome,
  fmt,
  median,
  now,
  readEvents,
  readResult,
  rounds,
  row,
  runWrapper,
  writeMeta,
} from "./support.mjs";

/** How long model `slow` takes to answer: the standby waits that long, fully loaded. */
const SLOW_MS = 4000;

/** The loopback LLM: `flaky` answers 429 (its time noted), `slow` a short answer after SLOW_MS, any other model at once. */
async function startFlakyLlm(state) {
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
      state.requests.push({ at: now(), model: body.model });
      if (body.model === "flaky") {
        res.writeHead(429, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "Rate limit reached", type: "rate_limit_error" } }));
        state.errorAt = now();
        return;
      }
      if (body.model === "slow") {
        setTimeout(() => {
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.end(answer(body.model));
        }, SLOW_MS);
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(answer(body.model));
    });
  });
  const answer = (model) => {
    const chunk = (delta, finish) =>
      `data: ${JSON.stringify({ id: "b", object: "chat.completion.chunk", created: 0, model, choices: [{ index: 0, delta, finish_reason: finish ?? null }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })}\n\n`;
    return `${chunk({ role: "assistant", content: "done" })}${chunk({}, "stop")}data: [DONE]\n\n`;
  };
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** The bench home's pi config, with a second model and pi's provider retries off too. */
function configure(env, url) {
  const agentDir = env.PI_CODING_AGENT_DIR;
  const provider = {
    baseUrl: url,
    api: "openai-completions",
    apiKey: "x",
    compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
    models: [
      { id: "fast", reasoning: true },
      { id: "flaky", reasoning: true },
      { id: "slow", reasoning: true },
    ],
  };
  writeFileSync(path.join(agentDir, "models.json"), JSON.stringify({ providers: { fake: provider } }));
  writeFileSync(
    path.join(agentDir, "settings.json"),
    JSON.stringify({
      defaultProvider: "fake",
      defaultModel: "fast",
      quietStartup: true,
      retry: { enabled: false, provider: { maxRetries: 0 } },
    }),
  );
}

/** The resident memory (bytes) of the run's standby: the process with `mark` whose environment loads the gate. */
function standbyRss(mark) {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const environ = readFileSync(`/proc/${entry}/environ`, "utf8");
      if (!environ.includes(`\0${mark}\0`) || !environ.includes("standby-gate.js")) continue;
      const kib = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${entry}/status`, "utf8"))?.[1];
      if (kib) return Number(kib) * 1024;
    } catch {
      // gone, or not ours
    }
  }
  return undefined;
}

/** One run through the wrapper: its result.json and events.jsonl, after checking it completed. */
async function oneRun(line, home, name, fields, env) {
  const dir = path.join(home, name);
  mkdirSync(dir);
  const meta = writeMeta(dir, { task: "say hi", sessionPath: "out/session.jsonl", graceMs: 5000, ...fields });
  const launchedAt = now();
  const run = await runWrapper(meta, { env });
  const result = readResult(dir);
  const events = readEvents(dir);
  rmSync(dir, { recursive: true, force: true });
  if (result.status !== "completed")
    throw new Error(`${line.label} ${name} ended ${result.status}: ${result.errorMessage ?? run.stderr}`);
  return { launchedAt, result, events };
}

async function measure(line) {
  const state = { requests: [], errorAt: 0 };
  const llm = await startFlakyLlm(state);
  const { home, env, cleanup } = benchPiHome(llm.url, line);
  configure(env, llm.url);
  const runEnv = { ...env, PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0" };
  const samples = { switch: [], first: [], restart: [], alone: [], rss: [] };
  try {
    for (let round = 0; round < rounds(7); round++) {
      state.requests = [];
      const fallbackFields = { requestedModel: "fake/flaky", fallbackModels: ["fake/fast"] };
      const { launchedAt, result, events } = await oneRun(line, home, `run-${round}`, fallbackFields, runEnv);
      if (result.attempts?.length !== 1)
        throw new Error(`${line.label}: ${result.attempts?.length} attempts, expected 1`);
      const models = state.requests.map((r) => r.model).join(",");
      if (models !== "flaky,fast") throw new Error(`${line.label}: requests ${models}, expected flaky,fast`);
      samples.switch.push(state.requests[1].at - state.errorAt);
      samples.first.push(state.requests[0].at - launchedAt);
      // The wrapper's own part: the error sent → the fallback's pi let through or started (its second run_start).
      const starts = events.filter((e) => e.type === "run_start");
      samples.restart.push(starts[1].ts - state.errorAt);

      // The same first request without fallbacks, so without a standby beside the first pi.
      state.requests = [];
      const alone = await oneRun(line, home, `alone-${round}`, { requestedModel: "fake/fast" }, runEnv);
      samples.alone.push(state.requests[0].at - alone.launchedAt);

      // The standby's memory while it waits, loaded: a first model that takes SLOW_MS to answer.
      const mark = `BENCH_STANDBY_MARK=${randomBytes(6).toString("hex")}`;
      const [markName, markValue] = mark.split("=");
      let peak = 0;
      const poll = setInterval(() => (peak = Math.max(peak, standbyRss(mark) ?? 0)), 100);
      await oneRun(
        line,
        home,
        `slow-${round}`,
        { requestedModel: "fake/slow", fallbackModels: ["fake/fast"] },
        {
          ...runEnv,
          [markName]: markValue,
        },
      ).finally(() => clearInterval(poll));
      if (peak > 0) samples.rss.push(peak);
    }
  } finally {
    await llm.close();
    cleanup();
  }
  return {
    switched: median(samples.switch),
    first: median(samples.first),
    restart: median(samples.restart),
    alone: median(samples.alone),
    rss: samples.rss.length > 0 ? median(samples.rss) : undefined,
  };
}

export async function run() {
  const points = [];
  const restarts = [];
  const costs = [];
  for (const line of benchLines()) {
    const { switched, first, restart, alone, rss } = await measure(line);
    restarts.push({
      input: line.label,
      value: fmt.ms(restart),
      baseline: fmt.ms(switched),
      ratio: fmt.x(restart / switched),
      pass: restart <= 1000,
      raw: restart,
    });
    points.push({
      input: line.label,
      value: fmt.ms(switched),
      baseline: fmt.ms(first),
      ratio: fmt.x(switched / first),
      pass: switched <= 1000,
      raw: switched,
    });
    costs.push(
      `${line.label}: ${fmt.ms(first)} with the standby, ${fmt.ms(alone)} without fallbacks; the waiting standby ${rss === undefined ? "not seen" : fmt.mib(rss)}`,
    );
  }
  return [
    row({
      id: "fallback",
      what: "fallback model: the provider's 429 is sent → the fallback model's first request arrives (baseline: the wrapper's launch → the first model's first request)",
      target: "median ≤ 1 s",
      points,
      note: `The real pi on each installed line, through \`subagent-wrapper\` with \`fallbackModels\`, against a loopback LLM in the bench process whose model \`flaky\` answers 429 to every request; pi's own retries off (\`retry.enabled\` false, \`retry.provider.maxRetries\` 0). Beside the first pi the wrapper starts a warm standby for \`fake/fast\` (src/wrapper/standby.ts: a pi held by a gate before its entry point runs, its module graph loaded, niced to 10 with its autogroup until the first pi's first output). It reads pi's error, waits for that pi to exit, writes the continue prompt and lets the standby through, which opens the session and sends its request without pi's module loading; the baseline is a whole pi start-up (the first pi's, from the wrapper's launch). Before the standby, the switch was a cold start: 1 329 ms on pi 0.73.1 / Node 20 and 384 ms on pi 1.6.0 / Node 22 on a quiet machine. What the standby costs, from runs in the same rounds — the first model's first request from the launch with the standby beside it and in a run without fallbacks (no standby), and the standby's resident memory while it waits (a first model that answers after ${SLOW_MS / 1000} s; the peak /proc VmRSS): ${costs.join("; ")}. Medians of ${rounds(7)} runs.`,
    }),
    row({
      id: "fallback-restart",
      what: "fallback model, the wrapper's part: the provider's 429 is sent → the fallback's pi is started (baseline: → its first request)",
      target: "median ≤ 1 s",
      points: restarts,
      note: "The same runs as the row above: the second `run_start` of events.jsonl (the wrapper's clock, the machine's epoch: written when the standby is let through) against the bench server's time of the 429. It is mostly the failed pi's own exit, which the wrapper waits for so that the session file is complete; what is left up to the fallback's first request is pi's own work from its main on.",
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
