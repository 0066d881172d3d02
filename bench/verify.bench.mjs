#!/usr/bin/env node
// Verification (meta.json `verify`, docs/verification.md), three rows from one run:
//  - a check's overhead: the wrapper's round of one command (src/wrapper/verification.ts, with
//    its reuse fingerprint of the workspace, taken while the command runs) against the same
//    `sh -c` run bare;
//  - a reused result at 10 000 files: the round that finds the same content and command;
//  - a repair's first model request: real pi through `subagent-wrapper`, a check that fails
//    once, against a loopback LLM — the failing check's `check` record → the repair's first
//    request (both the machine's epoch clock).
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";
import {
  benchLines,
  benchPiHome,
  fmt,
  median,
  now,
  REPO_ROOT,
  readEvents,
  readResult,
  rounds,
  row,
  runWrapper,
  sseBody,
  tempDir,
  writeMeta,
} from "./support.mjs";

const { Verifier } = await import(pathToFileURL(path.join(REPO_ROOT, "dist/wrapper/verification.js")).href);
const { systemClock } = await import(pathToFileURL(path.join(REPO_ROOT, "dist/lib/clock.js")).href);
const { nodeChildOperations } = await import(pathToFileURL(path.join(REPO_ROOT, "dist/wrapper/child.js")).href);

/** The command of the overhead row: long enough to be a real check, short enough for many rounds. */
const COMMAND = "sleep 0.05";
const FILES = [100, 10_000];
/** How long the repair row's check takes (a short test run): the repair's pi loads meanwhile. */
const CHECK_SECONDS = 2;

/** A git repository of `count` committed files (in folders of 100) and a few untracked ones. */
function repository(dir, count) {
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < count; i++) {
    const folder = path.join(dir, `d${Math.floor(i / 100)}`);
    if (i % 100 === 0) mkdirSync(folder);
    writeFileSync(path.join(folder, `f${i}.txt`), `file ${i}\n`);
  }
  const git = (...args) => execFileSync("git", args, { cwd: dir, stdio: "ignore" });
  git("init", "-q");
  git("add", "-A");
  git("-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "files");
  for (let i = 0; i < 5; i++) writeFileSync(path.join(dir, `new${i}.txt`), `untracked ${i}\n`);
  git("status", "--porcelain"); // the index's stat data is fresh, as in a working checkout
}

/** `sh -c command` run bare, to its exit: the command's own time. */
function bare(command, cwd) {
  return new Promise((resolve) => {
    const started = now();
    const child = spawn("/bin/sh", ["-c", command], { cwd, stdio: "ignore" });
    child.once("exit", () => resolve(now() - started));
  });
}

/** One verification round of `command` in `cwd` (statePath: results kept and reused), timed. */
async function round(cwd, command, statePath) {
  const verifier = new Verifier(
    { run: [command], maxRepairs: 0, timeoutMs: 60_000, statePath },
    {
      meta: { runId: "bench", task: "", cwd, resultPath: "", eventsPath: "" },
      clock: systemClock,
      processes: nodeChildOperations,
      env: { PATH: process.env.PATH ?? "" },
      runToken: "bench",
      record: () => undefined,
      warn: () => undefined,
    },
  );
  const started = now();
  await verifier.afterTurn({ status: "completed", limitReached: false }, "", "pi");
  const ms = now() - started;
  const [check] = verifier.verification.checks;
  return { ms, reused: check?.reused === true };
}

async function measureChecks() {
  const { dir, cleanup } = tempDir("psa-bench-verify-");
  const overhead = [];
  const reuse = [];
  try {
    for (const count of FILES) {
      const repo = path.join(dir, `repo-${count}`);
      repository(repo, count);
      const own = [];
      const wrapped = [];
      const reused = [];
      for (let i = 0; i < rounds(9); i++) {
        own.push(await bare(COMMAND, repo));
        const statePath = path.join(dir, `state-${count}-${i}.json`);
        const first = await round(repo, COMMAND, statePath);
        if (first.reused) throw new Error("a first run was reused");
        wrapped.push(first.ms);
        const again = await round(repo, COMMAND, statePath);
        if (!again.reused) throw new Error(`the same content at ${count} files was not reused`);
        reused.push(again.ms);
      }
      overhead.push({ count, own: median(own), wrapped: median(wrapped) });
      reuse.push({ count, reused: median(reused), run: median(wrapped) });
    }
  } finally {
    cleanup();
  }
  return { overhead, reuse };
}

