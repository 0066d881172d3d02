#!/usr/bin/env node
// Re-measures the reliability figures and writes docs/reliability.md.
//  1. runs the vitest suite test/reliability (the 7 areas, as in `npm test`);
//  2. runs the heavier loops that do not fit in `npm test`: SIGKILL and SIGTERM at random
//     moments (atomicity), SIGKILL orphan timing, SIGKILL with children that are not a
//     cooperating pi and artifact paths that used to hang (scripts/reliability-wrapper-cases.mjs),
//     50 concurrent wrappers in several rounds, and a meta.json mutation fuzz; for the
//     extension, the tree directory's disk filling while children finish (a tmpfs, when this
//     runs as root) and a restore of 64 agents whose wrapper.pid holds a live pid that is not
//     their wrapper;
//  3. counts processes left over from /proc (every process started here carries a tag in
//     its environment) and writes the figures.
// Options (env): RELIABILITY_KILL_TRIALS (default 240), RELIABILITY_TERM_TRIALS (100),
// RELIABILITY_ORPHAN_TRIALS (20), RELIABILITY_ORPHAN_KIND_TRIALS (10 per kind),
// RELIABILITY_PATH_TRIALS (3 per case), RELIABILITY_LOAD_ROUNDS (3), RELIABILITY_FUZZ_CASES (300),
// RELIABILITY_DISKFULL_TRIALS (10), RELIABILITY_SKIP_VITEST=1, RELIABILITY_DEBUG=1 (one line per trial).
import { spawn, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fillDisk, mountTmpfs } from "./full-disk.mjs";
import { fsyncCost, GONE_WITHIN_MS, orphanKinds, pathCases, wrapperCaseSection } from "./reliability-wrapper-cases.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const WRAPPER = path.join(ROOT, "bin", "subagent-wrapper");
const FAKE_PI = path.join(ROOT, "fixtures", "fake-pi", "pi");
const DOC = path.join(ROOT, "docs", "reliability.md");
const TAG_ENV = "PSA_RELIABILITY_TAG";
const TAG = randomUUID();
const num = (name, fallback) => {
  const value = Number(process.env[name]);
  return Number.isInteger(value) && value >= 0 ? value : fallback;
};
const KILL_TRIALS = num("RELIABILITY_KILL_TRIALS", 240);
const TERM_TRIALS = num("RELIABILITY_TERM_TRIALS", 100);
const ORPHAN_TRIALS = num("RELIABILITY_ORPHAN_TRIALS", 20);
const ORPHAN_KIND_TRIALS = num("RELIABILITY_ORPHAN_KIND_TRIALS", 10);
const PATH_TRIALS = num("RELIABILITY_PATH_TRIALS", 3);
const LOAD_ROUNDS = num("RELIABILITY_LOAD_ROUNDS", 3);
const LOAD_WRAPPERS = 50;
const FUZZ_CASES = num("RELIABILITY_FUZZ_CASES", 300);
const DISKFULL_TRIALS = num("RELIABILITY_DISKFULL_TRIALS", 10);
const RESTORE_AGENTS = 64;
const CONCURRENCY = 4;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (values) => (values.length ? [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] : 0);
const max = (values) => (values.length ? Math.max(...values) : 0);
const log = (line) => process.stderr.write(`reliability: ${line}\n`);

// --- processes ----------------------------------------------------------------------------

/** Live (non-zombie) processes carrying this run's tag. */
function leftovers() {
  const needle = Buffer.from(`${TAG_ENV}=${TAG}\0`);
  const found = [];
  for (const entry of fs.existsSync("/proc") ? fs.readdirSync("/proc") : []) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue;
      if (fs.readFileSync(`/proc/${pid}/environ`).includes(needle)) found.push(pid);
    } catch {
      // gone, or not ours
    }
  }
  return found;
}

async function settleLeftovers(ms = 10_000) {
  const deadline = Date.now() + ms;
  let left = leftovers();
  while (left.length && Date.now() < deadline) {
    await sleep(100);
    left = leftovers();
  }
  return left;
}

function killLeftovers() {
  for (const pid of leftovers()) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
}

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "psa-reliability-script-"));
const baseEnv = { ...process.env, [TAG_ENV]: TAG, PI_SUBAGENTS_PI_BIN: FAKE_PI, TMPDIR: scratch };

