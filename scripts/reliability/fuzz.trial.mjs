// Random mutations of a valid meta.json: every outcome must be a clean exit 0/1/2 with one
// line per problem, never a crash, a stack trace or a hang.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { DEBUG, killLeftovers, log, makeCase, pool, settleLeftovers, startWrapper } from "./support.mjs";

/** Random mutations of a valid meta.json: every outcome must be a clean exit 0/1/2, never a crash or a hang. */
export async function fuzz(cases) {
  const valid = {
    runId: "f",
    task: "t",
    cwd: ".",
    resultPath: "out/result.json",
    eventsPath: "out/events.jsonl",
    graceMs: 300,
  };
  // Bad values, and good ones (so some mutants are valid and must run).
  // Only paths inside the case folder: a fuzzed resultPath must never point at the system.
  const values = [
    null,
    true,
    0,
    -1,
    1e308,
    "",
    "x",
    "..",
    "out",
    [],
    ["a", 1],
    {},
    { a: 1 },
    "\u0000",
    "a\u0000b",
    "meta.json",
    2 ** 53,
    "out/other.json",
    5000,
    ["read"],
    { A: "1" },
    "low",
    "-- @x /y",
    1,
    false,
  ];
  const keys = [
    ...Object.keys(valid),
    "tools",
    "extensions",
    "env",
    "thinking",
    "timeoutMs",
    "systemPromptPath",
    "sessionPath",
    "version",
    "noExtensions",
    "stdoutPath",
  ];
  // mulberry32, seeded: the same mutants on every run, so a failure can be replayed.
  let seed = 42;
  const rand = (n) => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
  const texts = [];
  for (let i = 0; i < cases; i++) {
    const meta = { ...valid };
    const edits = 1 + rand(3);
    for (let e = 0; e < edits; e++) {
      const key = keys[rand(keys.length)];
      if (rand(4) === 0) delete meta[key];
      else meta[key] = values[rand(values.length)];
    }
    if (rand(10) === 0) meta.resultPath = "fifo";
    let text = JSON.stringify(meta);
    if (rand(6) === 0) text = text.slice(0, rand(text.length)); // truncation
    if (rand(8) === 0)
      text = Buffer.concat([Buffer.from(text.slice(0, 5)), Buffer.from([0xff, 0xfe]), Buffer.from(text.slice(5))]);
    texts.push(text);
  }
  const tally = { 0: 0, 1: 0, 2: 0, other: 0, multiLine: 0, stack: 0, hung: 0 };
  await pool(texts, async (text) => {
    const dir = makeCase({}, text);
    // A named pipe: a path that exists and is not a regular file (the wrapper must refuse it as resultPath).
    spawnSync("mkfifo", [path.join(dir, "fifo")]);
    const exit = await startWrapper(dir, { steps: [{ echoTask: true }] }).done;
    if (exit.hung) tally.hung++;
    if (DEBUG) log(`fuzz ${exit.code}: ${exit.stderr.trim()}`);
    if ([0, 1, 2].includes(exit.code)) tally[exit.code]++;
    else tally.other++;
    // Every problem is a line of its own (`subagent-wrapper: …`); warnings may precede them.
    if (
      exit.code === 2 &&
      !exit.stderr
        .trim()
        .split("\n")
        .every((line) => /^subagent-wrapper: \S/.test(line))
    )
      tally.multiLine++;
    if (/\bat .*\.js:\d+/.test(exit.stderr)) tally.stack++;
  });
  tally.left = (await settleLeftovers()).length;
  killLeftovers();
  return tally;
}
