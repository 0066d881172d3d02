/**
 * Area 3 — the wrapper itself is stopped or killed, and the parent goes away.
 * - SIGTERM/SIGINT/SIGHUP: the child is stopped and `interrupted` recorded.
 * - SIGKILL: nothing in the wrapper runs, so pi's own orphan guard (the wrapper's task
 *   extension, run inside the fake pi here) ends pi's group within seconds; the extension
 *   marks the turn `errored`, saying how the wrapper died; the wrapper's own orphan guard
 *   removes the run's folder in the temp folder (0 files left there).
 * - The parent process exits gracefully: its turns are stopped. A child agent's process
 *   killed: its children's wrappers notice and stop. The root killed: its turns go on to their
 *   own end, and no process outlives them.
 */
import { spawn } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { runningTurn } from "../../src/extension/turns/child-state.js";
import { REPO_ROOT } from "../support/pi-home.js";
import { killAll, spawnProcess } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, fakePiRecord, wrapperCase } from "../support/wrapper-harness.js";
import { killLeftovers, LOAD_TASK_EXTENSION, leftoverProcesses, runtimeCase, settleLeftovers } from "./support.js";

afterEach(async () => {
  await killAll();
  await killLeftovers();
  await cleanupWrapperCases();
});

const SLOW = {
  steps: [{ spawnGrandchild: { sleepMs: 60_000, pidFile: "gc.pid" } }, { sleep: 60_000 }, { echoTask: true }],
};

async function childStarted(dir: string): Promise<number> {
  await vi.waitFor(async () => expect((await fakePiRecord(dir)).pid).toBeGreaterThan(0), {
    timeout: 15_000,
    interval: 50,
  });
  // The record is written before the fake installs its handlers and runs the scenario.
  await vi.waitFor(async () => expect(Number(await readFile(path.join(dir, "gc.pid"), "utf8"))).toBeGreaterThan(0), {
    timeout: 15_000,
    interval: 50,
  });
  return (await fakePiRecord(dir)).pid;
}

describe("area 3: the suite's leftover count can see a process", () => {
  it("a tagged sleeper is counted, then 0 once it is killed", async () => {
    const sleeper = spawnProcess(process.execPath, ["-e", "setTimeout(() => {}, 60000)"]);
    // One look at /proc reads every process's environ: on a loaded machine that alone can take seconds.
    await vi.waitFor(async () => expect(await leftoverProcesses()).toContain(sleeper.pid), {
      timeout: 15_000,
      interval: 50,
    });
    sleeper.kill("SIGKILL");
    await sleeper.done;
    expect(await settleLeftovers()).toEqual([]);
  });
});

describe("area 3: 3 signals to the wrapper → child stopped, interrupted, 0 processes left", () => {
  it.each(["SIGTERM", "SIGINT", "SIGHUP"] as const)("%s", async (signal) => {
    const c = await wrapperCase({ scenario: SLOW });
    const wrapper = c.start();
    await childStarted(c.dir);
    process.kill(wrapper.pid, signal);
    const run = await c.collect(await wrapper.done);
    expect(run.code).toBe(1);
    expect(run.result).toMatchObject({
      status: "interrupted",
      errorMessage: `subagent-wrapper received ${signal}`,
      forcedExit: true,
    });
    expect(await settleLeftovers()).toEqual([]);
  });
});

describe("area 3: SIGKILL to the wrapper", () => {
  it("its pi child and grandchild are gone within 5 s (the task extension's orphan guard)", async () => {
    const c = await wrapperCase({ meta: defaultMeta(), scenario: SLOW });
    const wrapper = c.start({ env: LOAD_TASK_EXTENSION });
    const piPid = await childStarted(c.dir);
    process.kill(wrapper.pid, "SIGKILL");
    await wrapper.done;
    const killedAt = Date.now();
    expect(await settleLeftovers(5000)).toEqual([]);
    const outlivedMs = Date.now() - killedAt;
    console.log(`[reliability] pi outlived its SIGKILLed wrapper by ${outlivedMs} ms (limit 5000)`);
    expect(await leftoverProcesses()).not.toContain(piPid);
    // No result.json: the wrapper never got to write one, and never wrote half of one.
    expect((await c.collect(await wrapper.done)).result).toBeUndefined();
    // Nor a file of its run in its temp folder (its TMPDIR): the guard removed the run's folder.
    await vi.waitFor(async () => expect(await readdir(path.join(c.dir, "tmp"))).toEqual([]), { timeout: 5000 });
  });

  it("the extension marks the turn errored with how the wrapper died, and gives one notice", async () => {
    const rc = await runtimeCase(SLOW, LOAD_TASK_EXTENSION);
    try {
      const state = rc.child("victim");
      await rc.runtime.requestTurn(state, "spawn");
      const running = runningTurn(rc.runtime.children.get("/root/victim")!)!;
      await vi.waitFor(
        async () => expect(await readFile(path.join(running.runDir, "events.jsonl"), "utf8")).toContain("run_start"),
        { timeout: 15_000 },
      );
      process.kill(running.pid!, "SIGKILL");
      await vi.waitFor(() => expect(rc.runtime.mailbox.pending).toBe(1), { timeout: 15_000 });
      const [notice] = rc.runtime.mailbox.take(5);
      expect(notice).toMatchObject({
        agent_name: "/root/victim",
        type: "errored",
        agent_status: "errored",
        outcome: "failed",
        reason: "wrapper exited (SIGKILL) without writing result.json",
      });
      // The notice is in the mailbox before the record is written (the turn is "settling"
      // until then), so the end of the turn is awaited, not assumed.
      await vi.waitFor(() => expect(rc.runtime.hasActiveTurns()).toBe(false), { timeout: 15_000, interval: 20 });
      expect(state.record).toMatchObject({ status: "errored", health: "unhealthy" });
      expect(await settleLeftovers(5000)).toEqual([]);
      expect(rc.runtime.mailbox.pending).toBe(0);
    } finally {
      await rc.dispose();
    }
  });
});

