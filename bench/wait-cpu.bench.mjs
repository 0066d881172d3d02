#!/usr/bin/env node
// What a wait costs the root's CPU: a real pi root spawns three children that answer at
// different times (so the first notice waits in the mailbox while the others work), then
// waits for them (a) with one `wait_agent {all: true}` and (b) with plain `wait_agent` calls
// until it has all three notices. Measured: the root process's own CPU time (user + system,
// /proc/<pid>/stat, sampled until it exits; its children's not included), medians. An
// all-wait that woke at once for the notice it already holds would spin until the last child
// ends; the target is the plain waits' CPU within 10 %.
import fs from "node:fs";
import { benchLines, benchPiHome, fmt, median, REPO_ROOT, rounds, row, runProcess, startBenchLlm } from "./support.mjs";

const CHILD_MS = [300, 2000, 4000];
const CLOCK_TICKS = 100; // USER_HZ on Linux: /proc's CPU times are in 1/100 s

const toolMessages = (body) => (body.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content));
const agentOf = (body) =>
  /You are the agent (\/root\/[a-z0-9_/]+) /.exec(JSON.stringify(body.messages?.[0]?.content ?? ""))?.[1];

function answerFor(mode) {
  return (body) => {
    const agent = agentOf(body);
    if (agent) return { text: "task done", delayMs: CHILD_MS[Number(agent.slice(-1))] ?? 0 };
    const results = toolMessages(body);
    if (results.length === 0) {
      return {
        calls: CHILD_MS.map((_, i) => [
          "spawn_agent",
          { task_name: `task_${i}`, fork_turns: "none", message: `do task ${i}` },
        ]),
      };
    }
    const notices = results.reduce((n, text) => n + (text.match(/\\?"type\\?":\\?"completed\\?"/g)?.length ?? 0), 0);
    if (notices >= CHILD_MS.length) return { text: "all done" };
    return { calls: [["wait_agent", mode === "all" ? { all: true, timeout_ms: 60000 } : { timeout_ms: 60000 }]] };
  };
}

/** The CPU time (ms) of `pid` itself, or undefined once it is gone. */
function ownCpuMs(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** Runs the root to its end; its own CPU time, the last sample before it exited. */
async function rootCpu(cmd, args, { cwd, env }) {
  let cpu = 0;
  const sample = (pid) => {
    cpu = ownCpuMs(pid) ?? cpu;
  };
  const out = await runProcess(cmd, args, { cwd, env, timeoutMs: 120_000, sample });
  if (out.code !== 0) throw new Error(`${cmd} exited ${out.code}: ${out.stderr.slice(-500)}`);
  return cpu;
}

/** Both pi lines in one run, interleaved round by round. */
export async function run() {
  let answer = answerFor("plain");
  const llm = await startBenchLlm((body) => answer(body));
  const lines = benchLines().map((line) => ({ line, ...benchPiHome(llm.url, line), all: [], plain: [] }));
  try {
    // Round 0 warms pi's caches (its compile cache, jiti's) for both modes and is not counted:
    // the first run of a line pays them, and a median of few rounds would carry it. The order
    // of the two modes alternates round by round, so neither always runs on the caches the other left.
    for (let round = 0; round <= rounds(3); round++) {
      for (const entry of lines) {
        for (const mode of round % 2 === 0 ? ["all", "plain"] : ["plain", "all"]) {
          answer = answerFor(mode);
          const args = ["--mode", "json", "-np", "--no-session", "-e", REPO_ROOT, "fan out"];
          const cpu = await rootCpu(entry.line.piCli, args, { cwd: entry.home, env: entry.env });
          if (round > 0) entry[mode].push(cpu);
        }
      }
    }
  } finally {
    await llm.close();
    for (const { cleanup } of lines) cleanup();
  }
  return lines.map(({ line, all, plain }) => {
    const measured = median(all);
    const baseline = median(plain);
    return row({
      id: `wait-cpu-${line.name}`,
      what: `the root's own CPU while it waits for 3 children answering at ${CHILD_MS.join(" / ")} ms: wait_agent all: true vs plain waits (${line.label})`,
      target: "≤ 1.10×",
      points: [
        {
          input: "3 children",
          value: fmt.ms(measured),
          baseline: fmt.ms(baseline),
          ratio: fmt.x(measured / baseline),
          pass: measured / baseline <= 1.1,
        },
      ],
      note: `Real pi root (${line.label}; loopback LLM); the root spawns 3 children (fork_turns none) in one message, then waits with one wait_agent {all: true} (measured) or with plain wait_agent calls until it holds all 3 notices (baseline). CPU: the root process's utime + stime from /proc (its children not included), sampled every 20 ms until it exits; medians of ${all.length} after one warm-up round, the two modes alternating which goes first.`,
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
