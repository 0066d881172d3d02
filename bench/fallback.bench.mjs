#!/usr/bin/env node
// Fallback models: how long after the provider's error does the turn's first request to the
// fallback model arrive. The real pi, on each pi line installed, through `subagent-wrapper`
// with meta.json `fallbackModels`, against a loopback LLM whose model `flaky` answers 429: the
// wrapper sees pi's error, pi exits, and a new pi continues the same session on `fast`. pi's
// own retries are off (retry.enabled false, retry.provider.maxRetries 0). Both ends are the
// bench server's clock. Baseline: the same run's first request, from the wrapper's launch.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { benchLines, benchPiHome, fmt, median, now, rounds, row, runWrapper, writeMeta } from "./support.mjs";

/** The loopback LLM: `flaky` answers 429 (its time noted), any other model a short answer. */
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
      res.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = (delta, finish) =>
        `data: ${JSON.stringify({ id: "b", object: "chat.completion.chunk", created: 0, model: body.model, choices: [{ index: 0, delta, finish_reason: finish ?? null }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })}\n\n`;
      res.end(`${chunk({ role: "assistant", content: "done" })}${chunk({}, "stop")}data: [DONE]\n\n`);
    });
  });
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

async function measure(line) {
  const state = { requests: [], errorAt: 0 };
  const llm = await startFlakyLlm(state);
  const { home, env, cleanup } = benchPiHome(llm.url, line);
  configure(env, llm.url);
  const runEnv = { ...env, PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0" };
  const samples = { switch: [], first: [], restart: [] };
  try {
    for (let round = 0; round < rounds(7); round++) {
      const dir = path.join(home, `run-${round}`);
      mkdirSync(dir);
      state.requests = [];
      const meta = writeMeta(dir, {
        task: "say hi",
        requestedModel: "fake/flaky",
        fallbackModels: ["fake/fast"],
        sessionPath: "out/session.jsonl",
        graceMs: 5000,
      });
      const launchedAt = now();
      const run = await runWrapper(meta, { env: runEnv });
      const result = JSON.parse(readFileSync(path.join(dir, "out/result.json"), "utf8"));
      if (result.status !== "completed" || result.attempts?.length !== 1)
        throw new Error(`${line.label} run ended ${result.status}: ${result.errorMessage ?? run.stderr}`);
      const models = state.requests.map((r) => r.model).join(",");
      if (models !== "flaky,fast") throw new Error(`${line.label}: requests ${models}, expected flaky,fast`);
      samples.switch.push(state.requests[1].at - state.errorAt);
      samples.first.push(state.requests[0].at - launchedAt);
      // The wrapper's own part: the error sent → the fallback's pi started (its second run_start).
      const starts = readFileSync(path.join(dir, "out/events.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l))
        .filter((e) => e.type === "run_start");
      samples.restart.push(starts[1].ts - state.errorAt);
      rmSync(dir, { recursive: true, force: true });
    }
  } finally {
    await llm.close();
    cleanup();
  }
  return { switched: median(samples.switch), first: median(samples.first), restart: median(samples.restart) };
}

export async function run() {
  const points = [];
  const restarts = [];
  for (const line of benchLines()) {
    const { switched, first, restart } = await measure(line);
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
  }
  return [
    row({
      id: "fallback",
      what: "fallback model: the provider's 429 is sent → the fallback model's first request arrives (baseline: the wrapper's launch → the first model's first request)",
      target: "median ≤ 1 s",
      points,
      note: `The real pi on each installed line, through \`subagent-wrapper\` with \`fallbackModels\`, against a loopback LLM in the bench process whose model \`flaky\` answers 429 to every request; pi's own retries off (\`retry.enabled\` false, \`retry.provider.maxRetries\` 0). The wrapper reads pi's error, waits for that pi to exit, and starts pi again on the same session with \`--model fake/fast\`: the measure is mostly one pi start-up, which the baseline (the first pi's start-up, from the wrapper's launch) shows. Medians of ${rounds(7)} runs.`,
    }),
    row({
      id: "fallback-restart",
      what: "fallback model, the wrapper's part: the provider's 429 is sent → the fallback's pi is started (baseline: → its first request)",
      target: "median ≤ 1 s",
      points: restarts,
      note: "The same runs as the row above: the second `run_start` of events.jsonl (the wrapper's clock, the machine's epoch) against the bench server's time of the 429. What is left up to the fallback's first request is pi's own start-up.",
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