/** A temp case dir with meta.json (artifacts under out/). */
function makeCase(overrides = {}, metaText) {
  const dir = fs.mkdtempSync(path.join(scratch, "case-"));
  const meta = {
    runId: "run-1",
    task: "inspect auth",
    cwd: ".",
    resultPath: "out/result.json",
    eventsPath: "out/events.jsonl",
    stdoutPath: "out/stdout.log",
    stderrPath: "out/stderr.log",
    transcriptPath: "out/transcript.md",
    graceMs: 300,
    ...overrides,
  };
  fs.writeFileSync(path.join(dir, "meta.json"), metaText ?? JSON.stringify(meta));
  return dir;
}

/** Starts the wrapper on a case; `done` resolves with code, signal, stderr, ms. */
function startWrapper(dir, scenario, extraEnv = {}) {
  const started = Date.now();
  const child = spawn(process.execPath, [WRAPPER, path.join(dir, "meta.json")], {
    cwd: dir,
    env: {
      ...baseEnv,
      FAKE_PI_SCRIPT: JSON.stringify(scenario),
      FAKE_PI_RECORD: path.join(dir, "record.json"),
      ...extraEnv,
    },
    stdio: ["ignore", "ignore", "pipe"],
    detached: true,
  });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
  const hard = setTimeout(() => {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // gone
    }
  }, 60_000);
  const done = new Promise((resolve) =>
    child.on("close", (code, signal) => {
      clearTimeout(hard);
      resolve({ code, signal, stderr, ms: Date.now() - started, hung: Date.now() - started >= 60_000 });
    }),
  );
  return { pid: child.pid, done };
}

const readResult = (dir) => {
  const file = path.join(dir, "out", "result.json");
  if (!fs.existsSync(file)) return { state: "absent" };
  const text = fs.readFileSync(file, "utf8");
  try {
    const result = JSON.parse(text);
    return result && result.version === 1 && typeof result.status === "string" && typeof result.endedAt === "string"
      ? { state: "complete", result }
      : { state: "partial" };
  } catch {
    return { state: "partial" };
  }
};
const filesEndingWith = (dir, ending) =>
  fs.existsSync(path.join(dir, "out"))
    ? fs.readdirSync(path.join(dir, "out")).filter((n) => n.endsWith(ending)).length
    : 0;
const tempFiles = (dir) => filesEndingWith(dir, ".tmp");

async function pool(items, worker) {
  const out = [];
  for (let i = 0; i < items.length; i += CONCURRENCY)
    out.push(...(await Promise.all(items.slice(i, i + CONCURRENCY).map(worker))));
  return out;
}

// --- 1. the vitest suite ------------------------------------------------------------------

function runVitest() {
  const jsonFile = path.join(scratch, "vitest.json");
  const started = Date.now();
  const proc = spawnSync(
    path.join(ROOT, "node_modules", ".bin", "vitest"),
    ["run", "test/reliability", "--reporter=default", "--reporter=json", `--outputFile.json=${jsonFile}`],
    { cwd: ROOT, encoding: "utf8", env: process.env, maxBuffer: 64 * 1024 * 1024 },
  );
  const report = fs.existsSync(jsonFile) ? JSON.parse(fs.readFileSync(jsonFile, "utf8")) : { testResults: [] };
  const tests = [];
  for (const file of report.testResults) {
    for (const test of file.assertionResults) {
      tests.push({
        file: path.basename(file.name),
        title: [...test.ancestorTitles, test.title].join(" › "),
        status: test.status,
        ms: Math.round(test.duration ?? 0),
      });
    }
  }
  const marker = "[reliability] ";
  const figures = `${proc.stdout ?? ""}\n${proc.stderr ?? ""}`
    .split("\n")
    .filter((line) => line.includes(marker))
    .map((line) => line.slice(line.indexOf(marker) + marker.length).trim());
  return { tests, figures, ms: Date.now() - started, ok: proc.status === 0 };
}

// --- 2. heavier loops ---------------------------------------------------------------------

/** Every phase of a run takes a while: start-up, streaming, a lingering child after its answer. */
const BUSY = {
  steps: [
    { tool: { id: "t1", name: "bash", args: { command: "ls" } } },
    { sleep: 100 },
    { bigLine: { type: "garbage", bytes: 200_000 } },
    { sleep: 100 },
    { assistant: { text: "done", stopReason: "stop" }, partials: 20 },
    { linger: null },
  ],
};
const LOAD_TASK_EXTENSION = { FAKE_PI_LOAD_EXTENSIONS: "task-extension.js" };

