#!/usr/bin/env node
// What `isolation: "worktree"` adds to a spawn, as a parent feels it: from the root model's
// spawn_agent call to the child's first model request, isolated vs not, in one run, alternated
// round by round, medians — on dirty repositories (50 tracked files modified, 50 untracked
// added, 10 deleted) of BENCH_ISOLATION_SIZES files (default 1 000, 10 000 and 30 000).
// Everything is the real pi and the real extension; only the LLM is scripted. The spawn_agent
// tool's own time (snapshot, worktree, the first files: the git work before the child starts)
// is reported beside it. A second row shows where the rest of the checkout went: the child's
// first request is answered at once with a `read` of the repository's last file, so that
// tool call waits for every file to be written (a real model takes longer to answer, and the
// checkout runs meanwhile); measured to the request that carries the tool's result.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import {
  benchLines,
  benchPiHome,
  fmt,
  median,
  now,
  REPO_ROOT,
  rounds,
  row,
  runProcess,
  startBenchLlm,
} from "./support.mjs";

const SIZES = (process.env.BENCH_ISOLATION_SIZES ?? "1000,10000,30000").split(",").map(Number);
const PER_DIR = 100;
const TARGET_MS = 1000;

export const agentOf = (body) =>
  /You are the agent (\/root\/[a-z0-9_/]+) /.exec(JSON.stringify(body.messages?.[0]?.content ?? ""))?.[1];
export const toolCount = (body) => (body.messages ?? []).filter((m) => m.role === "tool").length;

/** `base` without the caller's GIT_* variables, with a private git configuration. */
export const gitEnv = (home, base) => ({
  ...Object.fromEntries(Object.entries(base).filter(([name]) => !name.startsWith("GIT_"))),
  HOME: home,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
});
const fileOf = (repo, i) =>
  path.join(
    repo,
    `dir_${String(Math.floor(i / PER_DIR)).padStart(4, "0")}`,
    `file_${String(i % PER_DIR).padStart(3, "0")}.txt`,
  );

