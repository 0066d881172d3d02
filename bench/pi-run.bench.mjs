#!/usr/bin/env node
import { readFileSync } from "node:fs";
// What the wrapper costs on a real pi run: the same task run by the real pi directly and
// through `subagent-wrapper`, alternated, against a loopback LLM that streams answers of
// growing size. Prints medians.
import { benchPiHome, fmt, median, PI, rounds, row, runProcess, startBenchLlm, timed, WRAPPER_BIN, writeMeta } from "./support.mjs";

const PI_VERSION = JSON.parse(readFileSync(new URL("../node_modules/@mariozechner/pi-coding-agent/package.json", import.meta.url), "utf8")).version;
const ANSWER = readFileSync(new URL("../fixtures/reports/long-answer.md", import.meta.url), "utf8");
const SIZES = [
  { label: "2-char answer, 1 delta", text: "hi", deltas: 1 },
  { label: "4 KB answer, 250 deltas", text: ANSWER.slice(0, 4000), deltas: 250 },
  { label: "16 KB answer, 1000 deltas", text: ANSWER.slice(0, 16000), deltas: 1000 },
];

export async function run() {
  let answer = SIZES[0];
  const llm = await startBenchLlm(() => answer);
  const { home, env, cleanup } = benchPiHome(llm.url);
  const meta = writeMeta(home, { task: "say hi", stdoutPath: "out/stdout.log", stderrPath: "out/stderr.log", transcriptPath: "out/transcript.md" });
  const points = [];
  const piped = [];
  try {
    for (const size of SIZES) {
      answer = size;
      const samples = { pi: [], piped: [], wrapper: [] };
      const piArgs = ["--mode", "json", "-np", "--no-session", "say hi"];
      for (let round = 0; round < rounds(9); round++) {
        const direct = () => timed(PI, piArgs, { cwd: home, env }).then((ms) => samples.pi.push(ms));
        const directPiped = async () => {
          const run = await runProcess(PI, piArgs, { cwd: home, env, stdout: "pipe" });
          if (run.code !== 0) throw new Error(`pi exited ${run.code}: ${run.stderr.slice(-300)}`);
          samples.piped.push(run.ms);
        };
        const wrapped = () => timed(process.execPath, [WRAPPER_BIN, meta], { cwd: home, env }).then((ms) => samples.wrapper.push(ms));
        for (const step of round % 2 ? [wrapped, directPiped, direct] : [direct, directPiped, wrapped]) await step();
      }
      const pi = median(samples.pi);
      const wrapper = median(samples.wrapper);
      points.push({ input: size.label, value: fmt.ms(wrapper), baseline: fmt.ms(pi), ratio: fmt.x(wrapper / pi), pass: wrapper / pi <= 1.1 });
      const pipedPi = median(samples.piped);
      piped.push({ input: size.label, value: fmt.ms(wrapper), baseline: fmt.ms(pipedPi), ratio: fmt.x(wrapper / pipedPi) });
    }
  } finally {
    await llm.close();
    cleanup();
  }
  return [
    row({
      id: "pi-run",
      what: "one real pi run through the wrapper",
      target: "≤ 1.10× pi alone",
      points,
      note: `The real pi CLI (node_modules/.bin/pi, ${PI_VERSION}) against a loopback OpenAI-compatible server in the bench process that streams the answer in the given number of deltas (text from fixtures/reports/long-answer.md). Baseline: \`pi --mode json -np --no-session "say hi"\`. Measured: \`node bin/subagent-wrapper meta.json\` for the same task with the extension's artifacts (events, stdout/stderr logs, transcript), result.json included. Wall time from spawn to exit, alternated, medians. The baseline's stdout goes to /dev/null. The wrapper's cost is a fixed ~60 ms: a second Node start (~45 ms, see the start-up row) plus ~15 ms of its own before pi starts and after it exits. On a 0.7 s pi run that is 1.06–1.10×, so repeated runs land on either side of the 1.10 line (a second run at 2× rounds: 1.09×, 1.08×, 1.09×); the ratio falls as runs get longer.`,
    }),
    row({
      id: "pi-run-piped",
      what: "one real pi run through the wrapper, vs pi whose output is read",
      target: "(informative)",
      points: piped,
      note: "The same runs against a third one in each round: pi run directly with its stdout read through a pipe (by the bench process), as any harness that uses pi's JSON must. pi's writes to a pipe block when the 64 KiB pipe buffer is full, so long streams cost pi itself time; the wrapper's own share is what remains.",
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