/** How long an undisturbed BUSY run takes here, CONCURRENCY at a time (kills are spread over it). */
async function calibrate() {
  const times = [];
  for (let i = 0; i < 2; i++) {
    const runs = await Promise.all(
      Array.from({ length: CONCURRENCY }, () => startWrapper(makeCase(), BUSY, LOAD_TASK_EXTENSION).done),
    );
    times.push(...runs.map((run) => run.ms));
  }
  return median(times);
}

async function killTrials(signal, trials, spanMs) {
  const tally = { complete: 0, absent: 0, partial: 0, temps: 0, reserves: 0, hung: 0, statuses: {} };
  const dirs = [];
  await pool(
    Array.from({ length: trials }, (_, i) => Math.round((i / trials) * spanMs * 1.3)),
    async (delay) => {
      const dir = makeCase();
      dirs.push(dir);
      const wrapper = startWrapper(dir, BUSY, LOAD_TASK_EXTENSION);
      await sleep(delay);
      try {
        process.kill(wrapper.pid, signal);
      } catch {
        // already finished
      }
      const exit = await wrapper.done;
      if (exit.hung) tally.hung++;
      const { state, result } = readResult(dir);
      if (process.env.RELIABILITY_DEBUG)
        log(`${signal} at ${delay} ms: ${state} ${JSON.stringify(exit)} ${fs.readdirSync(dir)}`);
      tally[state]++;
      if (result) tally.statuses[result.status] = (tally.statuses[result.status] ?? 0) + 1;
      // SIGTERM is handled: once a child was started, the wrapper must leave a result.
      if (signal === "SIGTERM" && state === "absent") {
        if (fs.existsSync(path.join(dir, "record.json"))) tally.absentAfterChild = (tally.absentAfterChild ?? 0) + 1;
        else tally.absentBeforeChild = (tally.absentBeforeChild ?? 0) + 1;
      }
    },
  );
  tally.left = (await settleLeftovers()).length;
  // A SIGKILLed wrapper cannot remove its result.json reserve, nor the temp file of a result
  // write it was killed in; its orphan guard does, so both are counted once the guards are done.
  tally.reserves = dirs.reduce((n, dir) => n + filesEndingWith(dir, ".reserve"), 0);
  tally.temps = dirs.reduce((n, dir) => n + tempFiles(dir), 0);
  killLeftovers();
  return tally;
}

async function orphanTrials(trials) {
  const outlived = [];
  let left = 0;
  for (let i = 0; i < trials; i++) {
    const dir = makeCase();
    const wrapper = startWrapper(
      dir,
      { steps: [{ spawnGrandchild: { sleepMs: 60_000 } }, { sleep: 60_000 }, { echoTask: true }] },
      LOAD_TASK_EXTENSION,
    );
    const deadline = Date.now() + 15_000;
    while (!fs.existsSync(path.join(dir, "record.json")) && Date.now() < deadline) await sleep(20);
    await sleep(100 + Math.random() * 300);
    process.kill(wrapper.pid, "SIGKILL");
    await wrapper.done;
    const killed = Date.now();
    const rest = await settleLeftovers(10_000);
    outlived.push(Date.now() - killed);
    left += rest.length;
    killLeftovers();
  }
  return { outlived, left };
}

