#!/usr/bin/env node
// What the wrapper costs on top of pi: the same trivial task run by the real pi directly and
// through `subagent-wrapper`, alternated, against a loopback LLM. Prints medians.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

const server = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    const chunk = (delta, finish, usage) =>
      `data: ${JSON.stringify({ id: "b", object: "chat.completion.chunk", created: 0, model: "fast", choices: [{ index: 0, delta, finish_reason: finish }], ...(usage && { usage }) })}\n\n`;
    res.end(`${chunk({ role: "assistant", content: "hi" })}${chunk({}, "stop", { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 })}data: [DONE]\n\n`);
  });
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const port = server.address().port;

const home = mkdtempSync(path.join(os.tmpdir(), "psa-bench-home-"));
const agentDir = path.join(home, "agent");
mkdirSync(agentDir);
mkdirSync(path.join(home, "tmp"));
writeFileSync(
  path.join(agentDir, "models.json"),
  JSON.stringify({ providers: { fake: { baseUrl: `http://127.0.0.1:${port}/v1`, api: "openai-completions", apiKey: "x", compat: { supportsDeveloperRole: false, supportsReasoningEffort: false }, models: [{ id: "fast" }] } } }),
);
writeFileSync(path.join(agentDir, "settings.json"), JSON.stringify({ defaultProvider: "fake", defaultModel: "fast", quietStartup: true, retry: { enabled: false } }));
const meta = path.join(home, "meta.json");
writeFileSync(meta, JSON.stringify({ runId: "bench", task: "say hi", cwd: home, resultPath: "out/result.json", eventsPath: "out/events.jsonl" }));
const env = { ...process.env, HOME: home, TMPDIR: path.join(home, "tmp"), PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: "1", PATH: `${path.join(root, "node_modules/.bin")}${path.delimiter}${process.env.PATH}` };

// Asynchronous on purpose: the LLM server lives in this process and must keep answering.
const timed = (cmd, args) =>
  new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(cmd, args, { cwd: home, env, stdio: ["ignore", "ignore", "ignore"] });
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(Number(process.hrtime.bigint() - started) / 1e6);
      else reject(new Error(`${cmd} exited ${code}`));
    });
  });
const samples = { pi: [], wrapper: [] };
try {
  for (let round = 0; round < ROUNDS; round++) {
    samples.pi.push(await timed(path.join(root, "node_modules/.bin/pi"), ["--mode", "json", "-np", "--no-session", "say hi"]));
    samples.wrapper.push(await timed(process.execPath, [path.join(root, "bin/subagent-wrapper"), meta]));
  }
} finally {
  server.close();
  rmSync(home, { recursive: true, force: true });
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const pi = median(samples.pi);
const wrapper = median(samples.wrapper);
console.log(`trivial task against a loopback LLM, ${ROUNDS} rounds alternated, medians`);
console.log(`pi --mode json directly        ${pi.toFixed(0).padStart(6)} ms`);
console.log(`subagent-wrapper meta.json     ${wrapper.toFixed(0).padStart(6)} ms`);
console.log(`→ wrapper overhead ${(wrapper - pi).toFixed(0)} ms (${(wrapper / pi).toFixed(2)}× pi alone), result.json and events.jsonl included`);
