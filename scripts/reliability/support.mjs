// What every reliability trial shares: the knobs (environment variables), the tag every
// process started here carries (so left-over processes are counted from /proc, by the one
// reader in lib/process), and starting the wrapper on a temp case with the fake pi.
// Imported by scripts/reliability.mjs once it has built dist/.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { processesWithEnvSync } from "../../dist/lib/process.js";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const WRAPPER = path.join(ROOT, "bin", "subagent-wrapper");
export const FAKE_PI = path.join(ROOT, "fixtures", "fake-pi", "pi");
export const TAG_ENV = "PSA_RELIABILITY_TAG";
export const TAG = randomUUID();
const num = (name, fallback) => {
  const value = Number(process.env[name]);
  return Number.isInteger(value) && value >= 0 ? value : fallback;
};
/** Trial counts: the environment's RELIABILITY_* variables, else these defaults. */
export const TRIALS = {
  kill: num("RELIABILITY_KILL_TRIALS", 240),
  term: num("RELIABILITY_TERM_TRIALS", 100),
  orphan: num("RELIABILITY_ORPHAN_TRIALS", 20),
  orphanKind: num("RELIABILITY_ORPHAN_KIND_TRIALS", 10),
  path: num("RELIABILITY_PATH_TRIALS", 3),
  loadRounds: num("RELIABILITY_LOAD_ROUNDS", 3),
  fuzz: num("RELIABILITY_FUZZ_CASES", 300),
  diskFull: num("RELIABILITY_DISKFULL_TRIALS", 10),
  rootKills: num("RELIABILITY_ROOT_KILL_ROUNDS", 5),
  startKills: num("RELIABILITY_START_KILL_TRIALS", 5),
};
export const LOAD_WRAPPERS = 50;
export const RESTORE_AGENTS = 64;
export const CONCURRENCY = 4;
export const DEBUG = Boolean(process.env.RELIABILITY_DEBUG);

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
export const median = (values) =>
  values.length ? [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] : 0;
export const max = (values) => (values.length ? Math.max(...values) : 0);
export const log = (line) => process.stderr.write(`reliability: ${line}\n`);

// --- processes ----------------------------------------------------------------------------

/** Live (non-zombie) processes carrying this run's tag. */
const leftovers = () => processesWithEnvSync(`${TAG_ENV}=${TAG}`);

export async function settleLeftovers(ms = 10_000) {
  const deadline = Date.now() + ms;
  let left = leftovers();
  while (left.length && Date.now() < deadline) {
    await sleep(100);
    left = leftovers();
  }
  return left;
}

export function killLeftovers() {
  for (const pid of leftovers()) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
}

export const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "psa-reliability-script-"));
// Whoever imports this (the reliability script, a bench, a test) leaves no scratch behind.
process.once("exit", () => fs.rmSync(scratch, { recursive: true, force: true }));
const baseEnv = { ...process.env, [TAG_ENV]: TAG, PI_SUBAGENTS_PI_BIN: FAKE_PI, TMPDIR: scratch };

/**
 * The run folders (`pi-subagent-run-<pid>-…`: the task file, the limits' private inbox) that
 * the wrappers of `pids` left in the temp folder every wrapper here shares (TMPDIR).
 */
export function runFoldersLeft(pids) {
  const prefixes = pids.map((pid) => `pi-subagent-run-${pid}-`);
  return fs.readdirSync(scratch).filter((name) => prefixes.some((prefix) => name.startsWith(prefix))).length;
}

/** A temp case dir with meta.json (artifacts under out/). */
export function makeCase(overrides = {}, metaText) {
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
export function startWrapper(dir, scenario, extraEnv = {}) {
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

export const readResult = (dir) => {
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
export const filesEndingWith = (dir, ending) =>
  fs.existsSync(path.join(dir, "out"))
    ? fs.readdirSync(path.join(dir, "out")).filter((n) => n.endsWith(ending)).length
    : 0;
export const tempFiles = (dir) => filesEndingWith(dir, ".tmp");

export async function pool(items, worker) {
  const out = [];
  for (let i = 0; i < items.length; i += CONCURRENCY)
    out.push(...(await Promise.all(items.slice(i, i + CONCURRENCY).map(worker))));
  return out;
}

/** Every phase of a run takes a while: start-up, streaming, a lingering child after its answer. */
export const BUSY = {
  steps: [
    { tool: { id: "t1", name: "bash", args: { command: "ls" } } },
    { sleep: 100 },
    { bigLine: { type: "garbage", bytes: 200_000 } },
    { sleep: 100 },
    { assistant: { text: "done", stopReason: "stop" }, partials: 20 },
    { linger: null },
  ],
};
export const LOAD_TASK_EXTENSION = { FAKE_PI_LOAD_EXTENSIONS: "task-extension.js" };
