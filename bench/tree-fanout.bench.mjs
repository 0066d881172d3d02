#!/usr/bin/env node
// What a tree buys: N independent tasks, each waiting DELAY_MS on its (loopback, scripted)
// LLM, run (a) as N children of one root through the extension, and (b) one after another as
// plain `pi --mode json` runs — side by side in one run, alternated, medians.
import http from "node:http";
import { PI, REPO_ROOT, benchPiHome, median, sseBody, timed } from "./support.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CHILDREN = Number(process.env.BENCH_CHILDREN ?? 3);
const DELAY_MS = Number(process.env.BENCH_DELAY_MS ?? 1500);

const toolMessages = (body) => (body.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content));
const agentOf = (body) => /You are the agent (\/root\/[a-z0-9_/]+) /.exec(JSON.stringify(body.messages?.[0]?.content ?? ""))?.[1];

function answer(body) {
  const agent = agentOf(body);
  if (agent || !body.tools?.some((t) => t.function.name === "spawn_agent")) return { text: "task done", delayMs: DELAY_MS };
  const results = toolMessages(body);
  if (results.length === 0) {
    return { calls: Array.from({ length: CHILDREN }, (_, i) => ["spawn_agent", { task_name: `task_${i}`, fork_turns: "none", message: `do task ${i}` }]) };
  }
  const notices = results.reduce((n, text) => n + (text.match(/"type":"completed"/g)?.length ?? 0), 0);
  return notices < CHILDREN ? { calls: [["wait_agent", { timeout_ms: 60000 }]] } : { text: "all done" };
}

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

const samples = { tree: [], sequential: [] };
try {
  for (let round = 0; round < ROUNDS; round++) {
    samples.tree.push(await timed(PI, ["--mode", "json", "-np", "--no-session", "-e", REPO_ROOT, "fan out"], { cwd: home, env }));
    let sequential = 0;
    for (let i = 0; i < CHILDREN; i++) sequential += await timed(PI, ["--mode", "json", "-np", "--no-session", `do task ${i}`], { cwd: home, env });
    samples.sequential.push(sequential);
  }
} finally {
  server.close();
  cleanup();
}
const tree = median(samples.tree);
const sequential = median(samples.sequential);
console.log(`${CHILDREN} tasks, each waiting ${DELAY_MS} ms on a loopback LLM; ${ROUNDS} rounds, medians`);
console.log(`one after another (${CHILDREN} × pi --mode json)        ${sequential.toFixed(0).padStart(6)} ms`);
console.log(`as ${CHILDREN} children of one root (extension)         ${tree.toFixed(0).padStart(6)} ms   (root included)`);
console.log(`→ the tree finishes in ${(tree / sequential).toFixed(2)}× the time (${(sequential / tree).toFixed(1)}× faster)`);
