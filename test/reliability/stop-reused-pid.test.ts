/**
 * `subagent-wrapper stop` against a run whose wrapper is gone and whose pid another process
 * holds now (pids wrap; after a reboot any pid may be anything): the stand-in is a live
 * `sleep` that is no wrapper. It is never signalled — whether wrapper.pid holds an identity
 * whose start time is not the live process's, or (an older version's file) only the pid,
 * which stop names in one line instead of signalling.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { processIdentity, processRunning } from "../../src/lib/process.js";
import { killAll, runProcess, spawnProcess } from "../support/processes.js";
import { agentRecord } from "../support/records.js";
import { WRAPPER_BIN } from "../support/wrapper-harness.js";

const dirs: string[] = [];
afterEach(async () => {
  await killAll();
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

const cli = (args: string[]) => runProcess(process.execPath, [WRAPPER_BIN, ...args], { timeoutMs: 40_000 });

/** A tree with one agent whose run has no result and whose wrapper.pid holds `pidFile`. */
function treeWithRun(pidFile: string): { tree: string; runDir: string } {
  const tree = fs.mkdtempSync(path.join(os.tmpdir(), "psa-stop-reused-"));
  dirs.push(tree);
  fs.writeFileSync(path.join(tree, "tree.json"), JSON.stringify({ version: 1, rootSession: "/s/root.jsonl" }));
  const agentDir = path.join(tree, "agents", "alpha");
  const runDir = path.join(agentDir, "runs", "0001-spawn");
  fs.mkdirSync(runDir, { recursive: true });
  fs.writeFileSync(
    path.join(agentDir, "agent.json"),
    JSON.stringify(agentRecord({ path: "/root/alpha", status: "running", runs: ["0001-spawn"] })),
  );
  fs.writeFileSync(path.join(runDir, "meta.json"), JSON.stringify({ runId: "alpha-1", agentPath: "/root/alpha" }));
  fs.writeFileSync(path.join(runDir, "wrapper.pid"), pidFile);
  return { tree, runDir };
}

/** A live process that is not a wrapper: it dies at the first SIGTERM. */
function bystander() {
  const proc = spawnProcess("sleep", ["60"], { timeoutMs: 60_000 });
  expect(processRunning(proc.pid)).toBe(true);
  return proc;
}

describe("stop never signals a process that reused a wrapper's pid", () => {
  it("wrapper.pid holds only the pid (an older file): not signalled, one line says why, exit 1", async () => {
    const victim = bystander();
    const { tree } = treeWithRun(`${victim.pid}\n`);
    const stopped = await cli(["stop", tree]);
    expect(processRunning(victim.pid)).toBe(true);
    expect(stopped.code).toBe(1);
    const lines = stopped.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(`^not stopped: /root/alpha \\(0001-spawn\\): its wrapper.pid holds only pid ${victim.pid} `),
    );
    expect(stopped.stdout).not.toContain("stopped: /root/alpha");
  });

  it("the same for a run directory named directly", async () => {
    const victim = bystander();
    const { runDir } = treeWithRun(`${victim.pid}\n`);
    const stopped = await cli(["stop", runDir]);
    expect(processRunning(victim.pid)).toBe(true);
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toContain(`holds only pid ${victim.pid}`);
  });

  it("wrapper.pid names the pid with another start time (the pid was reused): nothing is running there, exit 0", async () => {
    const victim = bystander();
    const identity = processIdentity(victim.pid);
    const { tree } = treeWithRun(
      `${JSON.stringify({ ...identity, startTicks: String(Number(identity.startTicks) - 1) })}\n`,
    );
    const stopped = await cli(["stop", tree]);
    expect(processRunning(victim.pid)).toBe(true);
    expect(stopped.code).toBe(0);
    expect(stopped.stdout.trim()).toBe("nothing is running there");
  });
});
