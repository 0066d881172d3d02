import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { killAll, pidAlive, spawnProcess, waitForPidExit } from "../support/processes.js";
import {
  cleanupWrapperCases,
  defaultMeta,
  fakePiRecord,
  fakePiSignals,
  signalsReached,
  wrapperCase,
} from "../support/wrapper-harness.js";

afterEach(async () => {
  await killAll();
  await cleanupWrapperCases();
});

const POLL = { timeout: 10_000, interval: 25 };

/** Resolves once the fake pi has started (it writes its record before any event). */
const childStarted = (dir: string) => vi.waitFor(() => fakePiRecord(dir), POLL);

/**
 * The timing itself (grace, kill-after, timeoutMs, the stepped long timer, the parent watch's
 * period, the stdout drain) is proved on fake time in test/unit/wrapper/run.test.ts. Here, the
 * real processes: which signals reached the fake pi (it logs each with its arrival time), the
 * records and the outcome.
 */
describe("subagent-wrapper against the fake pi: lifecycle", () => {
  it("a lingering child gets SIGTERM no sooner than graceMs after its answer, and the run stays completed", async () => {
    const c = await wrapperCase({ scenario: "linger", meta: defaultMeta({ graceMs: 1500 }) });
    const run = await c.run();
    expect(run.code).toBe(0);
    expect(run.result).toMatchObject({
      status: "completed",
      finalText: "done",
      forcedExit: true,
      childExitCode: 143,
      childSignal: null,
    });
    const types = run.events.map((e) => e.type);
    expect(types[0]).toBe("run_start");
    expect(types.at(-1)).toBe("run_end");
    const answeredAt = run.events.find((e) => e.type === "assistant_text")!.ts;
    const signals = await fakePiSignals(c.dir);
    expect(signals.map((s) => s.signal)).toEqual(["SIGTERM"]);
    // Timers may fire a few ms early against Date.now (libuv's loop time); never a grace early.
    expect(signals[0]!.ts - answeredAt).toBeGreaterThanOrEqual(1450);
    expect(run.events.at(-1)!.ts).toBeGreaterThanOrEqual(signals[0]!.ts);
  });

  it("timeoutMs stops a slow child and records timed_out", async () => {
    // timeoutMs counts from the wrapper's start, before pi exists: long enough for the fake pi to start on a loaded machine.
    const run = await (await wrapperCase({ scenario: "slow", meta: defaultMeta({ timeoutMs: 2500 }) })).run();
    expect(run.code).toBe(1);
    expect(run.result).toMatchObject({
      status: "timed_out",
      exitCode: 1,
      forcedExit: true,
      errorMessage: "run exceeded timeoutMs (2500 ms)",
    });
    // On a loaded machine the SIGTERM may come before the fake pi's handlers: it then dies of it.
    expect(await signalsReached(run)).toEqual(["SIGTERM"]);
    expect(run.events.map((e) => e.type)).toEqual(["run_start", "run_end"]);
    // The pid from run_start: on a loaded machine the fake may not have written its record in 400 ms.
    expect(pidAlive((run.events[0] as { pid: number }).pid)).toBe(false);
  });

  it.each(["SIGTERM", "SIGINT"] as const)(
    "%s to the wrapper stops the child and records interrupted",
    async (signal) => {
      const c = await wrapperCase({ scenario: "slow" });
      const wrapper = c.start();
      await childStarted(c.dir);
      process.kill(wrapper.pid, signal);
      const run = await c.collect(await wrapper.done);
      expect(run.code).toBe(1);
      expect(run.result).toMatchObject({
        status: "interrupted",
        forcedExit: true,
        errorMessage: `subagent-wrapper received ${signal}`,
      });
      // Whichever signal the wrapper got, it stops its child with SIGTERM.
      expect(await signalsReached(run)).toEqual(["SIGTERM"]);
      expect(await waitForPidExit((await fakePiRecord(c.dir)).pid, 2000)).toBe(true);
    },
  );

  it("a signal while the wrapper waits for a finished child to exit stops the child at once and does not change the outcome", async () => {
    // A grace far beyond the harness's 25 s limit: the run ends only if the signal stops the child.
    const c = await wrapperCase({ scenario: "linger", meta: defaultMeta({ graceMs: 600_000 }) });
    const wrapper = c.start();
    await vi.waitFor(
      async () => expect(await readFile(path.join(c.dir, "out/events.jsonl"), "utf8")).toContain("assistant_text"),
      POLL,
    );
    process.kill(wrapper.pid, "SIGTERM");
    const run = await c.collect(await wrapper.done);
    expect(run.code).toBe(0);
    expect(run.timedOut).toBe(false);
    expect(run.result).toMatchObject({ status: "completed", forcedExit: true, childExitCode: 143 });
    expect((await fakePiSignals(c.dir)).map((s) => s.signal)).toEqual(["SIGTERM"]);
  });

  it("stopping the child ends its whole process group, grandchildren included", async () => {
    const pidFile = "grandchild.pid";
    const scenario = {
      steps: [
        { spawnGrandchild: { sleepMs: 60_000, pidFile } },
        { assistant: { text: "[ABORT] stop everything", stopReason: "stop" } },
        { linger: null },
      ],
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
    // The stdout drain gives up after 2 s (test/unit/wrapper/run.test.ts); a hang would hit the harness's 25 s limit.
    expect(run.timedOut).toBe(false);
    expect(run.result).toMatchObject({ status: "completed", childExitCode: 0, forcedExit: false });
    expect(await waitForPidExit(Number(await readFile(path.join(c.dir, "gc.pid"), "utf8")), 2000)).toBe(true);
  });

  it("stops the run when the process named in PI_SUBAGENTS_PARENT_PID is gone", async () => {
    const parent = spawnProcess(process.execPath, ["-e", "setTimeout(() => {}, 60000)"]);
    const c = await wrapperCase({ scenario: "slow" });
    const wrapper = c.start({ env: { PI_SUBAGENTS_PARENT_PID: String(parent.pid) } });
    await childStarted(c.dir);
    parent.kill("SIGKILL");
    const run = await c.collect(await wrapper.done);
    expect(run.result).toMatchObject({
      status: "interrupted",
      forcedExit: true,
      errorMessage: `parent process ${parent.pid} is gone`,
    });
    expect(await signalsReached(run)).toEqual(["SIGTERM"]);
  });
});
