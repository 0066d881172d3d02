// The wrapper's own promises, tried adversarially for `npm run reliability`:
//  - orphans: SIGKILL the wrapper whose child is not a cooperating pi (a bash script, one that
//    traps SIGTERM, the fake pi without the task extension, one that runs `setsid sleep 60`), and
//    a child that exits leaving a setsid sleep behind; count what is alive 2 s later, and the
//    run folders (the task file the child never read) left in the temp folder;
//  - paths: artifact paths under /proc and /sys, FIFOs, under a regular file, through symlinks,
//    on a read-only mount and on a full tmpfs; check the exit code, result.json and that nothing hangs.
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { writeFileAtomic } from "../../dist/lib/atomic-file.js";
import {
  DEBUG,
  killLeftovers,
  log,
  makeCase,
  median,
  readResult,
  runFoldersLeft,
  scratch,
  settleLeftovers,
  sleep,
  startWrapper,
} from "./support.mjs";

/** The promise: nothing the wrapper started is alive this long after it is gone. */
export const GONE_WITHIN_MS = 2000;

const SETSID_SLEEP =
  "setsid sh -c 'echo $$ > setsid.pid; exec sleep 60' > /dev/null 2>&1 &\nwhile [ ! -s setsid.pid ]; do sleep 0.01; done\n";
const ANSWER = JSON.stringify({
  type: "message_end",
  message: { role: "assistant", content: [{ type: "text", text: "done" }], stopReason: "stop" },
});

/** [name, child (a bash body, or a fake-pi scenario), file that says it is ready, SIGKILL the wrapper?] */
const ORPHAN_KINDS = [
  ["a bash script", { bash: "sleep 60 &\necho > ready\nsleep 61\n" }, "ready", true],
  ["a script that traps SIGTERM", { bash: "trap '' TERM\nsleep 60 &\necho > ready\nsleep 61\n" }, "ready", true],
  [
    "the fake pi without the task extension (a grandchild in its group)",
    {
      scenario: {
        steps: [{ spawnGrandchild: { sleepMs: 60_000, pidFile: "gc.pid" } }, { sleep: 60_000 }, { echoTask: true }],
      },
    },
    "gc.pid",
    true,
  ],
  ["a child that runs `setsid sleep 60`", { bash: `${SETSID_SLEEP}sleep 61 &\necho > ready\nwait\n` }, "ready", true],
  [
    "no kill: a child that answers and exits, leaving a setsid sleep",
    { bash: `${SETSID_SLEEP}echo '${ANSWER}'\n` },
    undefined,
    false,
  ],
];

function scriptBin(dir, body) {
  const file = path.join(dir, "child.sh");
  fs.writeFileSync(file, `#!/bin/bash\n${body}`, { mode: 0o755 });
  return file;
}

async function waitForFile(file, ms = 15_000) {
  const deadline = Date.now() + ms;
  while (!fs.existsSync(file) && Date.now() < deadline) await sleep(20);
  return fs.existsSync(file);
}

