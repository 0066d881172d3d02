#!/usr/bin/env node
// Where the git time of `isolation: "worktree"` goes: snapshotWorkingState, then createWorktree
// deferred (what a spawn waits for) and its finishCheckout (written once the child has started),
// and createWorktree all at once (`worktree add --no-checkout` + one `read-tree -u` with parallel
// checkout: a spawn with a setup command), against the ways
// git could check the same files out: a plain `git worktree add` (one process, then a stat of
// every file), the same with `checkout.workers=0`, and `--no-checkout` + a sequential
// `read-tree -u`. Committed repositories of ~1 000, ~10 000 and ~30 000 small files whose
// working tree is dirty (50 tracked files modified, 50 untracked added, 10 deleted). Median of
// BENCH_ROUNDS (default 5) rounds; the variants take turns within each round. The whole spawn
// as the parent feels it is isolation-spawn.bench.mjs (part of `npm run bench`).
//
// Imports the compiled module from dist/extension/isolation (npm run build first), or from
// ISOLATION_BUILD=<dir> when only these files were compiled elsewhere. Everything it creates
// lives in one temp dir, removed at the end; git runs with no global or system config.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const BUILD = process.env.ISOLATION_BUILD ?? path.join(REPO_ROOT, "dist/extension/isolation");
const { createWorktree, removeWorktree, snapshotWorkingState } = await import(
  pathToFileURL(path.join(BUILD, "index.js")).href
);
const { procStatFields } = await import(pathToFileURL(path.join(REPO_ROOT, "dist/lib/process.js")).href);

const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 5));
const SIZES = (process.env.BENCH_SIZES ?? "1000,10000,30000").split(",").map(Number);
const PER_DIR = 100;

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const fmt = (ms) => `${Math.round(ms)}`;
/**
 * CPU time (user + system, ms) of this process's children that have ended so far: git's own
 * work, which a loaded machine does not inflate the way it inflates wall time.
 */
const childCpuMs = () => {
  const fields = procStatFields("self"); // from field 3 on: cutime (16) and cstime (17) are 13 and 14
  return (Number(fields[13]) + Number(fields[14])) * 10; // in 1/100 s
};

const sandbox = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "psa-bench-isolation-")));
const env = {
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("GIT_"))),
  HOME: sandbox,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
};
const git = (cwd, args) =>
  execFileSync("git", args, {
    cwd,
    env,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    maxBuffer: 256 * 1024 * 1024,
  });
const fileOf = (repo, i) =>
  path.join(
    repo,
    `dir_${String(Math.floor(i / PER_DIR)).padStart(4, "0")}`,
    `file_${String(i % PER_DIR).padStart(3, "0")}.txt`,
  );

