// Shared by the benchmark scripts: a loopback SSE answer, a hermetic pi home, timing, medians.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const PI = path.join(REPO_ROOT, "node_modules/.bin/pi");

export const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** An OpenAI chat-completions SSE body: text, then tool calls, then the finish chunk. */
export function sseBody({ text = "", calls = [] }) {
  const chunk = (delta, finish, usage) =>
    `data: ${JSON.stringify({ id: "bench", object: "chat.completion.chunk", created: 0, model: "fast", choices: [{ index: 0, delta, finish_reason: finish ?? null }], ...(usage && { usage }) })}\n\n`;
  let out = chunk({ role: "assistant", content: text });
  calls.forEach(([name, args], index) => {
    out += chunk({ tool_calls: [{ index, id: `call_${index}`, type: "function", function: { name, arguments: JSON.stringify(args) } }] });
  });
  return `${out}${chunk({}, calls.length ? "tool_calls" : "stop", { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 })}data: [DONE]\n\n`;
}

/** A throwaway pi config pointing at `llmUrl` (provider fake, model fast); `cleanup()` removes it. */
export function benchPiHome(llmUrl) {
  const home = mkdtempSync(path.join(os.tmpdir(), "psa-bench-home-"));
  const agentDir = path.join(home, "agent");
  for (const dir of [agentDir, path.join(home, "tmp"), path.join(home, "trees")]) mkdirSync(dir);
  writeFileSync(
    path.join(agentDir, "models.json"),
    JSON.stringify({ providers: { fake: { baseUrl: llmUrl, api: "openai-completions", apiKey: "x", compat: { supportsDeveloperRole: false, supportsReasoningEffort: false }, models: [{ id: "fast", reasoning: true }] } } }),
  );
  writeFileSync(path.join(agentDir, "settings.json"), JSON.stringify({ defaultProvider: "fake", defaultModel: "fast", quietStartup: true, retry: { enabled: false } }));
  const env = {
    ...process.env,
    HOME: home,
    TMPDIR: path.join(home, "tmp"),
    PI_CODING_AGENT_DIR: agentDir,
    PI_OFFLINE: "1",
    PI_SUBAGENTS_DIR: path.join(home, "trees"),
    PATH: `${path.join(REPO_ROOT, "node_modules/.bin")}${path.delimiter}${process.env.PATH}`,
  };
  return { home, env, cleanup: () => rmSync(home, { recursive: true, force: true }) };
}

/**
 * Wall time of one run in ms. Asynchronous on purpose: the benchmarks' LLM servers live in
 * the same process and must keep answering while the run waits on them.
 */
export function timed(cmd, args, { cwd, env }) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", "ignore", "ignore"] });
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(Number(process.hrtime.bigint() - started) / 1e6);
      else reject(new Error(`${cmd} exited ${code}`));
    });
  });
}
