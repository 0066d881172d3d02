#!/usr/bin/env node
// What a tree buys: N independent tasks, each waiting DELAY_MS on its (loopback, scripted)
// LLM, run (a) as N children of one root through the extension, and (b) one after another as
// plain `pi --mode json` runs — side by side in one run, alternated, medians. Everything is the
// real pi; only the LLM is scripted.
import http from "node:http";
import { PI, REPO_ROOT, benchPiHome, fmt, median, rounds, row, sseBody, timed } from "./support.mjs";

const DELAY_MS = Number(process.env.BENCH_DELAY_MS ?? 1500);

const toolMessages = (body) => (body.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content));
const agentOf = (body) => /You are the agent (\/root\/[a-z0-9_/]+) /.exec(JSON.stringify(body.messages?.[0]?.content ?? ""))?.[1];

function answerFor(children) {
  return (body) => {
    const agent = agentOf(body);
    if (agent || !body.tools?.some((t) => t.function.name === "spawn_agent")) return { text: "task done", delayMs: DELAY_MS };
    const results = toolMessages(body);
    if (results.length === 0) {
      return { calls: Array.from({ length: children }, (_, i) => ["spawn_agent", { task_name: `task_${i}`, fork_turns: "none", message: `do task ${i}` }]) };
    }
    const notices = results.reduce((n, text) => n + (text.match(/\\?"type\\?":\\?"completed\\?"/g)?.length ?? 0), 0);
    return notices < children ? { calls: [["wait_agent", { timeout_ms: 60000 }]] } : { text: "all done" };
  };
}

export async function run() {
  let answer = answerFor(1);
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const { delayMs = 0, ...body } = answer(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      setTimeout(() => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(sseBody(body));
      }, delayMs);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { home, env, cleanup } = benchPiHome(`http://127.0.0.1:${server.address().port}/v1`);
  const points = [];
  try {
    for (const children of [2, 3]) {
      answer = answerFor(children);
      const samples = { tree: [], sequential: [] };
      for (let round = 0; round < rounds(3); round++) {
        samples.tree.push(await timed(PI, ["--mode", "json", "-np", "--no-session", "-e", REPO_ROOT, "fan out"], { cwd: home, env }));
        let sequential = 0;
        for (let i = 0; i < children; i++) sequential += await timed(PI, ["--mode", "json", "-np", "--no-session", `do task ${i}`], { cwd: home, env });
        samples.sequential.push(sequential);
      }
      const tree = median(samples.tree);
      const sequential = median(samples.sequential);
      points.push({ input: `${children} tasks`, value: fmt.s(tree), baseline: fmt.s(sequential), ratio: fmt.x(tree / sequential) });
    }
  } finally {
    server.close();
    cleanup();
  }
  return [
    row({
      id: "tree",
      what: `what a tree buys: N tasks of ${DELAY_MS} ms LLM wait as children of one root vs one after another`,
      target: "(informative)",
      points,
      note: `Everything real pi; the loopback LLM answers each child after ${DELAY_MS} ms. Measured: the root's whole run (its own LLM turns, the spawns, wait_agent, the children through wrappers). Baseline: the same tasks as plain \`pi --mode json\` runs one after another.`,
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
