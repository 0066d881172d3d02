#!/usr/bin/env node
// What a tree buys: N independent tasks, each waiting DELAY_MS on its (loopback, scripted)
// LLM, run (a) as N children of one root through the extension, and (b) one after another as
// plain `pi --mode json` runs — side by side in one run, alternated, medians.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CHILDREN = Number(process.env.BENCH_CHILDREN ?? 3);
const DELAY_MS = Number(process.env.BENCH_DELAY_MS ?? 1500);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const pi = path.join(root, "node_modules/.bin/pi");

const toolMessages = (body) => (body.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content));
const agentOf = (body) => /You are the agent (\/root\/[a-z0-9_/]+) /.exec(JSON.stringify(body.messages?.[0]?.content ?? ""))?.[1];

function answer(body) {
  const agent = agentOf(body);
  if (agent || !body.tools?.some((t) => t.function.name === "spawn_agent")) return { text: "task done", delayMs: DELAY_MS };
  const results = toolMessages(body);
  if (results.length === 0) {
    return { calls: Array.from({ length: CHILDREN }, (_, i) => ["spawn_agent", { task_name: `task_${i}`, fork_turns: "none", message: `do task ${i}` }]) };
  }
  const notices = results.reduce((n, text) => n + (text.match(/"type":"completed"/g)?.length ?? 0), 0);
  return notices < CHILDREN ? { calls: [["wait_agent", { timeout_ms: 60000 }]] } : { text: "all done" };
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const { text = "", calls = [], delayMs = 0 } = answer(JSON.parse(Buffer.concat(chunks).toString("utf8")));
    const chunk = (delta, finish, usage) => `data: ${JSON.stringify({ id: "b", object: "chat.completion.chunk", created: 0, model: "fast", choices: [{ index: 0, delta, finish_reason: finish ?? null }], ...(usage && { usage }) })}\n\n`;
    let out = chunk({ role: "assistant", content: text });
    calls.forEach(([name, args], index) => (out += chunk({ tool_calls: [{ index, id: `c${index}`, type: "function", function: { name, arguments: JSON.stringify(args) } }] })));
    out += chunk({}, calls.length ? "tool_calls" : "stop", { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 });
    setTimeout(() => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(`${out}data: [DONE]\n\n`);
    }, delayMs);
  });
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));

const home = mkdtempSync(path.join(os.tmpdir(), "psa-bench-tree-"));
const agentDir = path.join(home, "agent");
for (const dir of [agentDir, path.join(home, "tmp"), path.join(home, "trees")]) mkdirSync(dir);
writeFileSync(
  path.join(agentDir, "models.json"),
  JSON.stringify({ providers: { fake: { baseUrl: `http://127.0.0.1:${server.address().port}/v1`, api: "openai-completions", apiKey: "x", compat: { supportsDeveloperRole: false, supportsReasoningEffort: false }, models: [{ id: "fast", reasoning: true }] } } }),
);
writeFileSync(path.join(agentDir, "settings.json"), JSON.stringify({ defaultProvider: "fake", defaultModel: "fast", quietStartup: true, retry: { enabled: false } }));
const env = { ...process.env, HOME: home, TMPDIR: path.join(home, "tmp"), PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: "1", PI_SUBAGENTS_DIR: path.join(home, "trees") };

// Asynchronous on purpose: the LLM server lives in this process and must keep answering.
const timed = (args) =>
  new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(pi, args, { cwd: home, env, stdio: ["ignore", "ignore", "ignore"] });
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(Number(process.hrtime.bigint() - started) / 1e6);
      else reject(new Error(`pi exited ${code}`));
    });
  });

const samples = { tree: [], sequential: [] };
try {
  for (let round = 0; round < ROUNDS; round++) {
    samples.tree.push(await timed(["--mode", "json", "-np", "--no-session", "-e", root, "fan out"]));
    let sequential = 0;
    for (let i = 0; i < CHILDREN; i++) sequential += await timed(["--mode", "json", "-np", "--no-session", `do task ${i}`]);
    samples.sequential.push(sequential);
  }
} finally {
  server.close();
  rmSync(home, { recursive: true, force: true });
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const tree = median(samples.tree);
const sequential = median(samples.sequential);
console.log(`${CHILDREN} tasks, each waiting ${DELAY_MS} ms on a loopback LLM; ${ROUNDS} rounds, medians`);
console.log(`one after another (${CHILDREN} × pi --mode json)        ${sequential.toFixed(0).padStart(6)} ms`);
console.log(`as ${CHILDREN} children of one root (extension)         ${tree.toFixed(0).padStart(6)} ms   (root included)`);
console.log(`→ the tree finishes in ${(tree / sequential).toFixed(2)}× the time (${(sequential / tree).toFixed(1)}× faster)`);
