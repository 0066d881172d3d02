#!/usr/bin/env node
// What the wrapper costs on top of pi: the same trivial task run by the real pi directly and
// through `subagent-wrapper`, alternated, against a loopback LLM. Prints medians.
import { writeFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { PI, REPO_ROOT, benchPiHome, median, sseBody, timed } from "./support.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);

const server = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end(sseBody({ text: "hi" }));
  });
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const { home, env, cleanup } = benchPiHome(`http://127.0.0.1:${server.address().port}/v1`);
const meta = path.join(home, "meta.json");
writeFileSync(meta, JSON.stringify({ runId: "bench", task: "say hi", cwd: home, resultPath: "out/result.json", eventsPath: "out/events.jsonl" }));

const samples = { pi: [], wrapper: [] };
try {
  for (let round = 0; round < ROUNDS; round++) {
    samples.pi.push(await timed(PI, ["--mode", "json", "-np", "--no-session", "say hi"], { cwd: home, env }));
    samples.wrapper.push(await timed(process.execPath, [path.join(REPO_ROOT, "bin/subagent-wrapper"), meta], { cwd: home, env }));
  }
} finally {
  server.close();
  cleanup();
}
const pi = median(samples.pi);
const wrapper = median(samples.wrapper);
console.log(`trivial task against a loopback LLM, ${ROUNDS} rounds alternated, medians`);
console.log(`pi --mode json directly        ${pi.toFixed(0).padStart(6)} ms`);
console.log(`subagent-wrapper meta.json     ${wrapper.toFixed(0).padStart(6)} ms`);
console.log(`→ wrapper overhead ${(wrapper - pi).toFixed(0)} ms (${(wrapper / pi).toFixed(2)}× pi alone), result.json and events.jsonl included`);
