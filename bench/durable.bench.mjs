#!/usr/bin/env node
// Durable children, the extension's side, in-process over the runtime from dist/:
// 1. a root's session start with 20 turns running detached in its tree (their wrappers alive,
//    re-attached at restore) against a root with no tree: restore never waits for them;
// 2. a detached turn that ends while the root is attached: result.json written → its notice
//    in the root's mailbox (the re-attached turn's watch on its run directory).
// A "wrapper" here is one live process whose identity every run's wrapper.pid holds: what
// restore reads of a wrapper is that identity, and the end of a turn is its result.json.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { agentRecord } from "../scripts/reliability/extension-support.mjs";
import { fmt, median, now, REPO_ROOT, rounds, row, tempDir } from "./support.mjs";

const dist = (file) => import(path.join(REPO_ROOT, "dist", file));
const LIMITS = { maxActiveChildTurns: 3, maxDepth: 3, maxSpawns: 64, turnTimeoutMs: 1_800_000 };
const DETACHED = 20;

/** A record of a turn running detached: the reliability trials' record, with its run under way. */
function record(name, seq) {
  const at = new Date().toISOString();
  return agentRecord(name, seq, {
    status: "running",
    runs: ["0001-spawn"],
    inbox: [],
    runningParts: [{ kind: "NEW_TASK", from: "/root", text: `task ${name}`, sentAt: at }],
  });
}

function result() {
  const at = new Date().toISOString();
  return {
    version: 1,
    runId: "r",
    status: "completed",
    exitCode: 0,
    finalText: "done",
    usage: {
      input: 1,
      output: 1,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 2,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    turns: 1,
    toolCalls: 0,
    startedAt: at,
    endedAt: at,
    durationMs: 1,
    childExitCode: 0,
    childSignal: null,
    forcedExit: false,
  };
}

/** A tree directory whose `count` agents run, their wrapper the process `wrapper`. */
async function treeWith(count, wrapper) {
  const { TreeDir } = await dist("extension/tree/tree-dir.js");
  const { processIdentity } = await dist("lib/process.js");
  const { dir, cleanup } = tempDir("psa-bench-durable-");
  const tree = new TreeDir(path.join(dir, "tree"));
  await tree.init("session");
  for (let i = 1; i <= count; i++) {
    const rec = record(`agent${i}`, i);
    const runDir = path.join(tree.agentDir(rec.path), "runs", "0001-spawn");
    fs.mkdirSync(runDir, { recursive: true });
    fs.writeFileSync(path.join(runDir, "wrapper.pid"), `${JSON.stringify(processIdentity(wrapper.pid))}\n`);
    await tree.writeRecord(rec);
  }
  return { tree, dir, cleanup };
}

async function restored(tree, dir, hooks = {}) {
  const { TreeRuntime } = await dist("extension/turns/runtime.js");
  const { restore } = await dist("extension/turns/restore.js");
  const rt = new TreeRuntime({ self: "/root", isRoot: true, treeDir: tree.root }, tree, LIMITS, dir, {
    hooks: { problem: () => undefined, ...hooks },
  });
  const started = now();
  await restore(rt, []);
  return { rt, ms: now() - started };
}

export async function run() {
  const wrapper = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  try {
    const n = rounds(9);
    const detached = [];
    const empty = [];
    for (let i = 0; i < n; i++) {
      const withTurns = await treeWith(DETACHED, wrapper);
      const none = await treeWith(0, wrapper);
      const a = await restored(withTurns.tree, withTurns.dir);
      const b = await restored(none.tree, none.dir);
      if ([...a.rt.children.values()].filter((s) => s.phase.name === "running").length !== DETACHED)
        throw new Error("bench: the detached turns were not re-attached");
      detached.push(a.ms);
      empty.push(b.ms);
      // Each runtime stops watching (its turns left running) before its folder goes.
      for (const { rt } of [a, b]) {
        await rt.shutdown("detach");
        await rt.writesSettled();
      }
      withTurns.cleanup();
      none.cleanup();
    }
    const latencies = [];
    const { writeJsonAtomic } = await dist("lib/atomic-file.js");
    for (let i = 0; i < n; i++) {
      const one = await treeWith(1, wrapper);
      let noticed;
      const arrived = new Promise((resolve) => (noticed = resolve));
      const { rt } = await restored(one.tree, one.dir, { noticed: () => noticed(now()) });
      const runDir = path.join(one.tree.agentDir("/root/agent1"), "runs", "0001-spawn");
      const written = now();
      await writeJsonAtomic(path.join(runDir, "result.json"), result());
      latencies.push((await arrived) - written);
      await rt.writesSettled();
      await rt.shutdown("detach");
      await rt.writesSettled();
      one.cleanup();
    }
    const startAdded = median(detached) - median(empty);
    const latency = median(latencies);
    return [
      row({
        id: "durable-start",
        what: `a root's session start (restore) with ${DETACHED} turns running detached in its tree, re-attached (baseline: no tree)`,
        target: "≤ +300 ms",
        points: [
          {
            input: `${DETACHED} detached`,
            value: fmt.ms(median(detached)),
            baseline: fmt.ms(median(empty)),
            ratio: `+${startAdded.toFixed(0)} ms`,
            pass: startAdded <= 300,
            raw: startAdded,
          },
        ],
        note: `In-process over the runtime from dist/: restore of a tree directory whose ${DETACHED} agents' wrapper.pid name a live process, each taken back as running (its run directory watched) without waiting, against a restore with no agent. What the root adds to pi's own start before its first prompt; medians of ${n} rounds.`,
      }),
      row({
        id: "durable-notice",
        what: "a detached turn that ends while the root is attached: result.json written → its notice in the mailbox",
        target: "median ≤ 100 ms",
        points: [
          {
            input: "re-attached turn",
            value: fmt.ms(latency),
            baseline: "—",
            ratio: "—",
            pass: latency <= 100,
            raw: latency,
          },
        ],
        note: `The re-attached turn's watch on its run directory (inotify, a ${500} ms poll as the fallback) reads result.json, records the end and gives the notice (delivery record written, fsynced). Median of ${n} runs.`,
      }),
    ];
  } finally {
    wrapper.kill("SIGKILL");
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
  process.exit(0);
}
