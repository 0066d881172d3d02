/**
 * `subagent-wrapper stop <tree dir | run dir>` and what `inspect <tree dir>` says of turns
 * running without an owner, with real wrappers running the fake pi (a turn that works
 * until stopped), laid out as the extension lays out a tree directory.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { processIdentity } from "../../src/lib/process.js";
import { killAll, runProcess, type SpawnedProcess, spawnProcess } from "../support/processes.js";
import { agentRecord } from "../support/records.js";
import { FAKE_PI_DIR, WRAPPER_BIN } from "../support/wrapper-harness.js";

const dirs: string[] = [];
afterEach(async () => {
  await killAll();
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

const cli = (args: string[]) => runProcess(process.execPath, [WRAPPER_BIN, ...args], { timeoutMs: 40_000 });

async function treeDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "stop-tree-"));
  dirs.push(dir);
  await writeFile(path.join(dir, "tree.json"), JSON.stringify({ version: 1, rootSession: "/s/root.jsonl" }));
  return dir;
}

/** An agent of the tree whose first turn runs: a real wrapper over a fake pi that lingers until stopped. */
async function runningAgent(tree: string, name: string): Promise<{ runDir: string; wrapper: SpawnedProcess }> {
  const agentDir = path.join(tree, "agents", name);
  const runDir = path.join(agentDir, "runs", "0001-spawn");
  await mkdir(runDir, { recursive: true });
  await writeFile(
    path.join(agentDir, "agent.json"),
    JSON.stringify(agentRecord({ path: `/root/${name}`, status: "running", runs: ["0001-spawn"] })),
  );
  const meta = {
    runId: `${name}-1`,
    task: "work until stopped",
    cwd: tree,
    resultPath: path.join(runDir, "result.json"),
    eventsPath: path.join(runDir, "events.jsonl"),
    stdoutPath: path.join(runDir, "stdout.log"),
    stderrPath: path.join(runDir, "stderr.log"),
    transcriptPath: path.join(runDir, "transcript.md"),
    agentPath: `/root/${name}`,
    startedAt: new Date().toISOString(),
    timeoutMs: 600_000,
    graceMs: 300,
  };
  await writeFile(path.join(runDir, "meta.json"), JSON.stringify(meta));
  const wrapper = spawnProcess(process.execPath, [WRAPPER_BIN, "run", path.join(runDir, "meta.json")], {
    cwd: tree,
    env: {
      ...process.env,
      PATH: `${FAKE_PI_DIR}${path.delimiter}${process.env.PATH ?? ""}`,
      FAKE_PI_SCRIPT: WORKING,
    },
    timeoutMs: 60_000,
  });
  await writeFile(path.join(runDir, "wrapper.pid"), `${JSON.stringify(processIdentity(wrapper.pid))}\n`);
  await vi.waitFor(
    async () => expect(await readFile(path.join(runDir, "events.jsonl"), "utf8")).toContain("run_start"),
    {
      timeout: 15_000,
    },
  );
  return { runDir, wrapper };
}

/** A pi that has started its turn and works (a tool under way) until it is stopped. */
const WORKING = JSON.stringify({
  steps: [{ agentStart: true }, { turnStart: true }, { user: true }, { linger: null }],
});

const resultOf = async (runDir: string) => JSON.parse(await readFile(path.join(runDir, "result.json"), "utf8"));

describe("subagent-wrapper stop", () => {
  it("a tree directory: every running turn ends interrupted with its result written; exit 0 once none runs", async () => {
    const tree = await treeDir();
    const a = await runningAgent(tree, "alpha");
    const b = await runningAgent(tree, "beta");

    const inspected = await cli(["inspect", tree]);
    expect(inspected.stdout).toContain("running without an owner (no root holds the tree): 2");
    expect(inspected.stdout).toMatch(
      new RegExp(
        `/root/alpha {2}0001-spawn {2}wrapper pid ${a.wrapper.pid} {2}age \\d+s {2}limits: time limit 10m 00s`,
      ),
    );
    expect(inspected.stdout).toContain(`stop them: subagent-wrapper stop ${tree}`);
    const json = JSON.parse((await cli(["inspect", tree, "--json"])).stdout);
    expect(json.detached).toMatchObject({
      owner_pid: null,
      running: [{ agent_name: "/root/alpha" }, { agent_name: "/root/beta" }],
    });

    const stopped = await cli(["stop", tree]);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(stopped.stdout).toContain("stopped: /root/alpha (0001-spawn");
    expect(stopped.stdout).toContain("stopped: /root/beta (0001-spawn");
    for (const { runDir, wrapper } of [a, b]) {
      expect((await resultOf(runDir)).status).toBe("interrupted");
      await wrapper.done;
    }
    // Nothing left: a second stop finds nothing, and inspect shows no running turn.
    expect((await cli(["stop", tree])).stdout).toContain("nothing is running there");
    expect((await cli(["inspect", tree])).stdout).not.toContain("running without an owner");
  }, 90_000);

  it("a run directory: only that run stops", async () => {
    const tree = await treeDir();
    const a = await runningAgent(tree, "alpha");
    const b = await runningAgent(tree, "beta");
    const stopped = await cli(["stop", a.runDir]);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect((await resultOf(a.runDir)).status).toBe("interrupted");
    await expect(readFile(path.join(b.runDir, "result.json"), "utf8")).rejects.toThrow();
    b.wrapper.kill("SIGTERM");
    await b.wrapper.done;
  }, 90_000);

  it("a path that is neither: one clear line and exit 2", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "stop-none-"));
    dirs.push(dir);
    const run = await cli(["stop", dir]);
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe(`subagent-wrapper stop: ${dir} is neither a tree directory nor a run directory`);
    expect((await cli(["stop", path.join(dir, "missing")])).code).toBe(2);
  });
});
