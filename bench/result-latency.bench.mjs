#!/usr/bin/env node
// How soon a child's result reaches its parent: a real pi root spawns one child with
// `wait: true`; the loopback LLM answers the child at once with its final text. Measured, on
// one clock (this process's, and the wall-clock stamps the wrapper writes): from the moment
// the LLM has sent the child's final answer to the moment the root's model request that holds
// the notice arrives (an upper bound of "the result is in the parent's mailbox": it adds the
// root pi's handling of the tool result). The stages between come from the child's run files:
// pi's answer seen by the wrapper (events.jsonl `assistant_text`), the run's end (`run_end`,
// after pi's exit), result.json in place (its ctime). Medians.
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { benchLines, benchPiHome, fmt, median, REPO_ROOT, rounds, row, runProcess, sseBody } from "./support.mjs";

const agentOf = (body) =>
  /You are the agent (\/root\/[a-z0-9_/]+) /.exec(JSON.stringify(body.messages?.[0]?.content ?? ""))?.[1];
const hasToolResult = (body) => (body.messages ?? []).some((m) => m.role === "tool");

/** The loopback LLM: the child answers at once; the root spawns with wait, then ends. Stamps what it sent and got. */
async function startLlm() {
  const stamps = { childAnswered: undefined, rootGotNotice: undefined };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const arrived = Date.now();
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
      const agent = agentOf(body);
      let answer;
      if (agent) answer = { text: "child done" };
      else if (!hasToolResult(body))
        answer = { calls: [["spawn_agent", { task_name: "solo", fork_turns: "none", message: "answer", wait: true }]] };
      else {
        stamps.rootGotNotice = arrived;
        answer = { text: "root done" };
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(sseBody(answer), () => {
        if (agent) stamps.childAnswered = Date.now();
      });
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    stamps,
    reset: () => Object.assign(stamps, { childAnswered: undefined, rootGotNotice: undefined }),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** The one run directory of the child under the tree base, and its stamps. */
function childStamps(treesDir) {
  const runs = fs
    .readdirSync(treesDir, { recursive: true })
    .map(String)
    .filter((file) => file.endsWith("result.json"))
    .map((file) => path.join(treesDir, path.dirname(file)));
  if (runs.length !== 1) throw new Error(`expected one run, found ${runs.length}`);
  const events = fs
    .readFileSync(path.join(runs[0], "events.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
  const at = (type) => events.findLast((e) => e.type === type)?.ts;
  // Renamed into place once written and synced: the rename sets the file's ctime.
  const inPlace = fs.statSync(path.join(runs[0], "result.json")).ctimeMs;
  return { answerSeen: at("assistant_text"), runEnd: at("run_end"), resultInPlace: inPlace };
}

export async function run() {
  const llm = await startLlm();
  const lines = benchLines().map((line) => ({ line, ...benchPiHome(llm.url, line), samples: [] }));
  try {
    for (let round = 0; round < rounds(5) + 1; round++) {
      for (const entry of lines) {
        llm.reset();
        const trees = path.join(entry.home, "trees");
        fs.rmSync(trees, { recursive: true, force: true });
        fs.mkdirSync(trees);
        // With a session (not --no-session): its tree directory stays after the root exits, for the stages.
        const args = ["--mode", "json", "-np", "-e", REPO_ROOT, "delegate"];
        const done = await runProcess(entry.line.piCli, args, { cwd: entry.home, env: entry.env, timeoutMs: 120_000 });
        if (done.code !== 0) throw new Error(`root exited ${done.code}: ${done.stderr.slice(-500)}`);
        const { childAnswered, rootGotNotice } = llm.stamps;
        if (childAnswered === undefined || rootGotNotice === undefined) throw new Error("the run missed a step");
        const stages = childStamps(trees);
        if (round > 0)
          entry.samples.push({
            total: rootGotNotice - childAnswered,
            toAnswerSeen: stages.answerSeen - childAnswered,
            toRunEnd: stages.runEnd - childAnswered,
            toResult: stages.resultInPlace - childAnswered,
          });
      }
    }
  } finally {
    await llm.close();
    for (const { cleanup } of lines) cleanup();
  }
  return lines.map(({ line, samples }) => {
    const total = median(samples.map((s) => s.total));
    const stage = (key) => fmt.ms(median(samples.map((s) => s[key])));
    return row({
      id: `result-latency-${line.name}`,
      what: `a child's final answer → the root's model request holding its notice (${line.label})`,
      target: "≤ 30 ms",
      points: [{ input: "1 child", value: fmt.ms(total), baseline: "—", ratio: "—", pass: total <= 30 }],
      note: `Real pi root and child (${line.label}; loopback LLM answering at once); the root spawns one child with wait: true. From the LLM having sent the child's final answer to the root's next model request arriving; medians of ${samples.length}. Stages from the same moment: the wrapper saw the answer ${stage("toAnswerSeen")}, run_end ${stage("toRunEnd")}, result.json in place ${stage("toResult")} (its ctime: renamed once written and synced); the rest is the wrapper's exit, the root reading and recording the result, and the root pi's handling of the tool result (wall-clock stamps).`,
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
