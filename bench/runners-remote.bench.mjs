#!/usr/bin/env node
// A fan-out on an ssh runner (docs/runners-remote.md): one root spawns N children on a runner
// of capacity 12 whose far side is a separate host in a network namespace (sshd, a test user,
// this package and the line's pi installed there: test/support/ssh-host.ts, compiled into
// build/stress/ by `npm run build`). Each child's one model answer takes DELAY_MS (a ~2 s
// child). Measured: from the root model's spawn_agent calls to the root's request that carries
// the last child's notice, N = 12 against N = 1, alternated round by round, medians; target:
// the 12 take at most twice as long as the one (they run at once: the parent's local limit of
// 3 does not apply to a runner, and one shared ssh connection carries every session).
// Real pi (both lines) as root and as the far children, one scripted LLM on this machine's side
// of the veth (the far host cannot reach loopback). Needs root and sshd: without them, the row
// says so and measures nothing.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
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
  startBenchLlm,
} from "./support.mjs";

const DELAY_MS = Number(process.env.BENCH_DELAY_MS ?? 2000);
const WIDE = 12;
const TARGET_RATIO = 2;
const SSH_HOST = path.join(REPO_ROOT, "build/stress/test/support/ssh-host.js");

const agentOf = (body) =>
  /You are the agent (\/root\/[a-z0-9_/]+) /.exec(JSON.stringify(body.messages?.[0]?.content ?? ""))?.[1];
const toolTexts = (body) => (body.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content));
const completed = (body) =>
  toolTexts(body).reduce((n, text) => n + (text.match(/\\?"type\\?":\\?"completed\\?"/g)?.length ?? 0), 0);

/** Why the row cannot be measured here, or undefined. */
async function missing() {
  if (process.getuid?.() !== 0) return "needs root (a network namespace and a test user)";
  if (!fs.existsSync(SSH_HOST)) return `${path.relative(REPO_ROOT, SSH_HOST)} is missing: run "npm run build"`;
  const { missingNeeds } = await import(pathToFileURL(path.join(REPO_ROOT, "build/stress/test/support/needs.js")).href);
  const { SSH_HOST_TOOLS } = await import(pathToFileURL(SSH_HOST).href);
  return missingNeeds(SSH_HOST_TOOLS, { root: true });
}

/** One line: a far host with its pi, the root's home naming the runner, N = 1 and N = 12 alternated. */
async function measureLine(line) {
  const { startSshHost, sshRunnerFor } = await import(pathToFileURL(SSH_HOST).href);
  const far = await startSshHost({ pi: { node: line.node, piCli: line.piCli } });
  const state = { children: 1, spawnedAt: 0, doneAt: 0 };
  const llm = await startBenchLlm((body) => {
    if (agentOf(body)) return { text: "child done", delayMs: DELAY_MS };
    if (toolTexts(body).length === 0) {
      state.spawnedAt = now();
      const spawn = (i) => [
        "spawn_agent",
        { task_name: `w${i}`, message: "answer", fork_turns: "none", runner: "far" },
      ];
      return { calls: Array.from({ length: state.children }, (_, i) => spawn(i)) };
    }
    if (completed(body) < state.children) return { calls: [["wait_agent", { timeout_ms: 120_000 }]] };
    state.doneAt ||= now();
    return { text: "all done" };
  }, far.hostAddress);
  const { home, env, cleanup } = benchPiHome(llm.url, line);
  const samples = { one: [], wide: [] };
  try {
    const settings = { defaultProvider: "fake", defaultModel: "fast", quietStartup: true, retry: { enabled: false } };
    const models = JSON.parse(fs.readFileSync(path.join(env.PI_CODING_AGENT_DIR, "models.json"), "utf8"));
    await far.writePiSettings({ models, settings });
    const settingsFile = path.join(env.PI_CODING_AGENT_DIR, "settings.json");
    const rootSettings = JSON.parse(fs.readFileSync(settingsFile, "utf8"));
    const runners = { far: sshRunnerFor(far, { capacity: WIDE }) };
    fs.writeFileSync(settingsFile, JSON.stringify({ ...rootSettings, subagents: { runners } }));
    const repo = path.join(home, "repo");
    fs.mkdirSync(repo);
    const git = (...args) =>
      execFileSync("git", ["-c", "user.name=b", "-c", "user.email=b@b", ...args], { cwd: repo, env });
    git("init", "-q", "-b", "main");
    fs.writeFileSync(path.join(repo, "a.txt"), "a\n");
    git("add", "-A");
    git("commit", "-q", "-m", "initial");
    for (let round = 0; round < rounds(3); round++) {
      for (const children of round % 2 === 0 ? [1, WIDE] : [WIDE, 1]) {
        Object.assign(state, { children, spawnedAt: 0, doneAt: 0 });
        const result = await runProcess(
          line.piCli,
          ["--mode", "json", "-np", "--no-session", "-e", REPO_ROOT, "fan out"],
          { cwd: repo, env, timeoutMs: 300_000 },
        );
        if (result.code !== 0 || !state.doneAt)
          throw new Error(`root (${children} children) exited ${result.code}: ${result.stderr.slice(-800)}`);
        (children === 1 ? samples.one : samples.wide).push(state.doneAt - state.spawnedAt);
        for (const tree of fs.readdirSync(env.PI_SUBAGENTS_DIR))
          fs.rmSync(path.join(env.PI_SUBAGENTS_DIR, tree), { recursive: true, force: true });
        git("worktree", "prune");
        const branches = git("branch", "--list", "subagent/*", "--format=%(refname:short)").toString();
        for (const branch of branches.split("\n").filter(Boolean)) git("branch", "-q", "-D", branch);
      }
    }
  } finally {
    await llm.close();
    cleanup();
    await far.stop();
  }
  return { one: median(samples.one), wide: median(samples.wide) };
}

export async function run() {
  const what = `ssh runner fan-out: ${WIDE} children of ~${DELAY_MS / 1000} s at once vs one, spawn calls → the last notice`;
  const why = await missing();
  if (why) {
    const point = { input: "far host", value: "—", baseline: "—", ratio: "not measured" };
    return [row({ id: "runner-ssh-fanout", what, target: `≤ ${TARGET_RATIO}×`, points: [point], note: why })];
  }
  const points = [];
  for (const line of benchLines()) {
    const { one, wide } = await measureLine(line);
    const ratio = wide / one;
    points.push({
      input: line.label,
      value: fmt.s(wide),
      baseline: fmt.s(one),
      ratio: fmt.x(ratio),
      pass: ratio <= TARGET_RATIO,
    });
  }
  return [
    row({
      id: "runner-ssh-fanout",
      what,
      target: `≤ ${TARGET_RATIO}×`,
      points,
      note: `Real pi as the root and as every far child, on each line; the far host is a network namespace on this same machine (its own sshd and address, the line's pi and this package installed where it sees them), so the 12 far pi processes, their \`serve\` and the 12 local wrappers all share the same 2 cores with the root. A runner of capacity ${WIDE}: all ${WIDE} run at once over one shared ssh connection. Each child's one model answer waits ${DELAY_MS} ms. From the root model's spawn_agent calls to its request that carries the last child's notice; ${WIDE} children vs 1, alternated, medians of ${rounds(3)} each.`,
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  const rows = await run();
  printRows(rows);
  for (const r of rows) console.log(`\n${r.note}`);
}
