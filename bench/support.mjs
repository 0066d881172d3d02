// Shared by the benchmarks: timing, medians, a loopback SSE answer, a hermetic pi home, and
// running subagent-wrapper on a meta.json.

import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, watch, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ensureLineBin, LINE_NAMES, linePath, nodeVersion, resolveLine } from "../scripts/pi-lines.mjs";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const WRAPPER_BIN = path.join(REPO_ROOT, "bin/subagent-wrapper");
export const STREAM_PI = path.join(REPO_ROOT, "bench/fixtures/stream-pi.mjs");
export const FAKE_PI = path.join(REPO_ROOT, "fixtures/fake-pi/pi");
export const MiB = 1024 * 1024;

export const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** Wall-clock epoch time in fractional ms, comparable across processes on one machine. */
export const now = () => performance.timeOrigin + performance.now();

/** Rounds from BENCH_ROUNDS (a factor applied to each bench's default), at least 1. */
export const rounds = (fallback) => Math.max(1, Math.round(fallback * Number(process.env.BENCH_ROUNDS_FACTOR ?? 1)));

export function tempDir(prefix = "psa-bench-") {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Writes a meta.json in `dir` (paths relative to it) and returns its path. */
export function writeMeta(dir, fields, name = "meta.json") {
  const meta = path.join(dir, name);
  writeFileSync(
    meta,
    JSON.stringify({
      runId: "bench",
      task: "bench",
      cwd: dir,
      resultPath: "out/result.json",
      eventsPath: "out/events.jsonl",
      ...fields,
    }),
  );
  return meta;
}

/** The result.json of a run whose meta.json writeMeta wrote in `dir`. */
export function readResult(dir) {
  return JSON.parse(readFileSync(path.join(dir, "out/result.json"), "utf8"));
}

/** The events.jsonl records of a run whose meta.json writeMeta wrote in `dir`. */
export function readEvents(dir) {
  return readFileSync(path.join(dir, "out/events.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
}

/**
 * Resolves with the epoch time at which `dir/name` appears (it is renamed into place), using
 * inotify rather than polling. Call before starting the run.
 */
export function whenFileAppears(dir, name) {
  mkdirSync(dir, { recursive: true });
  return new Promise((resolve) => {
    const watcher = watch(dir, (_event, file) => {
      if (file === name && existsSync(path.join(dir, name))) {
        const at = now();
        watcher.close();
        resolve(at);
      }
    });
  });
}

/**
 * Runs a process to its end: `{ code, signal, ms, stderr }`. Killed after `timeoutMs`. `sample`,
 * when given, is called with the process's pid every 20 ms while it runs (memory, CPU time).
 */
export function runProcess(cmd, args, { cwd, env, timeoutMs = 300_000, stdout = "ignore", sample } = {}) {
  return new Promise((resolve, reject) => {
    const started = now();
    const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", stdout, "pipe"] });
    let stderr = "";
    let out = "";
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.stdout?.on("data", (chunk) => (out += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    const sampler = sample && setInterval(() => sample(child.pid), 20);
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      clearInterval(sampler);
      resolve({ code, signal, ms: now() - started, stderr, stdout: out, startedAt: started });
    });
  });
}

/** subagent-wrapper on `meta` with `PI_SUBAGENTS_PI_BIN=piBin`; `nodeArgs` go before the script. */
export function runWrapper(meta, { piBin, env = {}, nodeArgs = [], cwd } = {}) {
  return runProcess(process.execPath, [...nodeArgs, WRAPPER_BIN, meta], {
    cwd: cwd ?? path.dirname(meta),
    env: { ...process.env, ...(piBin && { PI_SUBAGENTS_PI_BIN: piBin }), ...env },
  });
}

/** An OpenAI chat-completions SSE body: text (in `deltas` pieces), then tool calls, then the finish chunk. */
export function sseBody({ text = "", calls = [], deltas = 1 }) {
  const chunk = (delta, finish, usage) =>
    `data: ${JSON.stringify({ id: "bench", object: "chat.completion.chunk", created: 0, model: "fast", choices: [{ index: 0, delta, finish_reason: finish ?? null }], ...(usage && { usage }) })}\n\n`;
  let out = chunk({ role: "assistant", content: "" });
  const size = Math.max(1, Math.ceil(text.length / deltas));
  for (let at = 0; at < text.length; at += size) out += chunk({ content: text.slice(at, at + size) });
  calls.forEach(([name, args], index) => {
    out += chunk({
      tool_calls: [
        { index, id: `call_${index}`, type: "function", function: { name, arguments: JSON.stringify(args) } },
      ],
    });
  });
  return `${out}${chunk({}, calls.length ? "tool_calls" : "stop", { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 })}data: [DONE]\n\n`;
}

/**
 * A loopback OpenAI-compatible LLM for the benches: each request's parsed body goes to
 * `answer(body)`, which returns sseBody's fields plus an optional `delayMs` before replying.
 * Resolves with its `/v1` url and `close()`. `host`: where it listens (a far host in a network
 * namespace reaches only the veth's address).
 */
export async function startBenchLlm(answer, host = "127.0.0.1") {
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const { delayMs = 0, ...body } = answer(JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}"));
      setTimeout(() => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(sseBody(body));
      }, delayMs);
    });
  });
  await new Promise((resolve) => server.listen(0, host, resolve));
  return {
    url: `http://${host}:${server.address().port}/v1`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/**
 * Both pi lines (scripts/pi-lines.mjs), current first, each with a `label` ("pi 1.6.0 on Node
 * 22.23.5"): the real-pi benches measure each row on both, side by side in one run.
 */
export function benchLines() {
  // BENCH_LINES=current (or 0.73) measures one line only: a quicker look while working on a row.
  const only = process.env.BENCH_LINES?.split(",").filter(Boolean);
  return LINE_NAMES.filter((name) => !only || only.includes(name)).map((name) => {
    const line = resolveLine(REPO_ROOT, name);
    ensureLineBin(line);
    return { ...line, label: `pi ${line.piVersion} on Node ${nodeVersion(line.node).replace(/^v/, "")}` };
  });
}

/**
 * A throwaway pi config pointing at `llmUrl` (provider fake, model fast); `cleanup()` removes it.
 * `line`'s `node` and `pi` come first on PATH: pi and the processes it starts run on that line.
 */
export function benchPiHome(llmUrl, line) {
  const home = mkdtempSync(path.join(os.tmpdir(), "psa-bench-home-"));
  const agentDir = path.join(home, "agent");
  for (const dir of [agentDir, path.join(home, "tmp"), path.join(home, "trees")]) mkdirSync(dir);
  writeFileSync(
    path.join(agentDir, "models.json"),
    JSON.stringify({
      providers: {
        fake: {
          baseUrl: llmUrl,
          api: "openai-completions",
          apiKey: "x",
          compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
          models: [{ id: "fast", reasoning: true }],
        },
      },
    }),
  );
  writeFileSync(
    path.join(agentDir, "settings.json"),
    JSON.stringify({ defaultProvider: "fake", defaultModel: "fast", quietStartup: true, retry: { enabled: false } }),
  );
  const env = {
    ...process.env,
    HOME: home,
    TMPDIR: path.join(home, "tmp"),
    PI_CODING_AGENT_DIR: agentDir,
    PI_OFFLINE: "1",
    PI_SUBAGENTS_DIR: path.join(home, "trees"),
    PATH: linePath(line, process.env.PATH),
  };
  return { home, env, cleanup: () => rmSync(home, { recursive: true, force: true }) };
}

/**
 * Wall time of one run in ms (the process must exit 0). Asynchronous on purpose: the
 * benchmarks' LLM servers live in the same process and must keep answering meanwhile.
 */
export async function timed(cmd, args, { cwd, env }) {
  const run = await runProcess(cmd, args, { cwd, env, timeoutMs: 120_000 });
  if (run.code !== 0) throw new Error(`${cmd} exited ${run.code}: ${run.stderr.slice(-500)}`);
  return run.ms;
}

/** Formatting for the tables. */
export const fmt = {
  ms: (v) => `${v.toFixed(v < 10 ? 1 : 0)} ms`,
  s: (v) => `${(v / 1000).toFixed(2)} s`,
  mib: (v) => `${(v / MiB).toFixed(v < 10 * MiB ? 1 : 0)} MiB`,
  rate: (v) => `${(v / MiB).toFixed(0)} MiB/s`,
  pct: (v) => `${(v * 100).toFixed(v < 0.01 ? 3 : 2)} %`,
  x: (v) => `${v.toFixed(2)}×`,
  chars: (v) => `${Math.round(v)} chars`,
};

/** One row of the suite's table: a measured figure at several input sizes. */
export function row({ id, what, measured, baseline, target, points, note }) {
  return { id, what, measured, baseline, target, points, note };
}