describe("area 3: the parent goes away → 0 wrappers or children left", () => {
  it("graceful exit (session_shutdown): 3 running turns are stopped and recorded interrupted", async () => {
    const rc = await runtimeCase(SLOW, LOAD_TASK_EXTENSION);
    try {
      const states = ["a", "b", "c"].map((name) => rc.child(name));
      for (const state of states) await rc.runtime.requestTurn(state, "spawn");
      for (const state of states) {
        const runDir = runningTurn(rc.runtime.children.get(state.record.path)!)!.runDir;
        await vi.waitFor(
          async () => expect(await readFile(path.join(runDir, "events.jsonl"), "utf8")).toContain("run_start"),
          { timeout: 15_000 },
        );
      }
      await rc.runtime.shutdown();
      for (const state of states) expect(state.record.status).toBe("interrupted");
      expect(rc.runtime.mailbox.pending).toBe(0); // a process that is ending reports nothing
      expect(await settleLeftovers(5000)).toEqual([]);
    } finally {
      await rc.dispose();
    }
  });

  /**
   * A stand-in parent: a separate node process that runs the real runtime and launcher, starts
   * 3 turns and is then SIGKILLed. `nested`: it is a child agent's process (its environment
   * says so), whose pi ends with each of its turns — its children's wrappers watch it.
   */
  async function killedParent(scenario: object, nested: boolean) {
    const rc = await runtimeCase(scenario);
    const script = `
        const { TreeDir } = await import(${JSON.stringify(path.join(REPO_ROOT, "dist/extension/tree/tree-dir.js"))});
        const { TreeRuntime } = await import(${JSON.stringify(path.join(REPO_ROOT, "dist/extension/turns/runtime.js"))});
        const tree = new TreeDir(${JSON.stringify(rc.tree.root)});
        const rt = new TreeRuntime({ self: "/root", isRoot: true, treeDir: tree.root }, tree, { maxActiveChildTurns: 3, maxDepth: 3, maxSpawns: 64, turnTimeoutMs: 60000 }, ${JSON.stringify(rc.dir)});
        for (const name of ["a", "b", "c"]) {
          const record = JSON.parse(process.env.TEMPLATE_RECORD);
          Object.assign(record, { path: "/root/" + name, nickname: "P" + name, sessionPath: tree.agentDir("/root/" + name) + "/session.jsonl" });
          const state = { record, phase: { name: "idle" } };
          rt.children.set(record.path, state);
          await rt.requestTurn(state, "spawn");
        }
        console.log("started");
        setInterval(() => {}, 1000);
      `;
    const template = rc.child("template").record;
    rc.runtime.children.clear();
    const place = nested ? { PI_SUBAGENTS_AGENT_PATH: "/root/mid", PI_SUBAGENTS_TREE_DIR: rc.tree.root } : {};
    const parent = spawn(process.execPath, ["--input-type=module", "-e", script], {
      stdio: ["ignore", "pipe", "inherit"],
      env: { ...process.env, TEMPLATE_RECORD: JSON.stringify(template), ...place },
    });
    await new Promise<void>((resolve, reject) => {
      parent.stdout.on("data", (d: Buffer) => d.toString().includes("started") && resolve());
      parent.once("exit", (code) => reject(new Error(`parent exited early (${code})`)));
    });
    const runDirs = ["a", "b", "c"].map((name) => path.join(rc.tree.agentDir(`/root/${name}`), "runs", "0001-spawn"));
    for (const runDir of runDirs) {
      await vi.waitFor(
        async () => expect(await readFile(path.join(runDir, "events.jsonl"), "utf8")).toContain("run_start"),
        { timeout: 15_000 },
      );
    }
    parent.kill("SIGKILL");
    return { rc, runDirs, killedAt: Date.now() };
  }

  it("a child agent's process is SIGKILLed: its 3 wrappers notice, stop their children and record interrupted", async () => {
    const { rc, runDirs, killedAt } = await killedParent(SLOW, true);
    try {
      expect(await settleLeftovers(10_000)).toEqual([]);
      console.log(
        `[reliability] 3 wrappers and their children gone ${Date.now() - killedAt} ms after the parent was SIGKILLed`,
      );
      for (const runDir of runDirs) {
        const result = JSON.parse(await readFile(path.join(runDir, "result.json"), "utf8"));
        expect(result).toMatchObject({ status: "interrupted" });
        expect(result.errorMessage).toMatch(/^parent process \d+ is gone$/);
      }
    } finally {
      await rc.dispose();
    }
  });

  it("the root process is SIGKILLed: its 3 turns go on to their own end, write their results, and leave no process", async () => {
    const quick = { steps: [{ sleep: 2000 }, { echoTask: true }] };
    const { rc, runDirs } = await killedParent(quick, false);
    try {
      expect(await settleLeftovers(20_000)).toEqual([]);
      for (const runDir of runDirs) {
        const result = JSON.parse(await readFile(path.join(runDir, "result.json"), "utf8"));
        expect(result).toMatchObject({ status: "completed" });
      }
    } finally {
      await rc.dispose();
    }
  });
});