/** The loopback LLM: every request answered `done` at once, its arrival noted. */
async function startLlm(state) {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      state.requests.push(now());
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(sseBody({ text: "done" }));
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

async function measureRepair(line) {
  const state = { requests: [] };
  const llm = await startLlm(state);
  const { home, env, cleanup } = benchPiHome(llm.url, line);
  const runEnv = { ...env, PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0" };
  const repair = [];
  const first = [];
  try {
    for (let i = 0; i < rounds(5); i++) {
      state.requests = [];
      const dir = path.join(home, `run-${i}`);
      mkdirSync(dir);
      // Fails once (and leaves the file that makes it pass): one repair round. It takes
      // CHECK_SECONDS, as a short test run does.
      const check = `sleep ${CHECK_SECONDS}; test -f passed || { touch passed; echo 'not yet'; exit 1; }`;
      const meta = writeMeta(dir, {
        task: "say done",
        sessionPath: "out/session.jsonl",
        verify: { run: [check], maxRepairs: 1, timeoutMs: 60_000 },
      });
      const launchedAt = now();
      await runWrapper(meta, { env: runEnv });
      const result = readResult(dir);
      const events = readEvents(dir);
      rmSync(dir, { recursive: true, force: true });
      if (result.verification?.status !== "passed" || result.verification.repairs !== 1) {
        throw new Error(
          `${line.label}: verification ${JSON.stringify(result.verification)} (${result.errorMessage ?? ""})`,
        );
      }
      const failed = events.find((e) => e.type === "check" && !e.passed);
      if (state.requests.length !== 2) throw new Error(`${line.label}: ${state.requests.length} requests, expected 2`);
      repair.push(state.requests[1] - failed.ts);
      first.push(state.requests[0] - launchedAt);
    }
  } finally {
    await llm.close();
    cleanup();
  }
  return { repair: median(repair), first: median(first) };
}

export async function run() {
  const { overhead, reuse } = await measureChecks();
  const repairs = [];
  for (const line of benchLines()) {
    const { repair, first } = await measureRepair(line);
    repairs.push({
      input: line.label,
      value: fmt.ms(repair),
      baseline: fmt.ms(first),
      ratio: fmt.x(repair / first),
      pass: repair <= 300,
      raw: repair,
    });
  }
  return [
    row({
      id: "verify-check",
      what: "a check's overhead: the wrapper's round of one command, beyond the command's own time (baseline: the same `sh -c` run bare)",
      target: "median ≤ 100 ms",
      points: overhead.map(({ count, own, wrapped }) => ({
        input: `${count.toLocaleString("en")} files`,
        value: fmt.ms(wrapped - own),
        baseline: fmt.ms(own),
        ratio: fmt.x(wrapped / own),
        pass: wrapped - own <= 100,
        raw: wrapped - own,
      })),
      note: `\`${COMMAND}\` in a git repository of that many committed files and 5 untracked ones, through src/wrapper/verification.ts's round as the wrapper runs it (its own process group, the output's end kept, the result kept in the agent's folder with the workspace's fingerprint: one \`git ls-files -s -m -d -o\`, the differing files hashed) against \`/bin/sh -c\` spawned bare and waited for. A command with no kept result starts at once and the fingerprint is taken while it runs, so the difference is the command's own spawn and the fingerprint's part beyond the command's time (it grows with the files). Medians of ${rounds(9)} rounds.`,
    }),
    row({
      id: "verify-reuse",
      what: "a reused check result: the round that finds the same content and command (baseline: the round that ran it)",
      target: "median ≤ 50 ms at 10 000 files",
      points: reuse.map(({ count, reused, run: ran }) => ({
        input: `${count.toLocaleString("en")} files`,
        value: fmt.ms(reused),
        baseline: fmt.ms(ran),
        ratio: fmt.x(reused / ran),
        pass: count < 10_000 || reused <= 50,
        raw: reused,
      })),
      note: "The same repositories and rounds as the row above: the second round on unchanged content reads the kept results, takes the fingerprint (one git call; what it costs is that call's stat of every tracked file and walk for untracked ones) and reuses the result without starting the command.",
    }),
    row({
      id: "verify-repair",
      what: "a repair round: the failing check ends → the repair's first model request arrives (baseline: the wrapper's launch → the first request)",
      target: "median ≤ 300 ms",
      points: repairs,
      note: `The real pi on each installed line through \`subagent-wrapper\` with \`verify\` (a check that takes ${CHECK_SECONDS} s, like a short test run, and fails once; \`maxRepairs\` 1), against a loopback LLM in the bench process that answers every request at once. From the \`check\` record of the failing check (events.jsonl, the wrapper's clock) to the second request's arrival (the bench server's clock; both the machine's epoch). From the turn's first pi on, the repair's pi loads beside it at the standby's gate (src/wrapper/standby.ts, niced until the first pi's output), so the repair skips pi's start-up, which the baseline holds; a check that ends before the standby has loaded (an instant check on a loaded machine) leaves the repair waiting for the rest of that loading. What is left after the gate is pi's own start (with PI_TIMING=1: its runtime, settings, resources and extensions, then the session and the prompt), about 200 ms of it before pi reads the task on a loaded machine; only a pi started in full and waiting at its prompt would skip it. Medians of ${rounds(5)} runs.`,
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
