/**
 * The wrapper run's timing, on fake time: a fake pi child (lines on stdout, exits on demand,
 * records the signals it gets at the fake time they arrive) and a fake clock. Nothing here
 * sleeps; every delay is checked to the millisecond.
 */
import { describe, expect, it } from "vitest";
import { PARENT_CHECK_MS } from "../../../src/wrapper/interrupts.js";
import { KILL_AFTER_MS, STDOUT_DRAIN_MS } from "../../../src/wrapper/run.js";
import { MAX_TIMER_MS } from "../../../src/wrapper/run-timers.js";
import { type FakeRun, fakeRunHarness, until } from "../../support/fake-run.js";
import { assistantEnd, retryStart } from "../../support/pi-events.js";

const fake = fakeRunHarness("psa-wrapper-run-", { runId: "run-1", task: "inspect auth" });
/** Starts a run against a fake child and waits until pi is running (run_start recorded). */
const start = fake.start;

/** The child prints its terminal answer; resolves once the run has seen it (a timer is pending). */
async function answer(run: FakeRun, text = "done", stopReason = "stop"): Promise<void> {
  const before = run.clock.pending().length;
  run.child.print(assistantEnd({ text, stopReason }));
  await until(() => run.clock.pending().length > before, "the answer observed");
}

describe("wrapper run on fake time: grace and kill-after", () => {
  it("graceMs counts from the terminal message, not from the start of the run", async () => {
    const run = await start({ graceMs: 1500 });
    await run.clock.advance(10_000);
    await answer(run);
    const answeredAt = run.clock.now();
    expect(run.clock.pending()).toEqual([1500]);
    await run.clock.advance(1499);
    expect(run.child.signals).toEqual([]);
    await run.clock.advance(1);
    expect(run.child.signalsWhileRunning()).toEqual([{ signal: "SIGTERM", at: answeredAt + 1500 }]);
    const { result, exitCode } = await run.done;
    expect(exitCode).toBe(0);
    expect(result).toMatchObject({
      status: "completed",
      finalText: "done",
      forcedExit: true,
      childExitCode: 143,
      childSignal: null,
    });
    expect(result.durationMs).toBe(10_000 + 1500);
    const events = await run.events();
    expect(events.map((e) => e.type)).toEqual(["run_start", "assistant_text", "run_end"]);
    expect(events[1]!.ts).toBe(answeredAt);
  });

  it("a child lingering after its answer gets SIGTERM at graceMs (default 1000) and the run stays completed", async () => {
    const run = await start();
    await answer(run);
    await run.clock.advance(999);
    expect(run.child.signals).toEqual([]);
    await run.clock.advance(1);
    expect(run.child.signalsWhileRunning()).toEqual([{ signal: "SIGTERM", at: run.t0 + 1000 }]);
    expect((await run.done).result).toMatchObject({ status: "completed", forcedExit: true, childExitCode: 143 });
  });

  it("a child that ignores SIGTERM gets SIGKILL 3 s after it, and the run stays completed with forcedExit", async () => {
    const run = await start({ graceMs: 300 }, { ignoreSigterm: true });
    await answer(run);
    await run.clock.advance(300);
    expect(run.child.signalsWhileRunning()).toEqual([{ signal: "SIGTERM", at: run.t0 + 300 }]);
    await run.clock.advance(KILL_AFTER_MS - 1);
    expect(run.child.exited).toBe(false);
    await run.clock.advance(1);
    expect(run.child.signalsWhileRunning()).toEqual([
      { signal: "SIGTERM", at: run.t0 + 300 },
      { signal: "SIGKILL", at: run.t0 + 300 + KILL_AFTER_MS },
    ]);
    const { result, exitCode } = await run.done;
    expect(exitCode).toBe(0);
    expect(result).toMatchObject({
      status: "completed",
      forcedExit: true,
      childExitCode: null,
      childSignal: "SIGKILL",
    });
  });

  it("an [ABORT] marker stops the child at once: SIGTERM at the moment of the message, no grace", async () => {
    const run = await start({ graceMs: 60_000 });
    await run.clock.advance(250);
    run.child.print(assistantEnd({ text: "Checked.\n[ABORT] no API key" }));
    await until(() => run.child.signals.length > 0, "the child signalled");
    expect(run.child.signalsWhileRunning()).toEqual([{ signal: "SIGTERM", at: run.t0 + 250 }]);
    const { result } = await run.done;
    expect(result).toMatchObject({
      status: "aborted",
      abortSource: "marker",
      abortReason: "no API key",
      forcedExit: true,
    });
  });

  it("a child that exits by itself within grace is not signalled while running, and forcedExit stays false", async () => {
    const run = await start({ graceMs: 1000 });
    await answer(run);
    await run.clock.advance(400);
    run.child.exit(0);
    const { result } = await run.done;
    expect(run.child.signalsWhileRunning()).toEqual([]);
    // What is left of its process group is cleared once it is gone.
    expect(run.child.signals.map((s) => s.signal)).toEqual(["SIGTERM"]);
    expect(result).toMatchObject({ status: "completed", forcedExit: false, childExitCode: 0 });
  });
});

