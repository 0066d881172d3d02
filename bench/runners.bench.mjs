#!/usr/bin/env node
// Runners (docs/runners.md), two rows:
// - spawn → the child's first model request, `runner: "box"` (a sandbox: bwrap, the runner
//   protocol, the workspace as a bundle) against `isolation: "worktree"` on the same dirty
//   10 000-file repository, alternated round by round, medians (target: at most +1 s);
// - a live message's delay through `serve`: the child's tool call ends → its next model
//   request carrying the message, written into the local run's inbox while the tool ran
//   (the local side forwards it as a `message` frame, the far side's task extension hands it
//   to pi), against the same run with no message (target: median ≤ 300 ms). Both ends are
//   times of this process: the tool's command ends by posting a mark to the bench's server.
// The real pi (current line) and extension, a loopback LLM. Needs bwrap: without it, the rows
// say so and measure nothing.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { agentOf, dirtyRepository, gitEnv, toolCount } from "./isolation-spawn.bench.mjs";
import {
  benchLines,
  benchPiHome,
  fmt,
  median,
  now,
  REPO_ROOT,
  rounds,
  row,
  runProcess,
  runWrapper,
  startBenchLlm,
  writeMeta,
} from "./support.mjs";

const FILES = Number(process.env.BENCH_RUNNER_FILES ?? 10_000);
const SPAWN_TARGET_MS = 1000;
const LIVE_TARGET_MS = 300;
const TOOL_MS = 1000;
const NOTE = "[MESSAGE from /root · task bench · id msg-1]\nskip the legacy/ folder";
const RUNNERS = { box: { kind: "sandbox" } };

