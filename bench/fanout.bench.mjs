#!/usr/bin/env node
// Fan-out through the extension: a real pi root (scripted loopback LLM) spawns N children in
// one message and waits for them; each child is bench/fixtures/sleep-pi.mjs, which answers
// 1 s after its own process started, run by its own subagent-wrapper. At most 3 child turns
// run at once, so the ideal is ceil(N/3) × 1 s. Measured from the first child's meta.json
// `startedAt` (the extension starting its first turn) to the last child's result.json `endedAt`.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { benchLines, benchPiHome, fmt, median, REPO_ROOT, rounds, row, startBenchLlm, timed } from "./support.mjs";

const CHILD_MS = 1000;
const SLOTS = 3;
const SLEEP_PI = path.join(REPO_ROOT, "bench/fixtures/sleep-pi.mjs");

function answerFor(children) {
  return (body) => {
    const results = (body.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content));
    if (results.length === 0) {
      return {
        calls: Array.from({ length: children }, (_, i) => [
          "spawn_agent",
          { task_name: `task_${i}`, fork_turns: "none", message: `do task ${i}` },
        ]),
      };
    }
    const done = results.reduce((n, text) => n + (text.match(/\\?"type\\?":\\?"completed\\?"/g)?.length ?? 0), 0);
    return done < children ? { calls: [["wait_agent", { timeout_ms: 60000 }]] } : { text: "all done" };
  };
}

/** Every run directory of the tree: [{startedAt, endedAt}] from meta.json and result.json. */
function runsOf(treesDir) {
  const runs = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (!entry.isDirectory()) continue;
      if (existsSync(path.join(full, "meta.json")) && existsSync(path.join(full, "result.json"))) {
        const meta = JSON.parse(readFileSync(path.join(full, "meta.json"), "utf8"));
        const result = JSON.parse(readFileSync(path.join(full, "result.json"), "utf8"));
        const runStart = JSON.parse(readFileSync(path.join(full, "events.jsonl"), "utf8").split("\n")[0]);
        runs.push({
          startedAt: Date.parse(meta.startedAt),
          spawnedAt: runStart.ts,
          endedAt: Date.parse(result.endedAt),
          status: result.status,
        });
      } else walk(full);
    }
  };
  walk(treesDir);
  return runs;
}

/** Both pi lines in one run, interleaved round by round (the root pi, the wrappers and sleep-pi on the line's Node). */
export async function run() {
  let answer = answerFor(1);
  const llm = await startBenchLlm((body) => answer(body));
  const { url } = llm;
  const lines = benchLines().map((line) => ({ line, points: [], parts: { schedule: [], startup: [], child: [] } }));
  try {
    for (const children of [6, 12, 20]) {
      answer = answerFor(children);
      const spans = lines.map(() => []);
      for (let round = 0; round < rounds(3); round++) {
        for (const [index, { line, parts }] of lines.entries()) {
          const { home, env, cleanup } = benchPiHome(url, line);
          try {
            const childEnv = { ...env, PI_SUBAGENTS_PI_BIN: SLEEP_PI, BENCH_CHILD_MS: String(CHILD_MS) };
            await timed(line.piCli, ["--mode", "json", "-np", "--no-session", "-e", REPO_ROOT, "fan out"], {
              cwd: home,
              env: childEnv,
            });
            const runs = runsOf(env.PI_SUBAGENTS_DIR);
            if (runs.length !== children || runs.some((r) => r.status !== "completed"))
              throw new Error(
                `${line.label}: expected ${children} completed runs, got ${runs.map((r) => r.status).join(",")}`,
              );
            spans[index].push(Math.max(...runs.map((r) => r.endedAt)) - Math.min(...runs.map((r) => r.startedAt)));
            for (const r of runs) {
              parts.startup.push(r.spawnedAt - r.startedAt);
              parts.child.push(r.endedAt - r.spawnedAt);
              const before = runs.filter((o) => o.endedAt <= r.startedAt).map((o) => o.endedAt);
              if (before.length) parts.schedule.push(r.startedAt - Math.max(...before));
            }
          } finally {
            cleanup();
          }
        }
      }
      const ideal = Math.ceil(children / SLOTS) * CHILD_MS;
      for (const [index, { points }] of lines.entries()) {
        const span = median(spans[index]);
        points.push({
          input: `${children} children`,
          value: fmt.s(span),
          baseline: fmt.s(ideal),
          ratio: fmt.x(span / ideal),
          pass: span / ideal <= 1.15,
        });
      }
    }
  } finally {
    await llm.close();
  }
  const ms = (list) => `${median(list).toFixed(0)} ms`;
  return lines.map(({ line, points, parts }) =>
    row({
      id: `fanout-${line.name}`,
      what: `fan-out: N children of ~1 s through the extension, ${SLOTS} active turns (${line.label})`,
      target: "≤ 1.15× ideal ceil(N/3) × 1 s",
      points,
      note: `A real pi root (${line.label}; both lines in the same run, interleaved round by round; loopback scripted LLM) loads the extension and calls spawn_agent N times in one message (fork_turns none), then wait_agent until all are done. Each child turn is a real subagent-wrapper (on the root's Node) whose "pi" (PI_SUBAGENTS_PI_BIN) is bench/fixtures/sleep-pi.mjs: it answers ${CHILD_MS} ms after its own process started (its Node start-up included) and exits. Measured: from the earliest meta.json \`startedAt\` (the extension starting the first turn) to the latest result.json \`endedAt\`; it includes, per wave, the extension's scheduling (wrapper exit seen, result.json read, slot freed, next run directory and meta.json written), the wrapper's start-up and its finish. Medians over all runs of this line: previous turn's end → next turn's meta.json ${ms(parts.schedule)}; meta.json → child spawned (wrapper start-up, under the load of sibling wrappers) ${ms(parts.startup)}; child spawned → result.json ${ms(parts.child)}. The root's own LLM turns overlap with the children.`,
    }),
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
