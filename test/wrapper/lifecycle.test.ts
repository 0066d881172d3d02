import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { killAll, pidAlive, spawnProcess, waitForPidExit } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, fakePiRecord, wrapperCase } from "../support/wrapper-harness.js";

afterEach(async () => {
  await killAll();
  await cleanupWrapperCases();
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Resolves once the fake pi has started (it writes its record before any event). */
const childStarted = (dir: string) =>
  waitFor(async () =>
    fakePiRecord(dir).then(
      () => true,
      () => false,
    ),
  );

describe("subagent-wrapper against the fake pi: lifecycle", () => {
  it("a child lingering after its answer gets SIGTERM after graceMs and the run stays completed", async () => {
    const run = await (await wrapperCase({ scenario: "linger" })).run();
    expect(run.code).toBe(0);
    expect(run.result).toMatchObject({ status: "completed", finalText: "done", forcedExit: true, childExitCode: 143 });
    expect(run.durationMs).toBeLessThan(3000);
  });

  it("a child that ignores SIGTERM gets SIGKILL 3 s later and the run stays completed", async () => {
    const run = await (await wrapperCase({ scenario: "linger-ignore-sigterm" })).run();
    expect(run.code).toBe(0);
    expect(run.result).toMatchObject({ status: "completed", forcedExit: true, childSignal: "SIGKILL" });
    expect(run.result!.durationMs).toBeGreaterThanOrEqual(3000);
  });

  it("graceMs counts from the terminal message", async () => {
    const c = await wrapperCase({ scenario: "linger", meta: defaultMeta({ graceMs: 1500 }) });
    const run = await c.run();
    const answeredAt = run.events.find((e) => e.type === "assistant_text")!.ts;
    const endedAt = Date.parse(run.result!.endedAt);
    expect(endedAt - answeredAt).toBeGreaterThanOrEqual(1450);
    expect(endedAt - answeredAt).toBeLessThan(3500);
  });

  it("timeoutMs stops a slow child and records timed_out", async () => {
    const run = await (await wrapperCase({ scenario: "slow", meta: defaultMeta({ timeoutMs: 400 }) })).run();
    expect(run.code).toBe(1);
    expect(run.result).toMatchObject({ status: "timed_out", exitCode: 1, forcedExit: true, errorMessage: "run exceeded timeoutMs (400 ms)" });
    expect(run.durationMs).toBeLessThan(8000);
    expect(pidAlive((await fakePiRecord(run.dir)).pid)).toBe(false);
  });

  it("a time-out after the terminal message changes nothing", async () => {
    // The answer comes at once and the child lingers: timeoutMs fires while the grace period runs.
    // Generous: on a loaded machine the fake pi alone can take 1.5 s to answer.
    const run = await (await wrapperCase({ scenario: "linger", meta: defaultMeta({ timeoutMs: 3000, graceMs: 4000 }) })).run();
    const answeredAt = run.events.find((e) => e.type === "assistant_text")!.ts;
    expect(answeredAt - Date.parse(run.result!.startedAt)).toBeLessThan(3000);
    expect(run.durationMs).toBeGreaterThan(3000);
    expect(run.result).toMatchObject({ status: "completed", forcedExit: true });
  });

  it.each(["SIGTERM", "SIGINT"] as const)("%s to the wrapper stops the child and records interrupted", async (signal) => {
    const c = await wrapperCase({ scenario: "slow" });
    const wrapper = c.start();
    await childStarted(c.dir);
    process.kill(wrapper.pid, signal);
    const run = await c.collect(await wrapper.done);
    expect(run.code).toBe(1);
    expect(run.result).toMatchObject({ status: "interrupted", forcedExit: true, errorMessage: `subagent-wrapper received ${signal}` });
    expect(await waitForPidExit((await fakePiRecord(c.dir)).pid, 2000)).toBe(true);
  });

  it("a signal while the wrapper waits for a finished child to exit does not change the outcome", async () => {
    const c = await wrapperCase({ scenario: "linger", meta: defaultMeta({ graceMs: 5000 }) });
    const wrapper = c.start();
    await waitFor(async () => (await readFile(path.join(c.dir, "out/events.jsonl"), "utf8").catch(() => "")).includes("assistant_text"));
    process.kill(wrapper.pid, "SIGTERM");
    const run = await c.collect(await wrapper.done);
    expect(run.code).toBe(0);
    expect(run.result).toMatchObject({ status: "completed", forcedExit: true });
    expect(run.durationMs).toBeLessThan(4000);
  });

  it("stopping the child ends its whole process group, grandchildren included", async () => {
    const pidFile = "grandchild.pid";
    const scenario = {
      steps: [{ spawnGrandchild: { sleepMs: 60_000, pidFile } }, { assistant: { text: "[ABORT] stop everything", stopReason: "stop" } }, { linger: null }],
    };
    const c = await wrapperCase({ scenario });
    const run = await c.run();
    expect(run.result?.status).toBe("aborted");
    const grandchild = Number(await readFile(path.join(c.dir, pidFile), "utf8"));
    expect(await waitForPidExit(grandchild, 2000)).toBe(true);
  });

  it("a grandchild holding stdout open after pi exits does not hang the run", async () => {
    const scenario = {
      steps: [
        { spawnGrandchild: { sleepMs: 60_000, inheritStdio: true, pidFile: "gc.pid" } },
        { assistant: { text: "done", stopReason: "stop" } },
        { exit: 0 },
      ],
    };
    const c = await wrapperCase({ scenario });
    const run = await c.run();
    expect(run.result).toMatchObject({ status: "completed", childExitCode: 0 });
    expect(run.durationMs).toBeLessThan(5000);
    expect(await waitForPidExit(Number(await readFile(path.join(c.dir, "gc.pid"), "utf8")), 2000)).toBe(true);
  });

  it("stops the run when the process named in PI_SUBAGENTS_PARENT_PID is gone", async () => {
    const parent = spawnProcess(process.execPath, ["-e", "setTimeout(() => {}, 60000)"]);
    const c = await wrapperCase({ scenario: "slow" });
    const wrapper = c.start({ env: { PI_SUBAGENTS_PARENT_PID: String(parent.pid) } });
    await childStarted(c.dir);
    parent.kill("SIGKILL");
    const run = await c.collect(await wrapper.done);
    expect(run.result).toMatchObject({ status: "interrupted", errorMessage: `parent process ${parent.pid} is gone` });
  });
});