describe("wrapper run on fake time: timeoutMs", () => {
  it("timeoutMs stops a slow child and records timed_out", async () => {
    const run = await start({ timeoutMs: 400 });
    await run.clock.advance(399);
    expect(run.child.signals).toEqual([]);
    await run.clock.advance(1);
    expect(run.child.signalsWhileRunning()).toEqual([{ signal: "SIGTERM", at: run.t0 + 400 }]);
    const { result, exitCode } = await run.done;
    expect(exitCode).toBe(1);
    expect(result).toMatchObject({
      status: "timed_out",
      exitCode: 1,
      forcedExit: true,
      errorMessage: "run exceeded timeoutMs (400 ms)",
    });
  });

  it("a time-out after the terminal message changes nothing: the grace period runs its course", async () => {
    const run = await start({ timeoutMs: 3000, graceMs: 4000 });
    await run.clock.advance(100);
    await answer(run);
    await run.clock.advance(2900); // timeoutMs passes here
    expect(run.child.signals).toEqual([]);
    await run.clock.advance(1099);
    expect(run.child.signals).toEqual([]);
    await run.clock.advance(1);
    expect(run.child.signalsWhileRunning()).toEqual([{ signal: "SIGTERM", at: run.t0 + 100 + 4000 }]);
    const { result } = await run.done;
    expect(result).toMatchObject({ status: "completed", finalText: "done", forcedExit: true });
    expect(result.errorMessage).toBeUndefined();
  });

  it("a timeoutMs over setTimeout's range (2^31 + 5000 ms) waits in steps and fires once, at its time", async () => {
    const timeoutMs = 2 ** 31 + 5000;
    const run = await start({ timeoutMs });
    expect(run.clock.pending()).toEqual([MAX_TIMER_MS]);
    await run.clock.advance(MAX_TIMER_MS);
    expect(run.child.signals).toEqual([]);
    expect(run.clock.pending()).toEqual([timeoutMs - MAX_TIMER_MS]);
    await run.clock.advance(timeoutMs - MAX_TIMER_MS - 1);
    expect(run.child.signals).toEqual([]);
    await run.clock.advance(1);
    expect(run.child.signalsWhileRunning()).toEqual([{ signal: "SIGTERM", at: run.t0 + timeoutMs }]);
    expect(run.clock.requested.every((ms) => ms <= MAX_TIMER_MS)).toBe(true);
    expect((await run.done).result).toMatchObject({
      status: "timed_out",
      errorMessage: `run exceeded timeoutMs (${timeoutMs} ms)`,
    });
  });

  it.each([
    ["the first step", 10],
    ["the second step", MAX_TIMER_MS + 10],
  ])(
    "cancelling a stepped grace timer during %s cancels it (pi retries the error that had decided)",
    async (_name, before) => {
      const graceMs = 2 ** 31 + 5000;
      const run = await start({ graceMs });
      await answer(run, "provider hiccup", "error");
      await run.clock.advance(before);
      expect(run.clock.pending()).toHaveLength(1);
      run.child.print(retryStart());
      await until(() => run.clock.pending().length === 0, "the grace timer cancelled");
      await run.clock.advance(graceMs);
      expect(run.child.signals).toEqual([]);
      run.child.print(assistantEnd({ text: "recovered" }));
      await until(() => run.clock.pending().length === 1, "a new grace timer");
      run.child.exit(0);
      const { result } = await run.done;
      expect(result).toMatchObject({ status: "completed", finalText: "recovered", forcedExit: false });
    },
  );
});