/** A committed repository of `files` small files (and a project's top-level files) with a dirty working tree. */
export function dirtyRepository(dir, files, env) {
  const git = (args) =>
    execFileSync("git", args, { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"], maxBuffer: 256 * 1024 * 1024 });
  fs.mkdirSync(dir);
  git(["init", "-q", "-b", "main"]);
  // What a project's top holds: the files the child needs before it starts (the context file among them).
  fs.writeFileSync(path.join(dir, "AGENTS.md"), "# Bench project\nKeep changes small.\n");
  fs.writeFileSync(path.join(dir, "README.md"), "A repository for the isolation bench.\n");
  fs.writeFileSync(path.join(dir, "package.json"), '{"name":"bench","private":true}\n');
  for (let i = 0; i < files; i++) {
    const file = fileOf(dir, i);
    if (i % PER_DIR === 0) fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `file ${i}\n${"x".repeat(64)}\n`);
  }
  git(["add", "-A"]);
  git(["-c", "user.name=Bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "initial"]);
  const step = Math.floor(files / 60);
  for (let k = 0; k < 50; k++) fs.appendFileSync(fileOf(dir, k * step), "modified\n");
  for (let k = 0; k < 50; k++)
    fs.writeFileSync(path.join(path.dirname(fileOf(dir, k * step)), `untracked_${k}.txt`), `new ${k}\n`);
  for (let k = 50; k < 60; k++) fs.rmSync(fileOf(dir, k * step));
  return git;
}

export async function run() {
  let mode = "none";
  let marks = {};
  let lastFile = { path: "", text: "" };
  const llm = await startBenchLlm((body) => {
    if (agentOf(body)) {
      if (toolCount(body) === 0) {
        marks.childFirst ??= now();
        return { calls: [["read", { path: lastFile.path }]] };
      }
      marks.childTool ??= now();
      // The tool saw the file: the wait for the checkout held.
      if (!JSON.stringify(body.messages.at(-1)).includes(lastFile.text))
        marks.toolMissed = JSON.stringify(body.messages.at(-1)).slice(0, 300);
      return { text: "child done" };
    }
    const results = toolCount(body);
    if (results === 0) {
      marks.spawnCall = now();
      return {
        calls: [
          [
            "spawn_agent",
            { task_name: "worker", message: "look", agent_type: "implementation", fork_turns: "none", isolation: mode },
          ],
        ],
      };
    }
    if (results === 1) {
      marks.spawnResult = now();
      return { calls: [["wait_agent", { timeout_ms: 120_000 }]] };
    }
    return { text: "root done" };
  });
  // The current pi line (1.x on its Node 22): isolation costs git and file-system time, the same on either line.
  const [line] = benchLines();
  const PI = path.join(line.binDir, "pi");
  const { home, env, cleanup } = benchPiHome(llm.url, line);
  const git = gitEnv(home, env);
  const points = [];
  const toolPoints = [];
  const breakdown = [];
  try {
    for (const files of SIZES) {
      const repo = path.join(home, `repo-${files}`);
      const inRepo = dirtyRepository(repo, files, git);
      const status = inRepo(["status", "--porcelain"]).toString();
      const samples = { none: [], worktree: [], tool: [], noneTool: [], worktreeTool: [] };
      lastFile = { path: path.relative(repo, fileOf(repo, files - 1)), text: `file ${files - 1}` };
      for (let round = 0; round < rounds(5); round++) {
        for (const which of round % 2 === 0 ? ["none", "worktree"] : ["worktree", "none"]) {
          mode = which;
          marks = {};
          const result = await runProcess(PI, ["--mode", "json", "-np", "--no-session", "-e", REPO_ROOT, "spawn one"], {
            cwd: repo,
            env: git,
            timeoutMs: 300_000,
          });
          if (result.code !== 0 || marks.childTool === undefined)
            throw new Error(`root exited ${result.code}: ${result.stderr.slice(-800)}`);
          if (marks.toolMissed) throw new Error(`the child's read did not see ${lastFile.path}: ${marks.toolMissed}`);
          samples[which].push(marks.childFirst - marks.spawnCall);
          samples[`${which}Tool`].push(marks.childTool - marks.spawnCall);
          if (which === "worktree") samples.tool.push(marks.spawnResult - marks.spawnCall);
          // Each root run is a tree of its own: its worktree and branch go before the next round.
          for (const tree of fs.readdirSync(env.PI_SUBAGENTS_DIR))
            fs.rmSync(path.join(env.PI_SUBAGENTS_DIR, tree), { recursive: true, force: true });
          inRepo(["worktree", "prune"]);
          for (const branch of inRepo(["branch", "--list", "subagent/*", "--format=%(refname:short)"])
            .toString()
            .split("\n")
            .filter(Boolean)) {
            inRepo(["branch", "-q", "-D", branch]);
          }
        }
      }
      if (inRepo(["status", "--porcelain"]).toString() !== status) throw new Error("the parent's working tree changed");
      fs.rmSync(repo, { recursive: true, force: true });
      const isolated = median(samples.worktree);
      const plain = median(samples.none);
      const extra = isolated - plain;
      points.push({
        input: `${files.toLocaleString("en-US").replace(/,/g, " ")} files, dirty`,
        value: fmt.s(isolated),
        baseline: fmt.s(plain),
        ratio: `${extra >= 0 ? "+" : ""}${fmt.ms(extra)}`,
        ...(files === 10_000 && { pass: extra <= TARGET_MS }),
      });
      const toolExtra = median(samples.worktreeTool) - median(samples.noneTool);
      toolPoints.push({
        input: points.at(-1).input,
        value: fmt.s(median(samples.worktreeTool)),
        baseline: fmt.s(median(samples.noneTool)),
        ratio: `${toolExtra >= 0 ? "+" : ""}${fmt.ms(toolExtra)}`,
      });
      breakdown.push(`${files} files: spawn_agent itself took ${fmt.ms(median(samples.tool))} isolated`);
    }
  } finally {
    await llm.close();
    cleanup();
  }
  return [
    row({
      id: "isolation",
      what: "spawn to the child's first model request: isolation worktree vs none",
      target: `≤ ${TARGET_MS} ms extra at 10 000 files`,
      points,
      note: `Real pi (${line.label}) and extension, loopback LLM. Measured: from the root model's spawn_agent call (its reply leaving the LLM) to the child's first request reaching it, \`isolation: "worktree"\` (value) vs \`none\` (baseline), alternated, medians; ratio is the difference. The repositories are dirty (50 modified, 50 untracked, 10 deleted files), so the snapshot is a new commit. ${breakdown.join("; ")} (the rest is the wrapper and the child pi starting, the same either way). The rest of the checkout is written once the child has sent that request: the next row.`,
    }),
    row({
      id: "isolation-first-tool",
      what: "spawn to the child's first tool result, its model answering at once: isolation worktree vs none",
      target: "(informative)",
      points: toolPoints,
      note: `The same runs as the row above. The child's first request is answered at once with a \`read\` of the repository's last file (the bench checks the result holds it), and the time is taken when the request carrying that result arrives. An isolated child's tool calls wait until every file of its worktree is written, so this row holds the rest of the checkout that the row above does not: the most a spawn can cost, with a model that answers in no time (a real one takes a second or more, while the checkout runs).`,
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  const rows = await run();
  printRows(rows);
  for (const r of rows) console.log(`\n${r.note}`);
}