async function loadRounds(rounds) {
  const figures = [];
  for (let round = 0; round < rounds; round++) {
    const dirs = Array.from({ length: LOAD_WRAPPERS }, (_, i) =>
      makeCase({ runId: `load-${i}`, task: `task number ${i}` }),
    );
    const started = Date.now();
    const exits = await Promise.all(
      dirs.map(
        (dir) =>
          startWrapper(dir, { steps: [{ tool: { id: "t1", name: "read" } }, { sleep: 200 }, { echoTask: true }] }).done,
      ),
    );
    const ms = Date.now() - started;
    let correct = 0;
    dirs.forEach((dir, i) => {
      const { result } = readResult(dir);
      const events = fs
        .readFileSync(path.join(dir, "out", "events.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      if (
        exits[i].code === 0 &&
        result?.status === "completed" &&
        result.runId === `load-${i}` &&
        result.finalText === `task number ${i}` &&
        events[0].runId === `load-${i}`
      )
        correct++;
    });
    figures.push({ ms, correct, left: (await settleLeftovers()).length });
    killLeftovers();
  }
  return figures;
}

/** Random mutations of a valid meta.json: every outcome must be a clean exit 0/1/2, never a crash or a hang. */
async function fuzz(cases) {
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
    if (process.env.RELIABILITY_DEBUG) log(`fuzz ${exit.code}: ${exit.stderr.trim()}`);
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

// --- 3. the extension: a full disk, pids that are not wrappers --------------------------

const dist = (file) => import(path.join(ROOT, "dist", "extension", file));
const TREE_LIMITS = { maxActiveChildTurns: 3, maxDepth: 3, maxSpawns: 64, turnTimeoutMs: 60_000 };

/** A record as spawn_agent writes it, for `/root/<name>`. */
function agentRecord(name, seq, overrides = {}) {
  const usage = {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
  const now = new Date().toISOString();
  return {
    version: 1,
    kind: "agent",
    path: `/root/${name}`,
    parent: "/root",
    taskName: name,
    nickname: `N${seq}`,
    role: "default",
    model: "fake/fast",
    reasoning: "medium",
    activeTools: [],
    extensions: [],
    status: "pending_init",
    health: "healthy",
    sessionPath: "",
    runs: [],
    usage,
    spawnSeq: seq,
    spawnedAt: now,
    updatedAt: now,
    inbox: [{ kind: "NEW_TASK", from: "/root", text: `task ${name}`, sentAt: now }],
    followupQueued: false,
    undelivered: [],
    ...overrides,
  };
}

/**
 * The extension's runtime (from dist/) with real wrappers running the fake pi, its tree
 * directory on a small tmpfs that is filled at a moment spread over the children's turns:
 * every turn must still give exactly one notice, nothing may reject unhandled or hang, and
 * every slot must be free again.
 */
async function diskFullTrials(trials) {
  const disk = mountTmpfs("32m");
  if ("skip" in disk) return { skipped: disk.skip };
  const mountDir = disk.dir;
  const { TreeDir } = await dist("tree/tree-dir.js");
  const { TreeRuntime } = await dist("turns/runtime.js");
  const unhandled = [];
  const onUnhandled = (reason) => unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  const saved = { ...process.env };
  Object.assign(process.env, {
    [TAG_ENV]: TAG,
    PI_SUBAGENTS_PI_BIN: FAKE_PI,
    TMPDIR: scratch,
    FAKE_PI_SCRIPT: JSON.stringify({ steps: [{ sleep: 300 }, { assistant: { text: "done", stopReason: "stop" } }] }),
  });
  const tally = { trials, turns: 0, notices: 0, errored: 0, completed: 0, other: 0, hung: 0, slotsLeft: 0, lines: 0 };
  try {
    for (let trial = 0; trial < trials; trial++) {
      const root = path.join(mountDir, `tree-${trial}`);
      const tree = new TreeDir(root);
      await tree.init("session");
      const lines = [];
      const rt = new TreeRuntime({ self: "/root", isRoot: true, treeDir: root }, tree, TREE_LIMITS, scratch, {
        hooks: { problem: (line) => lines.push(line) },
      });
      for (let i = 1; i <= 3; i++) {
        const state = { record: agentRecord(`child${i}`, i) };
        rt.children.set(state.record.path, state);
        await rt.requestTurn(state, "spawn");
        tally.turns++;
      }
      await sleep(Math.round((trial / Math.max(1, trials - 1)) * 2500));
      fillDisk(mountDir);
      const deadline = Date.now() + 30_000;
      while (rt.mailbox.pending < 3 && Date.now() < deadline) await sleep(50);
      const notices = rt.mailbox.take(10);
      if (notices.length < 3) tally.hung++;
      tally.notices += notices.length;
      for (const notice of notices) {
        if (notice.type === "errored") tally.errored++;
        else if (notice.type === "completed") tally.completed++;
        else tally.other++;
      }
      tally.slotsLeft += rt.slots.activeCount;
      tally.lines += lines.length;
      if (process.env.RELIABILITY_DEBUG)
        log(`disk full trial ${trial}: ${notices.map((n) => `${n.type} ${n.reason ?? ""}`).join(" | ")}`);
      await rt.shutdown();
      fs.rmSync(path.join(mountDir, "filler"), { force: true });
      fs.rmSync(root, { recursive: true, force: true });
    }
  } finally {
    process.off("unhandledRejection", onUnhandled);
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
  }
  tally.unhandled = unhandled.length;
  tally.left = (await settleLeftovers()).length;
  killLeftovers();
  disk.unmount();
  return tally;
}

/** A restore of agents left running whose wrapper.pid names this (live, non-wrapper) process. */
async function restoreTiming(agents) {
  const { TreeDir } = await dist("tree/tree-dir.js");
  const { TreeRuntime } = await dist("turns/runtime.js");
  const { restore } = await dist("tree/persistence.js");
  const root = fs.mkdtempSync(path.join(scratch, "restore-"));
  const tree = new TreeDir(root);
  await tree.init("session");
  for (let i = 1; i <= agents; i++) {
    const record = agentRecord(`agent${i}`, i, { status: "running", runs: ["0001-spawn"], inbox: [] });
    const runDir = path.join(tree.agentDir(record.path), "runs", "0001-spawn");
    fs.mkdirSync(runDir, { recursive: true });
    // A file of the older kind, the bare pid: the check falls back to the process's command line.
    fs.writeFileSync(path.join(runDir, "wrapper.pid"), `${process.pid}\n`);
    await tree.writeRecord(record);
  }
  const rt = new TreeRuntime({ self: "/root", isRoot: true, treeDir: root }, tree, TREE_LIMITS, scratch, {
    hooks: { problem: () => undefined },
  });
  const started = Date.now();
  await restore(rt, []);
  const ms = Date.now() - started;
  const interrupted = [...rt.children.values()].filter(({ record }) => record.status === "interrupted").length;
  return { agents, ms, interrupted };
}
/** What scripts/reliability-wrapper-cases.mjs needs of this script. */
const wrapperCtx = { makeCase, startWrapper, readResult, settleLeftovers, killLeftovers, sleep, log, scratch };

// --- main ---------------------------------------------------------------------------------

const build = spawnSync(path.join(ROOT, "node_modules", ".bin", "tsc"), ["-p", "."], { cwd: ROOT, stdio: "inherit" });
if (build.status !== 0) {
  console.error("reliability: the build (tsc -p .) failed");
  process.exit(1);
}
const startedAt = new Date();
let suite = { tests: [], figures: [], ms: 0, ok: true, skipped: true };
if (process.env.RELIABILITY_SKIP_VITEST !== "1") {
  log("running the vitest suite test/reliability …");
  suite = { ...runVitest(), skipped: false };
}
log("calibrating …");
const spanMs = await calibrate();
log(
  `a busy run takes ${spanMs} ms at ${CONCURRENCY} at a time; kills are spread over 0–${Math.round(spanMs * 1.3)} ms`,
);
log(`SIGKILL at random moments × ${KILL_TRIALS} …`);
const kills = await killTrials("SIGKILL", KILL_TRIALS, spanMs);
log(`SIGTERM at random moments × ${TERM_TRIALS} …`);
const terms = await killTrials("SIGTERM", TERM_TRIALS, spanMs);
log(`SIGKILL orphan timing × ${ORPHAN_TRIALS} …`);
const orphans = await orphanTrials(ORPHAN_TRIALS);
log(`SIGKILL with children that are not a cooperating pi × ${ORPHAN_KIND_TRIALS} per kind …`);
const kinds = await orphanKinds(wrapperCtx, ORPHAN_KIND_TRIALS);
log(`artifact paths that used to hang × ${PATH_TRIALS} per case …`);
const paths = await pathCases(wrapperCtx, PATH_TRIALS);
const fsync = await fsyncCost(path.join(scratch, "fsync"), median);
log(`${LOAD_WRAPPERS} concurrent wrappers × ${LOAD_ROUNDS} rounds …`);
const load = await loadRounds(LOAD_ROUNDS);
log(`meta.json fuzz × ${FUZZ_CASES} …`);
const fuzzed = await fuzz(FUZZ_CASES);
log(`the tree directory's disk fills while children finish × ${DISKFULL_TRIALS} …`);
const diskFull = await diskFullTrials(DISKFULL_TRIALS);
log(`restore of ${RESTORE_AGENTS} agents whose wrapper.pid is a live non-wrapper …`);
const restored = await restoreTiming(RESTORE_AGENTS);
fs.rmSync(scratch, { recursive: true, force: true });

// --- the document -------------------------------------------------------------------------

const passed = suite.tests.filter((t) => t.status === "passed").length;
const statusList = (statuses) =>
  Object.entries(statuses)
    .map(([s, n]) => `${s} ${n}`)
    .join(", ") || "—";
const totalLeft =
  kills.left +
  terms.left +
  orphans.left +
  kinds.reduce((n, r) => n + r.survivors, 0) +
  paths.reduce((n, r) => n + r.left, 0) +
  load.reduce((n, r) => n + r.left, 0) +
  fuzzed.left +
  (diskFull.left ?? 0);
const kindTrials = kinds.reduce((n, r) => n + r.trials, 0);
const pathRows = paths.filter((r) => !r.skipped);
const pathTrials = pathRows.reduce((n, r) => n + r.trials, 0);
const pathHung = paths.reduce((n, r) => n + r.hung, 0);
const pathWrong = pathRows.reduce((n, r) => n + r.trials - r.ok, 0);

const figure = (prefix) => suite.figures.find((f) => f.startsWith(prefix))?.slice(prefix.length) ?? "(suite skipped)";
const diskFullRow = diskFull.skipped
  ? `skipped: ${diskFull.skipped}`
  : `${diskFull.trials} trials × 3 turns, the disk filled at moments spread over 0–2500 ms after the turns started: ${diskFull.notices}/${diskFull.turns} notices (errored ${diskFull.errored}, completed ${diskFull.completed}, other ${diskFull.other}), **${diskFull.unhandled} unhandled rejections**, ${diskFull.hung} hung, ${diskFull.slotsLeft} slots left taken, ${diskFull.lines} lines shown`;
const lines = [
  "# Reliability figures",
  "",
  `Generated by \`npm run reliability\` (scripts/reliability.mjs) on ${startedAt.toISOString()}, Node ${process.version}, ${os.cpus().length} CPUs, ${os.platform()}. Re-run it to re-measure; every figure below is counted by the script, none is typed in.`,
  "",
  ...(fs.existsSync("/proc")
    ? []
    : [
        "**This system has no /proc: processes left over were not counted (the figures below say 0 by construction).**",
        "",
      ]),
  'How processes are counted: every process the suite or the script starts carries a random tag in its environment, which wrappers, fake pi children and their grandchildren inherit. "Left over" is the number of live (non-zombie) processes with that tag found in /proc after a scenario has had its bounded time to end.',
  "",
  "## Summary",
  "",
  "| what | figure |",
  "|---|---|",
  `| vitest suite test/reliability | ${suite.skipped ? "skipped" : `${passed}/${suite.tests.length} tests passed in ${(suite.ms / 1000).toFixed(1)} s`} |`,
  `| SIGKILL to the wrapper at moments spread over a run (0–${Math.round(spanMs * 1.3)} ms; a run takes ${spanMs} ms) | ${KILL_TRIALS} trials: ${kills.complete} complete result.json, ${kills.absent} absent, **${kills.partial} partial**, ${kills.temps} temp files left, ${kills.reserves} result reserves left, ${kills.hung} hung |`,
  `| SIGTERM to the wrapper at the same moments | ${TERM_TRIALS} trials: ${terms.complete} complete (${statusList(terms.statuses)}), ${terms.absent} absent (${terms.absentBeforeChild ?? 0} before any child was started, **${terms.absentAfterChild ?? 0} after**), **${terms.partial} partial** |`,
  `| pi outliving a SIGKILLed wrapper | ${ORPHAN_TRIALS} trials: median ${median(orphans.outlived)} ms, max ${max(orphans.outlived)} ms (pi, its grandchild and the orphan guard, which waits 1 s between SIGTERM and SIGKILL) |`,
  `| SIGKILL to the wrapper whose child is not a cooperating pi (${kinds.length} kinds, the last not killed) | ${kindTrials} trials: **${kinds.reduce((n, r) => n + r.survivors, 0)} processes alive ${GONE_WITHIN_MS} ms later**, ${kinds.reduce((n, r) => n + r.hung, 0)} hung |`,
  `| artifact paths that used to hang or follow links (${paths.length} cases${paths.length > pathRows.length ? `, ${paths.length - pathRows.length} skipped: no mount permission` : ""}) | ${pathTrials} trials: ${pathTrials - pathWrong} as documented, **${pathWrong} not**, **${pathHung} hung** |`,
  `| ${LOAD_WRAPPERS} wrappers at once | ${load.map((r, i) => `round ${i + 1}: ${r.correct}/${LOAD_WRAPPERS} correct in ${r.ms} ms`).join("; ")} |`,
  `| meta.json mutation fuzz | ${FUZZ_CASES} cases: exit 0 ×${fuzzed[0]}, exit 1 ×${fuzzed[1]}, exit 2 ×${fuzzed[2]}, other ×${fuzzed.other}; ${fuzzed.multiLine} exit-2 answers with a line that is not one problem, ${fuzzed.stack} stack traces, ${fuzzed.hung} hangs |`,
  `| a tree directory damaged before a restart (the suite's area 8) | ${figure("tree corruption: ")} |`,
  `| the tree directory's disk fills while children finish (extension runtime, real wrappers, a 32 MiB tmpfs) | ${diskFullRow} |`,
  `| restore of ${restored.agents} agents left running whose wrapper.pid holds a live pid that is not their wrapper | ${restored.ms} ms, ${restored.interrupted}/${restored.agents} interrupted (a 10 s wait per agent would be ${restored.agents * 10} s) |`,
  `| processes left over (all loops) | **${totalLeft}** |`,
  "",
  ...wrapperCaseSection(kinds, paths, { median, max }),
  "## The suite, area by area (figures in the test names)",
  "",
  "The suite runs in `npm test`. Area 5's extension part drives the extension's real `TreeRuntime` (capacity slots, mailbox, launcher) which starts real `subagent-wrapper` processes running the fake pi (`PI_SUBAGENTS_PI_BIN`); it does not go through a real pi root or a model. The restart and parent-exit cases run the runtime from `dist/` in a separate node process that the test kills.",
  "",
  "| file | test | result | ms |",
  "|---|---|---|---|",
  ...suite.tests.map((t) => `| ${t.file} | ${t.title.replace(/\|/g, "\\|")} | ${t.status} | ${t.ms} |`),
  "",
  "Figures the suite printed:",
  "",
  ...(suite.skipped ? ["- (suite skipped)"] : suite.figures.map((f) => `- ${f}`)),
  "",
  "## What the figures rest on",
  "",
  "- **Atomicity.** result.json is written to a temp file beside it and renamed (src/lib/atomic-file.ts): a reader sees the old state or the whole new file. A SIGKILL between the temp write and the rename leaves a `.result.json.<pid>.<hex>.tmp` file, which nothing reads and the wrapper's orphan guard removes with the reserve (both start with `.result.json.<pid>.`); the temp-file count above is taken once the guards are done.",
  "- **SIGKILL.** Nothing in a SIGKILLed wrapper runs, so the wrapper starts an orphan guard before pi (src/wrapper/orphan-guard.ts): a `/bin/sh` in a session of its own that holds a pipe from the wrapper. A normal end does the work itself (pi's group, then the run's token, then it releases the guard and exits with nothing left); when the pipe closes without that word, the guard sends SIGTERM, and then SIGKILL (as soon as everything the SIGTERM reached is gone, a second later at most; the SIGKILL round looks for the token once more), to pi's process group (unless told it is gone) and to every process whose /proc environ holds the run's token (`PI_SUBAGENT_RUN_TOKEN`, inherited by everything below pi: this reaches `setsid`, and pi's own bash tool, which runs each command in a session of its own and ends those on SIGTERM but not when SIGKILLed). It does not depend on the child: the kinds above are a bash script, a SIGTERM-trapping script, the fake pi without any extension and a `setsid` sleep. Not covered, by design or by Linux: a process that drops the token from its environment (`env -i`; a test shows it outliving the wrapper), one running as another user (its environ cannot be read), and a SIGKILLed guard. The task extension inside pi (src/in-child/task-extension.ts) still ends pi's group when its parent changes, a second line of defence. The extension's launcher sees the wrapper exit without result.json and records the turn `errored` with the reason `wrapper exited (SIGKILL) without writing result.json` (not `interrupted`, unless the extension itself stopped that turn).",
  "- **Paths.** Artifact paths are checked with calls that cannot block (lstat, statfs, realpath, one-level mkdir; src/lib/file-paths.ts) before the child starts, and the time limit and signal handlers are armed before any file is touched: a path under /proc or /sys, under a regular file, on a read-only mount, or a FIFO is reported unwritable (exit 2 for resultPath) instead of hanging the wrapper. A streamed artifact that is a symlink is refused; result.json's rename replaces one; two artifact paths naming one file (through a symlinked folder or a hard link) are a meta.json error.",
  `- **Power loss.** Atomic writes (result.json, and the extension's records through the same helper) fsync the temp file before the rename and the folder after it, so a power cut cannot leave an empty or missing file where the rename said the new one was. Measured here on the temp folder's file system: ${fsync.durable.toFixed(1)} ms a 2 KiB write with fsync, ${fsync.quick.toFixed(1)} ms without (medians of 40); for one result.json per run and a few records per turn that is kept. bench/startup.bench.mjs measures it again.`,
  "- **Full disk.** 64 KiB are written beside result.json before the child starts; if the ordinary write of result.json fails, the result goes into those blocks (finalText cut to fit if it must be) and is renamed into place. When not even that is possible the wrapper exits 3 (docs/cli.md). Not on a copy-on-write file system, where an overwrite needs new blocks.",
  "- **Parent exit.** Each wrapper gets `PI_SUBAGENTS_PARENT_PID` and interrupts its run within a second of the parent's death; a graceful parent exit (session_shutdown) stops every running turn itself.",
  "- **Restart.** A restored parent waits for the wrappers that outlived the previous process — all at once, to one deadline 10 s away — so the restored status is the run's real outcome; a turn whose wrapper left no result.json is `interrupted` (never `running` forever) with the reason `the parent went away and the turn's wrapper left no result.json`. `wrapper.pid` holds the wrapper's pid with its start time and the boot id (an older file, the bare pid, is checked against the process's command line), so after a reboot or pid reuse a live process that is not the wrapper is not waited for.",
  "- **A damaged tree directory.** Every agent.json, result.json and inbox file read back is checked against the contracts (unknown fields kept); a file that is not a regular file is refused without a blocking open (a named pipe hung pi at start before). A damaged record is reported once in one line and skipped, its files kept; a file where one of the tree's folders belongs is moved aside; restore never throws out of session_start (docs/tools.md, *Damaged records*).",
  "- **A full disk in the tree directory.** A turn's start or end that cannot be written never rejects: one line for the user and, for an end, an `errored` notice whose reason says the record could not be written (the answer kept); the slot is freed. With a wrapper that cannot write result.json either, the reason also says `wrapper exited (…) without writing result.json`.",
  "- **SIGTERM before handlers.** A SIGTERM that reaches the wrapper while node is still loading it (before the CLI installs its handlers) kills it with the default action; no child exists yet, so no result.json is owed (one is owed once a child has been started). From the moment the CLI runs, a signal is remembered and recorded as `interrupted`, and the handlers stay installed until result.json is on disk.",
  "- **What the fuzz found.** A resultPath naming a device (`/dev/null`) was replaced by the atomic rename — run as root, that deleted /dev/null. Atomic writes now refuse a target that exists and is not a regular file, and meta.json whose artifact paths name one file or nest in each other is refused (exit 2). The fuzz only uses paths inside its own case folders (plus a named pipe it makes there).",
  "- **Secrets.** The wrapper and the extension never write environment values: meta.json written by the extension holds only the tree's two variables, and the child's argv never holds the task or a key. The raw logs (stdout.log, stderr.log) are byte copies of what the child printed: if the child itself prints a secret (a tool running `env`, a model repeating a key), it is there, as it would be in a terminal.",
  "",
];
fs.writeFileSync(DOC, `${lines.join("\n")}`);
log(`wrote ${path.relative(ROOT, DOC)}`);
const bad =
  pathHung +
  pathWrong +
  kills.reserves +
  kills.partial +
  terms.partial +
  (terms.absentAfterChild ?? 0) +
  totalLeft +
  kills.hung +
  terms.hung +
  fuzzed.other +
  fuzzed.multiLine +
  fuzzed.stack +
  fuzzed.hung +
  (diskFull.unhandled ?? 0) +
  (diskFull.hung ?? 0) +
  (diskFull.slotsLeft ?? 0) +
  (diskFull.skipped ? 0 : diskFull.turns - diskFull.notices) +
  (restored.agents - restored.interrupted);
process.exit(bad === 0 && suite.ok ? 0 : 1);