const hasBwrap = () => {
  try {
    execFileSync("bwrap", ["--ro-bind", "/", "/", "true"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
};

/** The bench home's pi settings with the sandbox runner named. */
function nameRunners(env) {
  const file = path.join(env.PI_CODING_AGENT_DIR, "settings.json");
  const settings = JSON.parse(fs.readFileSync(file, "utf8"));
  fs.writeFileSync(file, JSON.stringify({ ...settings, subagents: { runners: RUNNERS } }));
}

async function spawnRow(line) {
  let spawnArgs = {};
  let marks = {};
  const llm = await startBenchLlm((body) => {
    if (agentOf(body)) {
      marks.childFirst ??= now();
      return { text: "child done" };
    }
    const results = toolCount(body);
    if (results === 0) {
      marks.spawnCall = now();
      const args = { task_name: "worker", message: "look", agent_type: "implementation", fork_turns: "none" };
      return { calls: [["spawn_agent", { ...args, ...spawnArgs }]] };
    }
    if (results === 1) return { calls: [["wait_agent", { timeout_ms: 120_000 }]] };
    return { text: "root done" };
  });
  const { home, env, cleanup } = benchPiHome(llm.url, line);
  nameRunners(env);
  const git = gitEnv(home, env);
  const samples = { worktree: [], sandbox: [] };
  try {
    const repo = path.join(home, `repo-${FILES}`);
    const inRepo = dirtyRepository(repo, FILES, git);
    const status = inRepo(["status", "--porcelain"]).toString();
    for (let round = 0; round < rounds(5); round++) {
      for (const which of round % 2 === 0 ? ["worktree", "sandbox"] : ["sandbox", "worktree"]) {
        spawnArgs = which === "sandbox" ? { runner: "box" } : { isolation: "worktree" };
        marks = {};
        const result = await runProcess(
          path.join(line.binDir, "pi"),
          ["--mode", "json", "-np", "--no-session", "-e", REPO_ROOT, "spawn one"],
          { cwd: repo, env: git, timeoutMs: 300_000 },
        );
        if (result.code !== 0 || marks.childFirst === undefined)
          throw new Error(`root (${which}) exited ${result.code}: ${result.stderr.slice(-800)}`);
        samples[which].push(marks.childFirst - marks.spawnCall);
        for (const tree of fs.readdirSync(env.PI_SUBAGENTS_DIR))
          fs.rmSync(path.join(env.PI_SUBAGENTS_DIR, tree), { recursive: true, force: true });
        inRepo(["worktree", "prune"]);
        for (const branch of inRepo(["branch", "--list", "subagent/*", "--format=%(refname:short)"])
          .toString()
          .split("\n")
          .filter(Boolean))
          inRepo(["branch", "-q", "-D", branch]);
      }
    }
    if (inRepo(["status", "--porcelain"]).toString() !== status) throw new Error("the parent's working tree changed");
  } finally {
    await llm.close();
    cleanup();
  }
  return { sandbox: median(samples.sandbox), worktree: median(samples.worktree) };
}

async function liveRow(line) {
  const state = { withMessage: false, inbox: "", requests: [], toolEnd: undefined };
  const llm = await startBenchLlm((body) => {
    // The child's tool ends by telling the bench so: both ends of the delay on this process's clock.
    if (body.mark === "tool-end") {
      state.toolEnd = now();
      return { text: "marked" };
    }
    const index = state.requests.length;
    const users = body.messages
      .filter((m) => m.role === "user")
      .map((m) => (typeof m.content === "string" ? m.content : m.content.map((p) => p.text).join("")));
    state.requests.push({ at: now(), carries: users.includes(NOTE) });
    if (index === 0) {
      if (state.withMessage) {
        setTimeout(() => {
          const temp = path.join(state.inbox, ".00000001.json.tmp");
          fs.writeFileSync(temp, JSON.stringify({ id: "msg-1", text: NOTE }));
          fs.renameSync(temp, path.join(state.inbox, "00000001.json"));
        }, TOOL_MS / 3);
      }
      const mark = `curl -s -o /dev/null -d '{"mark":"tool-end"}' ${llm.url}/chat/completions`;
      return { calls: [["bash", { command: `sleep ${TOOL_MS / 1000}; ${mark}; echo done` }]] };
    }
    return { text: "done" };
  });
  const { home, env, cleanup } = benchPiHome(llm.url, line);
  const runEnv = { ...env, PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0" };
  const samples = { live: [], plain: [] };
  try {
    for (let round = 0; round < rounds(7); round++) {
      for (const withMessage of round % 2 ? [false, true] : [true, false]) {
        const dir = path.join(home, `run-${round}-${withMessage}`);
        const repo = path.join(dir, "repo");
        fs.mkdirSync(repo, { recursive: true });
        execFileSync("git", ["init", "-q"], { cwd: repo });
        state.inbox = path.join(dir, "inbox");
        fs.mkdirSync(state.inbox, { recursive: true });
        state.withMessage = withMessage;
        state.requests = [];
        state.toolEnd = undefined;
        const meta = writeMeta(dir, {
          task: "run the tool",
          cwd: "repo",
          stdoutPath: "out/stdout.log",
          inboxPath: "inbox",
          graceMs: 500,
          runner: { name: "box", kind: "sandbox" },
        });
        const run = await runWrapper(meta, { env: runEnv });
        const result = JSON.parse(fs.readFileSync(path.join(dir, "out/result.json"), "utf8"));
        if (result.status !== "completed")
          throw new Error(`sandbox run ended ${result.status}: ${result.errorMessage ?? run.stderr}`);
        const next = state.requests[1];
        if (!next || next.carries !== withMessage || state.requests.length !== 2)
          throw new Error(`the request after the tool ${withMessage ? "lacks" : "carries"} the message`);
        if (state.toolEnd === undefined) throw new Error("the child's tool did not mark its end");
        (withMessage ? samples.live : samples.plain).push(next.at - state.toolEnd);
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    await llm.close();
    cleanup();
  }
  return { live: median(samples.live), plain: median(samples.plain) };
}

export async function run() {
  const [line] = benchLines();
  const files = `${FILES.toLocaleString("en-US").replace(/,/g, " ")} files, dirty`;
  if (!hasBwrap()) {
    const missing = { input: "bwrap missing", value: "—", baseline: "—", ratio: "not measured" };
    return [
      row({
        id: "runner-spawn",
        what: "spawn → first request: sandbox vs isolation worktree",
        target: "≤ +1 s",
        points: [missing],
        note: "bwrap is missing here.",
      }),
      row({
        id: "runner-live-message",
        what: "live message through serve",
        target: "median ≤ 300 ms",
        points: [missing],
        note: "bwrap is missing here.",
      }),
    ];
  }
  const spawn = await spawnRow(line);
  const spawnExtra = spawn.sandbox - spawn.worktree;
  const live = await liveRow(line);
  return [
    row({
      id: "runner-spawn",
      what: "spawn to the child's first model request: runner sandbox vs isolation worktree",
      target: `≤ +${SPAWN_TARGET_MS} ms`,
      points: [
        {
          input: files,
          value: fmt.s(spawn.sandbox),
          baseline: fmt.s(spawn.worktree),
          ratio: `${spawnExtra >= 0 ? "+" : ""}${fmt.ms(spawnExtra)}`,
          pass: spawnExtra <= SPAWN_TARGET_MS,
        },
      ],
      note: `Real pi (${line.label}) and extension, loopback LLM. From the root model's spawn_agent call to the child's first request: \`runner: "box"\` (a sandbox: the worktree is made as for an isolated child, then its state goes as a bundle through bwrap and \`serve\` into a scratch checkout where pi starts, reading this machine's Node compile cache and a private copy of its jiti cache) vs \`isolation: "worktree"\`, on the same dirty repository, alternated, medians of ${rounds(5)} each.`,
    }),
    row({
      id: "runner-live-message",
      what: "live message through serve (sandbox): the tool call ends → the next request carrying the message (baseline: no message)",
      target: `median ≤ ${LIVE_TARGET_MS} ms`,
      points: [
        {
          input: line.label,
          value: fmt.ms(live.live),
          baseline: fmt.ms(live.plain),
          ratio: `${live.live - live.plain >= 0 ? "+" : ""}${(live.live - live.plain).toFixed(0)} ms`,
          pass: live.live <= LIVE_TARGET_MS,
        },
      ],
      note: `As the live-message row, but the run is on a sandbox runner: the message written into the local run's inbox ${Math.round(TOOL_MS / 3)} ms into the child's \`sleep ${TOOL_MS / 1000}\` goes over the protocol as a \`message\` frame and into the far side's inbox. Both ends on the bench's clock: the tool's command ends with \`curl\` posting a mark to the bench's server (its receive time is the tool's end), and the next request's receive time. Medians of ${rounds(7)} runs each.`,
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  const rows = await run();
  printRows(rows);
  for (const r of rows) console.log(`\n${r.note}`);
}
