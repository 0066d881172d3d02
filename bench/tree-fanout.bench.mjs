#!/usr/bin/env node
// What a tree buys: N independent tasks, each waiting DELAY_MS on its (loopback, scripted)
// LLM, run (a) as N children of one root through the extension, and (b) one after another as
// plain `pi --mode json` runs — side by side in one run, alternated, medians. Everything is the
// real pi; only the LLM is scripted.
import { benchLines, benchPiHome, fmt, median, REPO_ROOT, rounds, row, startBenchLlm, timed } from "./support.mjs";

const DELAY_MS = Number(process.env.BENCH_DELAY_MS ?? 1500);

const toolMessages = (body) => (body.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content));
const agentOf = (body) =>
  /You are the agent (\/root\/[a-z0-9_/]+) /.exec(JSON.stringify(body.messages?.[0]?.content ?? ""))?.[1];

function answerFor(children) {
  return (body) => {
    const agent = agentOf(body);
    if (agent || !body.tools?.some((t) => t.function.name === "spawn_agent"))
      return { text: "task done", delayMs: DELAY_MS };
    const results = toolMessages(body);
    if (results.length === 0) {
      return {
        calls: Array.from({ length: children }, (_, i) => [
          "spawn_agent",
          { task_name: `task_${i}`, fork_turns: "none", message: `do task ${i}` },
        ]),
      };
    }
    const notices = results.reduce((n, text) => n + (text.match(/\\?"type\\?":\\?"completed\\?"/g)?.length ?? 0), 0);
    return notices < children ? { calls: [["wait_agent", { timeout_ms: 60000 }]] } : { text: "all done" };
  };
}

/** Both pi lines in one run, interleaved round by round. */
export async function run() {
  let answer = answerFor(1);
  const llm = await startBenchLlm((body) => answer(body));
  const lines = benchLines().map((line) => ({ line, ...benchPiHome(llm.url, line), points: [] }));
  try {
    for (const children of [2, 3]) {
      answer = answerFor(children);
      const samples = lines.map(() => ({ tree: [], sequential: [] }));
      for (let round = 0; round < rounds(3); round++) {
        for (const [index, { line, home, env }] of lines.entries()) {
          samples[index].tree.push(
            await timed(line.piCli, ["--mode", "json", "-np", "--no-session", "-e", REPO_ROOT, "fan out"], {
              cwd: home,
              env,
            }),
          );
          let sequential = 0;
          for (let i = 0; i < children; i++)
            sequential += await timed(line.piCli, ["--mode", "json", "-np", "--no-session", `do task ${i}`], {
              cwd: home,
              env,
            });
          samples[index].sequential.push(sequential);
        }
      }
      for (const [index, { points }] of lines.entries()) {
        const tree = median(samples[index].tree);
        const sequential = median(samples[index].sequential);
        points.push({
          input: `${children} tasks`,
          value: fmt.s(tree),
          baseline: fmt.s(sequential),
          ratio: fmt.x(tree / sequential),
        });
      }
    }
  } finally {
    await llm.close();
    for (const { cleanup } of lines) cleanup();
  }
  return lines.map(({ line, points }) =>
    row({
      id: `tree-${line.name}`,
      what: `what a tree buys: N tasks of ${DELAY_MS} ms LLM wait as children of one root vs one after another (${line.label})`,
      target: "(informative)",
      points,
      note: `Everything real pi (${line.label}; both lines in the same run, interleaved round by round); the loopback LLM answers each child after ${DELAY_MS} ms. Measured: the root's whole run (its own LLM turns, the spawns, wait_agent, the children through wrappers). Baseline: the same tasks as plain \`pi --mode json\` runs one after another.`,
    }),
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
