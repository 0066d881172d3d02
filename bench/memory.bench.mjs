#!/usr/bin/env node
// Memory per process, counted as each process's own: a real pi root spawns one child with
// `wait: true`; the loopback LLM answers the child after CHILD_MS. Every 20 ms the bench reads
// /proc/<pid>/smaps_rollup of each process under the root (the root pi, the child's wrapper,
// the child pi) and keeps, per role, the peak PSS (shared pages divided among the processes
// that map them, so pi's code is counted once across processes, not once per process) and
// the peak USS (private pages only: what ending the process gives back), and the wrapper's
// peak RSS (VmHWM in /proc/<pid>/status, the kernel's own peak). Medians.
import http from "node:http";
import { memoryOf, processesBelow } from "./process-tree.mjs";
import { benchLines, benchPiHome, fmt, MiB, median, REPO_ROOT, rounds, row, runProcess, sseBody } from "./support.mjs";

const CHILD_MS = 1500;
const agentOf = (body) =>
  /You are the agent (\/root\/[a-z0-9_/]+) /.exec(JSON.stringify(body.messages?.[0]?.content ?? ""))?.[1];

async function startLlm() {
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
      const child = agentOf(body) !== undefined;
      const answered = (body.messages ?? []).some((m) => m.role === "tool");
      const answer = child
        ? { text: "child done" }
        : answered
          ? { text: "root done" }
          : { calls: [["spawn_agent", { task_name: "solo", fork_turns: "none", message: "answer", wait: true }]] };
      setTimeout(
        () => {
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.end(sseBody(answer));
        },
        child ? CHILD_MS : 0,
      );
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}/v1`, close: () => new Promise((r) => server.close(r)) };
}

/** Runs the root to its end, sampling; the peak of each figure per role. */
async function sampledRun(cmd, args, { cwd, env }) {
  const peaks = {};
  const sample = (rootPid) => {
    for (const { pid, role } of processesBelow(rootPid)) {
      if (role === "other") continue;
      const memory = memoryOf(pid);
      if (!memory) continue;
      peaks[role] ??= { pss: 0, uss: 0, hwm: 0 };
      const peak = peaks[role];
      for (const key of ["pss", "uss", "hwm"]) peak[key] = Math.max(peak[key], memory[key]);
    }
  };
  const out = await runProcess(cmd, args, { cwd, env, timeoutMs: 120_000, sample });
  if (out.code !== 0) throw new Error(`${cmd} exited ${out.code}: ${out.stderr.slice(-500)}`);
  return peaks;
}

export async function run() {
  const llm = await startLlm();
  const lines = benchLines().map((line) => ({ line, ...benchPiHome(llm.url, line), samples: [] }));
  try {
    for (let round = 0; round < rounds(3); round++) {
      for (const entry of lines) {
        const args = ["--mode", "json", "-np", "--no-session", "-e", REPO_ROOT, "delegate"];
        entry.samples.push(await sampledRun(entry.line.piCli, args, { cwd: entry.home, env: entry.env }));
      }
    }
  } finally {
    await llm.close();
    for (const { cleanup } of lines) cleanup();
  }
  return lines.map(({ line, samples }) => {
    const of = (role, key) => median(samples.map((s) => s[role]?.[key] ?? 0));
    const wrapperHwm = of("wrapper", "hwm");
    const roles = ["root", "wrapper", "child"]
      .map((role) => `${role} PSS ${fmt.mib(of(role, "pss"))}, USS ${fmt.mib(of(role, "uss"))}`)
      .join("; ");
    return row({
      id: `memory-${line.name}`,
      what: `a normal run's wrapper: peak RSS; each process's own memory (PSS / USS) (${line.label})`,
      target: "≤ 55 MiB",
      points: [
        { input: "1 child", value: fmt.mib(wrapperHwm), baseline: "—", ratio: "—", pass: wrapperHwm <= 55 * MiB },
      ],
      note: `Real pi root (${line.label}; loopback LLM, the child answers after ${CHILD_MS} ms) spawning one child with wait: true; /proc/<pid>/smaps_rollup and status of every process under the root, every 20 ms; peaks per process, medians of ${samples.length}: ${roles}.`,
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
