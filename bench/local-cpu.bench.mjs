#!/usr/bin/env node
// What a child's turn costs this package's own processes, against what the child's pi costs:
// a real pi root spawns one child with `wait: true` (the child answers after CHILD_MS), and,
// alternated, the same root makes the same two model requests with a `list_agents` call in
// place of the spawn (the extension loaded alike). CPU (user + sys) is read from
// /proc/<pid>/stat every 10 ms: the wrapper's own, the child pi's (the wrapper's cutime +
// cstime once it has reaped it), and the root's. The local side of a turn is the wrapper's CPU
// plus what the root spent beyond the run without a child (the spawn, the wait, recording the
// end); `serve` runs only for a child on another machine. Medians.
import { spawn } from "node:child_process";
import fs from "node:fs";
import { processesBelow } from "./process-tree.mjs";
import { benchLines, benchPiHome, fmt, median, REPO_ROOT, rounds, row, startBenchLlm } from "./support.mjs";

const CHILD_MS = 1000;
const TICK_MS = 10; // USER_HZ: 100 on Linux

/** utime, stime, cutime, cstime of a process in ms (undefined once it is gone). */
function cpuOf(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const [utime, stime, cutime, cstime] = fields.slice(11, 15).map((v) => Number(v) * TICK_MS);
    return { own: utime + stime, children: cutime + cstime };
  } catch {
    return undefined;
  }
}

/** Runs the root to its end, keeping the last CPU figures seen of the root and of each wrapper. */
function sampled(cmd, args, { cwd, env }) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const last = { root: 0, wrappers: new Map(), children: new Map() };
    const sampler = setInterval(() => {
      for (const { pid, role } of processesBelow(child.pid)) {
        const cpu = cpuOf(pid);
        if (!cpu) continue;
        if (role === "root") last.root = cpu.own;
        else if (role === "wrapper") last.wrappers.set(pid, cpu);
        else if (role === "child") last.children.set(pid, cpu.own);
      }
    }, 10);
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.on("error", reject);
    child.on("exit", (code) => {
      clearInterval(sampler);
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`${cmd} exited ${code}: ${stderr.slice(-500)}`));
      const wrappers = [...last.wrappers.values()];
      const sum = (values) => values.reduce((total, v) => total + v, 0);
      resolve({
        root: last.root,
        wrapper: sum(wrappers.map((w) => w.own)),
        // Once reaped, the wrapper's cutime holds the child pi's whole CPU; until then its last sample.
        childPi: Math.max(sum(wrappers.map((w) => w.children)), sum([...last.children.values()])),
      });
    });
  });
}

const isChild = (body) => /You are the agent \/root\//.test(JSON.stringify(body.messages?.[0]?.content ?? ""));

export async function run() {
  const state = { delegate: true };
  const llm = await startBenchLlm((body) => {
    if (isChild(body)) return { text: "child done", delayMs: CHILD_MS };
    if ((body.messages ?? []).some((m) => m.role === "tool")) return { text: "root done" };
    return state.delegate
      ? { calls: [["spawn_agent", { task_name: "solo", fork_turns: "none", message: "answer", wait: true }]] }
      : { calls: [["list_agents", {}]] };
  });
  // One turn, so no spare pi (it would serve the next turn, and its wrapper and pi would be
  // counted as this turn's): its own costs are the spare rows'.
  const lines = benchLines().map((line) => {
    const home = benchPiHome(llm.url, line);
    return { line, ...home, env: { ...home.env, PI_SUBAGENTS_SPARE: "0" }, turns: [], plain: [] };
  });
  try {
    for (let round = 0; round < rounds(5) + 1; round++) {
      for (const entry of lines) {
        const args = ["--mode", "json", "-np", "--no-session", "-e", REPO_ROOT, "delegate"];
        state.delegate = true;
        const turn = await sampled(entry.line.piCli, args, { cwd: entry.home, env: entry.env });
        state.delegate = false;
        const plain = await sampled(entry.line.piCli, args, { cwd: entry.home, env: entry.env });
        // The first round warms pi's caches.
        if (round === 0) continue;
        entry.turns.push(turn);
        entry.plain.push(plain);
      }
    }
  } finally {
    await llm.close();
    for (const { cleanup } of lines) cleanup();
  }
  return lines.map(({ line, turns, plain }) => {
    const childPi = median(turns.map((t) => t.childPi));
    const wrapper = median(turns.map((t) => t.wrapper));
    const rootExtra = Math.max(0, median(turns.map((t) => t.root)) - median(plain.map((p) => p.root)));
    const local = wrapper + rootExtra;
    const ratio = local / childPi;
    return row({
      id: `local-cpu-${line.name}`,
      what: `the local side's CPU per child turn (root + wrapper) against the child pi's own (${line.label})`,
      target: "≤ 0.3× the child pi's",
      points: [
        {
          input: "1 child",
          value: fmt.ms(local),
          baseline: `child pi ${fmt.ms(childPi)}`,
          ratio: fmt.x(ratio),
          pass: ratio <= 0.3,
        },
      ],
      note: `Real pi root and child (${line.label}; loopback LLM, the child answers after ${CHILD_MS} ms); /proc/<pid>/stat every 10 ms (10 ms ticks), medians of ${turns.length} after one warm-up round; no spare pi (PI_SUBAGENTS_SPARE=0: a spare serves the next turn, and the spare rows report what it costs). The wrapper's own CPU ${fmt.ms(wrapper)}; the root's ${fmt.ms(rootExtra)} beyond the same root making the same two model requests with list_agents in place of the spawn (${fmt.ms(median(plain.map((p) => p.root)))} without a child); the child pi's ${fmt.ms(childPi)}, from the wrapper's cutime + cstime once it has reaped it (else the child's last sample).`,
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