/** One trial: start the wrapper with this child, SIGKILL it once the child is ready, count what is left. */
async function orphanKindTrial([, child, readyFile, kill], row) {
  const dir = makeCase();
  const wrapper = child.bash
    ? startWrapper(dir, { steps: [] }, { PI_SUBAGENTS_PI_BIN: scriptBin(dir, child.bash) })
    : startWrapper(dir, child.scenario);
  if (kill) {
    if (!(await waitForFile(path.join(dir, readyFile)))) row.notReady++;
    try {
      process.kill(wrapper.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  const exit = await wrapper.done;
  if (exit.hung) row.hung++;
  const ended = Date.now();
  const left = await settleLeftovers(GONE_WITHIN_MS);
  row.survivors += left.length;
  if (left.length === 0) row.gone.push(Date.now() - ended);
  // The guard's files go before its signals: by now its run folder must be gone.
  row.files += runFoldersLeft([wrapper.pid]);
  killLeftovers();
}

/** Sequential trials (the leftover count is global to the tag). One row per kind. */
export async function orphanKinds(trials) {
  const rows = [];
  for (const kind of ORPHAN_KINDS) {
    const row = { name: kind[0], trials, survivors: 0, files: 0, gone: [], hung: 0, notReady: 0 };
    for (let i = 0; i < trials; i++) await orphanKindTrial(kind, row);
    rows.push(row);
  }
  return rows;
}

let canMount;
function mountable() {
  if (canMount !== undefined) return canMount;
  const probe = fs.mkdtempSync(path.join(scratch, "mount-probe-"));
  canMount = spawnSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe]).status === 0;
  if (canMount) spawnSync("umount", [probe]);
  return canMount;
}

const mounted = [];
function tmpfs(dir, options) {
  fs.mkdirSync(dir, { recursive: true });
  execFileSync("mount", ["-t", "tmpfs", "-o", options, "tmpfs", dir]);
  mounted.push(dir);
  return dir;
}

/** [name, meta overrides, set-up(dir), expected exit code, whether out/result.json (or `resultAt`) must exist, needs a mount]. */
const PATH_CASES = [
  ["eventsPath under /proc", { eventsPath: "/proc/no-such-pid/run/events.jsonl" }, null, 0, true],
  ["stdoutPath under /proc/self/fd", { stdoutPath: "/proc/self/fd/stdout.log" }, null, 0, true],
  ["transcriptPath under /sys", { transcriptPath: "/sys/kernel/transcript.md" }, null, 0, true],
  ["eventsPath a FIFO", { eventsPath: "pipe" }, (dir) => execFileSync("mkfifo", [path.join(dir, "pipe")]), 0, true],
  ["stdoutPath a FIFO", { stdoutPath: "pipe" }, (dir) => execFileSync("mkfifo", [path.join(dir, "pipe")]), 0, true],
  [
    "transcriptPath a FIFO",
    { transcriptPath: "pipe" },
    (dir) => execFileSync("mkfifo", [path.join(dir, "pipe")]),
    0,
    true,
  ],
  ["eventsPath under a regular file", { eventsPath: "meta.json/x/events.jsonl" }, null, 0, true],
  ["resultPath under /proc", { resultPath: "/proc/no-such-pid/result.json" }, null, 2, false],
  ["resultPath a FIFO", { resultPath: "pipe" }, (dir) => execFileSync("mkfifo", [path.join(dir, "pipe")]), 2, false],
  [
    "eventsPath a symlink to another file",
    {},
    (dir) => {
      fs.mkdirSync(path.join(dir, "out"));
      fs.writeFileSync(path.join(dir, "precious"), "keep");
      fs.symlinkSync(path.join(dir, "precious"), path.join(dir, "out/events.jsonl"));
    },
    0,
    true,
    false,
    (dir) => fs.readFileSync(path.join(dir, "precious"), "utf8") === "keep",
  ],
  [
    "events and stdout.log one file through a symlinked folder",
    { eventsPath: "real/run.log", stdoutPath: "link/run.log" },
    (dir) => {
      fs.mkdirSync(path.join(dir, "real"));
      fs.symlinkSync(path.join(dir, "real"), path.join(dir, "link"));
    },
    2,
    true,
  ],
  [
    "eventsPath on a read-only mount",
    { eventsPath: "ro/events.jsonl" },
    (dir) => tmpfs(path.join(dir, "ro"), "size=64k,ro"),
    0,
    true,
    true,
  ],
  [
    "resultPath on a read-only mount",
    { resultPath: "ro/result.json" },
    (dir) => tmpfs(path.join(dir, "ro"), "size=64k,ro"),
    2,
    false,
    true,
  ],
  [
    "the disk fills up during the run (2 MB into stdout.log on a 512 KiB tmpfs)",
    {
      resultPath: "out/result.json",
      eventsPath: "out/events.jsonl",
      stdoutPath: "out/stdout.log",
      transcriptPath: "out/transcript.md",
    },
    (dir) => tmpfs(path.join(dir, "out"), "size=512k"),
    0,
    true,
    true,
  ],
  [
    "the disk is full before the run",
    {},
    (dir) => {
      tmpfs(path.join(dir, "out"), "size=64k");
      spawnSync("sh", ["-c", `head -c 65536 /dev/zero > ${path.join(dir, "out/filler")}`]);
    },
    3,
    false,
    true,
  ],
];
const FILL_DISK = { steps: [{ bigLine: { type: "garbage", bytes: 2_000_000 } }, { echoTask: true }] };

/** One run of a path case: whether the wrapper gave the documented answer, and how it exited. */
async function pathTrial([name, overrides, setUp, code, resultExpected, , check]) {
  const dir = makeCase(overrides);
  try {
    setUp?.(dir);
    const child = name.startsWith("the disk fills") ? FILL_DISK : { steps: [{ echoTask: true }] };
    const exit = await startWrapper(dir, child).done;
    const result = readResult(dir);
    const documented =
      exit.code === code && result.state === (resultExpected ? "complete" : "absent") && (!check || check(dir));
    if (!documented && DEBUG) log(`${name}: exit ${exit.code}, result ${result.state}: ${exit.stderr.trim()}`);
    return { documented, exit };
  } finally {
    for (const mount of mounted.splice(0)) spawnSync("umount", [mount]);
  }
}

/** A path case `trials` times, one row (skipped where it needs a mount and this user cannot mount). */
async function pathCaseRow(pathCase, trials) {
  const [name, , , , , needsMount] = pathCase;
  const row = { name, trials, ok: 0, hung: 0, left: 0, skipped: false, codes: {} };
  if (needsMount && !mountable()) return { ...row, skipped: true };
  for (let i = 0; i < trials; i++) {
    const { documented, exit } = await pathTrial(pathCase);
    row.codes[exit.code] = (row.codes[exit.code] ?? 0) + 1;
    if (exit.hung) row.hung++;
    if (documented) row.ok++;
  }
  row.left = (await settleLeftovers()).length;
  killLeftovers();
  return row;
}

/** Each path case `trials` times. */
export async function pathCases(trials) {
  const rows = [];
  for (const pathCase of PATH_CASES) rows.push(await pathCaseRow(pathCase, trials));
  return rows;
}

/** What fsync costs an atomic write of a 2 KiB result here: medians of `rounds` alternated writes, with and without. */
export async function fsyncCost(dir, rounds = 40) {
  fs.mkdirSync(dir, { recursive: true });
  const text = "x".repeat(2048);
  const durable = [];
  const quick = [];
  for (let i = 0; i < rounds; i++) {
    let t = performance.now();
    await writeFileAtomic(path.join(dir, "durable.json"), text);
    durable.push(performance.now() - t);
    t = performance.now();
    await writeFileAtomic(path.join(dir, "quick.json"), text, { durable: false });
    quick.push(performance.now() - t);
  }
  return { durable: median(durable), quick: median(quick) };
}
