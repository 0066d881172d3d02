/**
 * A vitest reporter that ends a hung test file instead of letting it hold the whole run (and CI)
 * until an outer time-out: a test that blocks its worker synchronously (a spawnSync with no
 * time-out, a read from a FIFO) is out of reach of vitest's own testTimeout.
 *
 * A file that has run longer than PI_SUBAGENTS_TEST_FILE_MINUTES (default 10; the slowest file
 * takes about 2) is named on stderr with the test it was in (recorded by
 * test/support/watchdog-setup.ts in PI_SUBAGENTS_TEST_WATCH_DIR), its worker's pid and every
 * process under it; then those processes and the worker are killed by pid, so vitest reports
 * the file as failed and goes on with the rest. A vitest still alive a minute after its run
 * ended (a handle a test left open) exits with the run's verdict. scripts/test-lines.mjs sets
 * both variables.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const WATCH_DIR_ENV = "PI_SUBAGENTS_TEST_WATCH_DIR";
const FILE_MINUTES_ENV = "PI_SUBAGENTS_TEST_FILE_MINUTES";
const CHECK_EVERY_MS = 15_000;
const AFTER_END_MS = 60_000;
/** The hung files, a line each, in the watch folder. */
export const HUNG_FILE = "hung.txt";

/** @returns {{pid: number, ppid: number, seconds: number, args: string}[]} */
function processTable() {
  const ps = spawnSync("ps", ["-eo", "pid=,ppid=,etimes=,args="], { encoding: "utf8", timeout: 10_000 });
  return (ps.stdout ?? "")
    .split("\n")
    .map((line) => line.trim().match(/^(\d+)\s+(\d+)\s+(\d+)\s+(.*)$/))
    .filter((m) => m !== null)
    .map((m) => ({ pid: Number(m[1]), ppid: Number(m[2]), seconds: Number(m[3]), args: m[4] }));
}

/** The processes under `root`, parents before their children. */
function descendants(root, table) {
  const out = [];
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift();
    for (const p of table) {
      if (p.ppid !== parent) continue;
      out.push(p);
      queue.push(p.pid);
    }
  }
  return out;
}

/**
 * SIGKILLs `root` and every process under it, children first (none is left to its own devices
 * when its parent goes); returns those under it, as they were.
 */
export function killTree(root) {
  const under = descendants(root, processTable());
  for (const p of [...under].reverse().concat({ pid: root })) {
    try {
      process.kill(p.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  return under;
}

/** Where each worker is, from the watch folder: {pid, file, test, at} (test/support/watchdog-setup.ts). */
export function workerRecords(dir) {
  const out = [];
  for (const name of fs.readdirSync(dir)) {
    if (!/^\d+$/.test(name)) continue;
    try {
      out.push({ pid: Number(name), ...JSON.parse(fs.readFileSync(path.join(dir, name), "utf8")) });
    } catch {
      // being written, or not a record
    }
  }
  return out;
}

export default class TestWatchdog {
  constructor() {
    this.dir = process.env[WATCH_DIR_ENV];
    const minutes = Number(process.env[FILE_MINUTES_ENV] ?? 10);
    this.limitMs = (Number.isFinite(minutes) && minutes > 0 ? minutes : 10) * 60_000;
    /** @type {Map<string, number>} */
    this.running = new Map();
    /** @type {Set<string>} */
    this.ended = new Set();
    this.timer = undefined;
  }

  onInit() {
    if (!this.dir) return;
    this.timer = setInterval(() => this.check(), CHECK_EVERY_MS);
    this.timer.unref();
  }

  onTestModuleStart(testModule) {
    this.running.set(testModule.moduleId, Date.now());
  }

  onTestModuleEnd(testModule) {
    this.running.delete(testModule.moduleId);
  }

  onTestRunEnd(_testModules, _unhandledErrors, reason) {
    clearInterval(this.timer);
    if (!this.dir) return;
    // Every file has reported. A handle that a test left open (a daemon holding a pipe) must
    // not keep vitest alive past its summary: give it a minute, then exit with the run's verdict.
    const code = reason === "passed" ? 0 : 1;
    setTimeout(() => {
      process.stderr.write(
        `test watchdog: vitest had not exited ${AFTER_END_MS / 1000} s after its run ended; exiting (${code}).\n`,
      );
      process.exit(code);
    }, AFTER_END_MS).unref();
  }

  check() {
    const now = Date.now();
    for (const [file, since] of this.running) {
      if (now - since < this.limitMs || this.ended.has(file)) continue;
      this.ended.add(file);
      const rel = path.relative(process.cwd(), file);
      const worker = workerRecords(this.dir).find((w) => w.file === file);
      const say = (line) => process.stderr.write(`test watchdog: ${line}\n`);
      say(`${rel} has run ${Math.round((now - since) / 1000)} s (limit ${this.limitMs / 1000} s): taken as hung.`);
      if (!worker) {
        say("its worker is not known (it never reached a test); vitest's own time-outs must end it.");
        fs.appendFileSync(path.join(this.dir, HUNG_FILE), `${rel}: hung before its first test\n`);
        continue;
      }
      say(
        `its last test: "${worker.test}", started ${Math.round((now - worker.at) / 1000)} s ago; worker pid ${worker.pid}`,
      );
      const under = killTree(worker.pid);
      for (const p of under) say(`  pid ${p.pid} (parent ${p.ppid}, ${p.seconds} s): ${p.args.slice(0, 200)}`);
      say(`killed its worker and the ${under.length} process(es) under it; vitest reports the file as failed.`);
      // For the pass's summary (scripts/test-lines.mjs), which CI logs end with.
      fs.appendFileSync(path.join(this.dir, HUNG_FILE), `${rel}: hung in "${worker.test}"; its worker was killed\n`);
    }
  }
}