describe("wrapper run on fake time: the parent watch, start-up and stdout", () => {
  it("interrupts the run once the process named in PI_SUBAGENTS_PARENT_PID is gone", async () => {
    let parentAlive = true;
    const asked: number[] = [];
    const run = await start(
      {},
      {
        alive: (pid) => {
          asked.push(pid);
          return parentAlive;
        },
        run: { env: { PI_SUBAGENTS_PARENT_PID: "777" } },
      },
    );
    await run.clock.advance(3 * PARENT_CHECK_MS);
    expect(asked).toEqual([777, 777, 777]);
    expect(run.child.signals).toEqual([]);
    parentAlive = false;
    await run.clock.advance(PARENT_CHECK_MS);
    expect(run.child.signalsWhileRunning()).toEqual([{ signal: "SIGTERM", at: run.t0 + 4 * PARENT_CHECK_MS }]);
    const { result } = await run.done;
    expect(result).toMatchObject({
      status: "interrupted",
      forcedExit: true,
      errorMessage: "parent process 777 is gone",
    });
    expect(asked).toHaveLength(4);
  });

  it.each(["", "1", "not-a-pid"])("a PI_SUBAGENTS_PARENT_PID of %j watches nothing", async (value) => {
    const asked: number[] = [];
    const run = await start(
      {},
      { alive: (pid) => asked.push(pid) > 0, run: { env: { PI_SUBAGENTS_PARENT_PID: value } } },
    );
    expect(run.clock.pending()).toEqual([]);
    run.child.exit(0);
    await run.done;
    expect(asked).toEqual([]);
  });

  it("a signal that arrived before start-up is recorded as interrupted and pi is never started", async () => {
    const run = fake.begin({ runId: "r", task: "t" }, { run: { earlySignal: "SIGTERM" } });
    const { result, exitCode } = await run.done;
    expect(run.ops.spawned).toEqual([]);
    expect(exitCode).toBe(1);
    expect(result).toMatchObject({
      status: "interrupted",
      errorMessage: "subagent-wrapper received SIGTERM",
      forcedExit: false,
    });
  });

  it(`a stdout held open after the child exits (a grandchild) is given up after ${STDOUT_DRAIN_MS} ms`, async () => {
    const run = await start();
    await answer(run);
    run.child.exit(0, null, { keepStdoutOpen: true });
    await until(() => run.clock.pending().includes(STDOUT_DRAIN_MS), "the drain timer");
    await run.clock.advance(STDOUT_DRAIN_MS - 1);
    expect(run.finished()).toBe(false);
    await run.clock.advance(1);
    await until(run.finished, "the run finished");
    const { result } = await run.done;
    expect(result).toMatchObject({ status: "completed", childExitCode: 0 });
    // The group (the grandchild with it) was told to go once the child had exited.
    expect(run.child.signals).toEqual([{ signal: "SIGTERM", at: run.t0, afterExit: true }]);
  });

  it("stderr that arrives after the exit and after stdout closed still counts: a crashed start is explained", async () => {
    const pi = { version: "1.6.0", source: "package" as const, emitsSettled: true, nodeFloor: "22.19.0" };
    const run = await start({}, { pi });
    // As a real process may deliver them: the exit event, stdout's close, then stderr's last chunk.
    run.child.exited = true;
    run.child.emit("exit", 1, null);
    run.child.stdout.end();
    await until(() => run.child.stdout.closed, "stdout closed");
    await new Promise((resolve) => setImmediate(resolve));
    run.child.stderr.end(
      "SyntaxError: The requested module 'node:module' does not provide an export\n\nNode.js v20.20.2\n",
    );
    await until(run.finished, "the run finished");
    const { result } = await run.done;
    expect(result).toMatchObject({ status: "failed", childExitCode: 1 });
    expect(result.errorMessage).toMatch(/^pi could not start: pi 1\.6\.0 needs Node ≥ 22\.19; .*20\.20\.2/);
  });
});
