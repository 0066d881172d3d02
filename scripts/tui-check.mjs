#!/usr/bin/env node
// Checks the live tree display in a real terminal: runs the real pi (devDependency)
// interactively inside a private tmux server, with this package's extension, against a
// scripted loopback LLM (no API key, no network). The root spawns two children, one of which
// spawns a grandchild; they work for a few seconds. The pane is captured while they run and
// again at the end, and this asserts that the status line and the widget show the tree:
// every agent's nickname, status, model and elapsed time, then usage and cost.
//
//   node scripts/tui-check.mjs          prints both captures; exit 0 = display as expected,
//                                       1 = it was not, 2 = set-up problem, 3 = no tmux
// Environment: TMUX_BIN (default: tmux on PATH), TUI_CHECK_TIMEOUT_MS (default 90000).
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startLoopbackLlm } from "../examples/tree-demo/scripted-llm.mjs";
import { ensureLineBin, lineName, linePath, resolveLine } from "./pi-lines.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
// The current pi (1.x) on the Node 22 from node_modules; PI_SUBAGENTS_TEST_PI_LINE=0.73 for pi 0.73.1.
let line;
try {
  line = resolveLine(root, lineName());
  ensureLineBin(line);
} catch (err) {
  console.error(`tui-check: ${err.message}`);
  process.exit(2);
}
const pi = line.piCli;
const timeoutMs = Number(process.env.TUI_CHECK_TIMEOUT_MS) || 90_000;
const MODEL = "loop/fast";
const DONE_TEXT = "TUI CHECK DONE";

function findTmux() {
  const candidates = process.env.TMUX_BIN ? [process.env.TMUX_BIN] : (process.env.PATH ?? "").split(path.delimiter).map((dir) => path.join(dir, "tmux"));
  return candidates.find((file) => file && existsSync(file));
}

const tmuxBin = findTmux();
if (!tmuxBin) {
  console.error("tui-check: tmux not found (install it, or set TMUX_BIN)");
  process.exit(3);
}
if (!existsSync(pi) || !existsSync(path.join(root, "dist", "extension", "index.js"))) {
  console.error('tui-check: run "npm install" first (it installs pi and builds dist/)');
  process.exit(2);
}

const results = (body) =>
  (body.messages ?? [])
    .filter((m) => m.role === "tool")
    .map((m) => {
      try {
        return JSON.parse(typeof m.content === "string" ? m.content : JSON.stringify(m.content));
      } catch {
        return {};
      }
    });
const noticeCount = (body) => results(body).reduce((n, r) => n + (r.notices?.length ?? 0), 0);
/** Waits for `count` notices, then answers `text`. */
const waitThen = (count, text) => (body) => (noticeCount(body) < count ? { calls: [["wait_agent", { timeout_ms: 60_000 }]] } : { text });

const SCRIPT = {
  "/root": [
    () => ({
      text: "Starting two workers.",
      calls: [
        ["spawn_agent", { task_name: "alpha", fork_turns: "none", message: "Work for a few seconds, then report." }],
        ["spawn_agent", { task_name: "beta", fork_turns: "none", message: "Have a helper work for a few seconds, then report." }],
      ],
    }),
    waitThen(2, DONE_TEXT),
  ],
  "/root/alpha": [() => ({ calls: [["bash", { command: "sleep 7" }]] }), () => ({ text: "alpha finished" })],
  "/root/beta": [
    () => ({ calls: [["spawn_agent", { task_name: "gamma", fork_turns: "none", message: "Work for a few seconds, then report." }]] }),
    waitThen(1, "beta finished with gamma's help"),
  ],
  "/root/beta/gamma": [() => ({ calls: [["bash", { command: "sleep 6" }]] }), () => ({ text: "gamma finished" })],
};

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const home = mkdtempSync(path.join(os.tmpdir(), "pi-tui-check-"));
const agentDir = path.join(home, "agent");
const treesDir = path.join(home, "trees");
const socket = path.join(home, "tmux.sock");
for (const dir of [agentDir, treesDir, path.join(home, "tmp"), path.join(home, "work")]) mkdirSync(dir);

const llm = await startLoopbackLlm(SCRIPT);
const [provider, modelId] = MODEL.split("/");
writeFileSync(
  path.join(agentDir, "models.json"),
  JSON.stringify({
    providers: {
      [provider]: {
        baseUrl: llm.url,
        api: "openai-completions",
        apiKey: "not-needed",
        compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
        // Prices per million tokens, so the display has a cost to show.
        models: [{ id: modelId, reasoning: true, contextWindow: 128000, cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } }],
      },
    },
  }),
);
writeFileSync(
  path.join(agentDir, "settings.json"),
  JSON.stringify({ defaultProvider: provider, defaultModel: modelId, quietStartup: true, enableInstallTelemetry: false, retry: { enabled: false } }),
);

const marker = `PI_CODING_AGENT_DIR=${agentDir}`;
const env = {
  // pi, and the wrapper's children, start with `#!/usr/bin/env node`: this line's node first.
  PATH: linePath(line, process.env.PATH),
  LANG: "C.UTF-8",
  TERM: "xterm-256color",
  HOME: path.join(home, "work"),
  TMPDIR: path.join(home, "tmp"),
  PI_CODING_AGENT_DIR: agentDir,
  PI_OFFLINE: "1",
  PI_SKIP_VERSION_CHECK: "1",
  PI_TELEMETRY: "0",
  PI_SUBAGENTS_DIR: treesDir,
};