function makeRepo(files) {
  const repo = path.join(sandbox, `repo-${files}`);
  fs.mkdirSync(repo);
  git(repo, ["init", "-q", "-b", "main"]);
  // A project's top-level files: what a deferred checkout writes before the child starts.
  fs.writeFileSync(path.join(repo, "AGENTS.md"), "# Bench project\n");
  fs.writeFileSync(path.join(repo, "README.md"), "bench\n");
  fs.writeFileSync(path.join(repo, "package.json"), "{}\n");
  for (let i = 0; i < files; i++) {
    const file = fileOf(repo, i);
    if (i % PER_DIR === 0) fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `file ${i}\n${"x".repeat(64)}\n`);
  }
  git(repo, ["add", "-A"]);
  git(repo, ["-c", "user.name=Bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "initial"]);
  // Dirty: 50 modified, 50 untracked, 10 deleted, spread over the tree.
  const step = Math.floor(files / 60);
  for (let k = 0; k < 50; k++) fs.appendFileSync(fileOf(repo, k * step), "modified\n");
  for (let k = 0; k < 50; k++)
    fs.writeFileSync(path.join(path.dirname(fileOf(repo, k * step)), `untracked_${k}.txt`), `new ${k}\n`);
  for (let k = 50; k < 60; k++) fs.rmSync(fileOf(repo, k * step));
  return repo;
}

async function isolation(repo, round) {
  const worktreePath = path.join(sandbox, "worktrees", `iso-${path.basename(repo)}-${round}`);
  const branch = `subagent/0000bench-r${round}`;
  const c0 = childCpuMs();
  const t0 = performance.now();
  const base = await snapshotWorkingState(repo, { env });
  const t1 = performance.now();
  const c1 = childCpuMs();
  await createWorktree({ topLevel: repo, worktreePath, branch, base, env });
  const t2 = performance.now();
  const c2 = childCpuMs();
  await removeWorktree({ topLevel: repo, worktreePath, branch, base, env });
  // The spawn's way without a setup command: step 1 before the child starts, the rest later.
  const deferredPath = `${worktreePath}-deferred`;
  const deferredBranch = `${branch}-deferred`;
  const t3 = performance.now();
  const made = await createWorktree({
    topLevel: repo,
    worktreePath: deferredPath,
    branch: deferredBranch,
    base,
    env,
    deferCheckout: true,
  });
  const t4 = performance.now();
  if (!made.finishCheckout) throw new Error("the deferred checkout was not deferred");
  await made.finishCheckout();
  const t5 = performance.now();
  if (git(deferredPath, ["status", "--porcelain"]) !== "") throw new Error("deferred: the worktree is not clean");
  await removeWorktree({ topLevel: repo, worktreePath: deferredPath, branch: deferredBranch, base, env });
  return { snapshot: t1 - t0, total: t2 - t0, snapshotCpu: c1 - c0, createCpu: c2 - c1, early: t4 - t3, rest: t5 - t4 };
}

/** One way of checking out HEAD into a new worktree, timed; the worktree and branch go afterwards. */
function variant(repo, round, name, steps) {
  const worktreePath = path.join(sandbox, "worktrees", `${name}-${path.basename(repo)}-${round}`);
  const branch = `${name}-r${round}`;
  const c0 = childCpuMs();
  const t0 = performance.now();
  steps(worktreePath, branch);
  const ms = performance.now() - t0;
  cpu[name].push(childCpuMs() - c0);
  if (git(worktreePath, ["status", "--porcelain"]) !== "") throw new Error(`${name}: the worktree is not clean`);
  git(repo, ["worktree", "remove", "--force", worktreePath]);
  git(repo, ["branch", "-q", "-D", branch]);
  return ms;
}

let cpu = {};
const VARIANTS = {
  plain: (repo) => (wt, branch) => git(repo, ["worktree", "add", "-q", "-b", branch, wt, "HEAD"]),
  workers: (repo) => (wt, branch) =>
    git(repo, ["-c", "checkout.workers=0", "worktree", "add", "-q", "-b", branch, wt, "HEAD"]),
  sequentialReadTree: (repo) => (wt, branch) => {
    git(repo, ["worktree", "add", "-q", "--no-checkout", "-b", branch, wt, "HEAD"]);
    git(wt, ["read-tree", "-u", "--reset", "HEAD"]);
  },
};

const rows = [];
try {
  for (const files of SIZES) {
    const built = performance.now();
    const repo = makeRepo(files);
    process.stderr.write(`${files} files: repository ready in ${fmt(performance.now() - built)} ms\n`);
    const snapshot = [];
    const total = [];
    const early = [];
    const rest = [];
    const others = Object.fromEntries(Object.keys(VARIANTS).map((name) => [name, []]));
    cpu = Object.fromEntries(["snapshot", "create", ...Object.keys(VARIANTS)].map((name) => [name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      const result = await isolation(repo, round);
      snapshot.push(result.snapshot);
      total.push(result.total);
      early.push(result.early);
      rest.push(result.rest);
      cpu.snapshot.push(result.snapshotCpu);
      cpu.create.push(result.createCpu);
      for (const [name, make] of Object.entries(VARIANTS)) others[name].push(variant(repo, round, name, make(repo)));
    }
    if (git(repo, ["status", "--porcelain"]).split("\n").filter(Boolean).length !== 110)
      throw new Error("the parent's working tree changed");
    rows.push({
      files,
      snapshot: median(snapshot),
      total: median(total),
      early: median(early),
      rest: median(rest),
      ...Object.fromEntries(Object.entries(others).map(([name, ms]) => [name, median(ms)])),
      cpu: Object.fromEntries(Object.entries(cpu).map(([name, ms]) => [name, median(ms)])),
    });
    fs.rmSync(repo, { recursive: true, force: true });
  }
} finally {
  fs.rmSync(sandbox, { recursive: true, force: true });
}

console.log(
  `\nIsolation overhead, median of ${ROUNDS} rounds (git ${execFileSync("git", ["--version"], { encoding: "utf8" })
    .trim()
    .replace(/^git version /, "")}, ${os.cpus().length} CPUs)\n`,
);
const load = os.loadavg()[0].toFixed(1);
console.log(`Wall time, ms (1-minute load average ${load} at the end; the machine's load inflates these):\n`);
console.log(
  "| files | snapshotWorkingState | createWorktree deferred: before the child starts | its finishCheckout (later) | createWorktree, all at once | plain `git worktree add` | `worktree add` + checkout.workers=0 | `--no-checkout` + sequential read-tree |",
);
console.log("|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const row of rows) {
  console.log(
    `| ${row.files} | ${fmt(row.snapshot)} | ${fmt(row.early)} | ${fmt(row.rest)} | ${fmt(row.total - row.snapshot)} | ${fmt(row.plain)} | ${fmt(row.workers)} | ${fmt(row.sequentialReadTree)} |`,
  );
}
console.log("\nCPU time of the git processes (user + system), ms — the work itself, much less sensitive to load:\n");
console.log(
  "| files | snapshotWorkingState | createWorktree, all at once | plain `git worktree add` | `worktree add` + checkout.workers=0 | `--no-checkout` + sequential read-tree |",
);
console.log("|---:|---:|---:|---:|---:|---:|");
for (const row of rows) {
  const c = row.cpu;
  console.log(
    `| ${row.files} | ${fmt(c.snapshot)} | ${fmt(c.create)} | ${fmt(c.plain)} | ${fmt(c.workers)} | ${fmt(c.sequentialReadTree)} |`,
  );
}