const tmux = (...args) => spawnSync(tmuxBin, ["-S", socket, ...args], { env, encoding: "utf8" });
const capture = () => tmux("capture-pane", "-p", "-t", "check").stdout ?? "";

/** Every agent record of the tree, in spawn order (the truth the display must show). */
function records() {
  const out = [];
  const walk = (dir) => {
    for (const entry of existsSync(dir) ? readdirSync(dir, { withFileTypes: true }) : []) {
      if (!entry.isDirectory() || ["runs", "reports", "inbox"].includes(entry.name)) continue;
      const file = path.join(dir, entry.name, "agent.json");
      if (existsSync(file)) {
        try {
          out.push(JSON.parse(readFileSync(file, "utf8")));
        } catch {
          // being replaced right now
        }
      }
      walk(path.join(dir, entry.name));
    }
  };
  for (const tree of existsSync(treesDir) ? readdirSync(treesDir) : []) walk(path.join(treesDir, tree, "agents"));
  return out.sort((a, b) => a.spawnSeq - b.spawnSeq);
}

/** The widget line of one agent (`├─ alpha (Euclid) · running · loop/fast · 3s · …`). */
const lineOf = (pane, record) => pane.split("\n").find((line) => line.includes(`${record.taskName} (${record.nickname})`));

/** Processes of this check still alive (their environment holds our marker). Linux /proc only. */
function survivors() {
  if (!existsSync("/proc")) return [];
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name) && Number(name) !== process.pid)
    .filter((name) => {
      try {
        if (/\) Z /.test(readFileSync(`/proc/${name}/stat`, "utf8"))) return false;
        return readFileSync(`/proc/${name}/environ`, "utf8").split("\0").includes(marker);
      } catch {
        return false;
      }
    })
    .map(Number);
}

const failures = [];
let runningPane = "";
let finalPane = "";
let piPid;
try {
  const started = tmux(
    "new-session",
    "-d",
    "-s",
    "check",
    "-x",
    "150",
    "-y",
    "45",
    "-c",
    path.join(home, "work"),
    pi,
    "--session",
    path.join(home, "root-session.jsonl"),
    "-e",
    root,
    "Start the workers and wait for them.",
  );
  if (started.status !== 0) throw new Error(`tmux new-session failed: ${started.stderr.trim()}`);
  piPid = Number(tmux("list-panes", "-t", "check", "-F", "#{pane_pid}").stdout.trim());

  // 1. While the children work: every running agent shows with nickname, status, model, elapsed.
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !runningPane) {
    await sleep(300);
    const pane = capture();
    const running = records().filter((r) => r.status === "running");
    if (running.length < 2) continue;
    const lines = running.map((r) => lineOf(pane, r));
    const complete = lines.every((line, i) => line?.includes("running") && line.includes(running[i].model) && /· [1-9]\d*s ·/.test(line));
    if (complete && /agents: \d+ running/.test(pane) && pane.includes("subagents ·")) runningPane = pane;
  }
  if (!runningPane) failures.push("never saw two running agents in the widget with nickname, status, model and elapsed time");

  // 2. At the end: the whole tree completed, with usage and cost, and the root's answer.
  while (Date.now() < deadline && !finalPane) {
    await sleep(400);
    const pane = capture();
    const all = records();
    if (!pane.includes(DONE_TEXT) || all.length < 3 || all.some((r) => r.status !== "completed")) continue;
    if (all.every((r) => /completed · .* tok · \$\d+\.\d{4}/.test(lineOf(pane, r) ?? ""))) finalPane = pane;
  }
  if (!finalPane) failures.push("never saw the final tree (3 agents completed, with tokens and cost) and the root's answer");
  if (finalPane) {
    const beta = lineOf(
      finalPane,
      records().find((r) => r.taskName === "beta"),
    );
    if (!/subtree .* tok · \$/.test(beta ?? "")) failures.push(`beta's line shows no subtree roll-up: ${beta}`);
    if (!/agents: 3 done · .* tok · \$/.test(finalPane)) failures.push("the status line does not show 3 done agents with usage and cost");
  }
} catch (err) {
  failures.push(err instanceof Error ? err.message : String(err));
} finally {
  // Quit pi as a user would (ctrl+d on an empty editor), then end what is left by pid.
  tmux("send-keys", "-t", "check", "C-d");
  for (let i = 0; i < 50 && piPid && survivors().includes(piPid); i++) await sleep(200);
  if (piPid && survivors().includes(piPid)) {
    failures.push("pi did not exit on ctrl+d within 10 s");
    try {
      process.kill(piPid, "SIGTERM");
    } catch {
      // gone
    }
  }
  tmux("kill-server");
  await llm.close();
}
for (let i = 0; i < 50 && survivors().length > 0; i++) await sleep(200);
const left = survivors();
if (left.length > 0) {
  failures.push(`processes left behind: ${left.join(", ")}`);
  for (const pid of left) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
}
rmSync(home, { recursive: true, force: true });

console.log("--- pane while the children work ---");
console.log(runningPane.trimEnd() || "(not captured)");
console.log("--- pane at the end ---");
console.log(finalPane.trimEnd() || "(not captured)");
if (failures.length > 0) {
  for (const failure of failures) console.error(`tui-check: FAIL ${failure}`);
  process.exit(1);
}
console.log("tui-check: OK — status line and widget show nickname, status, model, elapsed, usage and cost");
