/**
 * The wrapper run's start-up and end on fake time: the orphan guard's protocol (started before
 * pi, told the group at the spawn, told the group is gone only once it is), stragglers left in
 * the child's group after it exits, the time limit armed before any file is touched, and a
 * result that cannot be reserved. The guard's own shell is tested against real processes in
 * test/reliability/orphans.test.ts.
 */
import { existsSync } from "node:fs";
import { readdir, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { WRAPPER_EXIT } from "../../../src/contracts/result.js";
import { ResultReserve } from "../../../src/wrapper/artifacts.js";
import type { RunReport } from "../../../src/wrapper/run.js";
import { GROUP_POLL_MS, STRAGGLER_KILL_MS } from "../../../src/wrapper/stragglers.js";
import { ESCAPEE_PID, type FakeRun, fakeRunHarness, until } from "../../support/fake-run.js";
import { assistantEnd } from "../../support/pi-events.js";

const fake = fakeRunHarness("psa-wrapper-guard-", { runId: "r", task: "t" });
const { begin, start: started } = fake;

/** Ends a run whose child answered and exited by itself; resolves with its report. */
async function finished(run: FakeRun): Promise<RunReport> {
  run.child.print(assistantEnd({ text: "done" }));
  run.child.exit(0);
  await until(run.finished, "the run ended");
  return run.done;
}

describe("the orphan guard, as the run drives it", () => {
  it("starts before pi, hears the group in the spawn's tick, and hears it is gone before the pipe closes", async () => {
    const run = begin();
    // What the guard has heard by the first microtask after pi's spawn: nothing may wait in between.
    let heardBeforeAnyAwait: string[] | undefined;
    const spawn = run.ops.spawn;
    run.ops.spawn = (...args) => {
      const child = spawn(...args);
      queueMicrotask(() => {
        heardBeforeAnyAwait = run.ops.guard.words();
      });
      return child;
    };
    await until(() => run.ops.spawned.length === 1 && run.child.stdout.listenerCount("data") > 0, "pi started");
    expect(heardBeforeAnyAwait).toEqual([`watch ${run.child.pid}`]);
    expect(run.ops.events).toEqual(["guard", "spawn"]);
    const { runToken } = run.ops.spawned[0]!.options;
    expect(run.ops.guard.started).toEqual({
      runToken,
      reservePath: ResultReserve.pathFor(path.join(fake.dir, "result.json")),
      at: run.t0,
    });
    expect(runToken).toMatch(/^[0-9a-f]{32}$/);
    expect(run.ops.guard.words()).toEqual([`watch ${run.child.pid}`]);
    const { exitCode } = await finished(run);
    expect(exitCode).toBe(0);
    expect(run.ops.guard.words()).toEqual([`watch ${run.child.pid}`, "groupGone", "release"]);
  });

  it("each run gets its own token", async () => {
    const [a, b] = [await started(), await started()];
    expect(a.ops.spawned[0]!.options.runToken).not.toBe(b.ops.spawned[0]!.options.runToken);
  });

  it("a straggler that SIGTERM ends: no SIGKILL, and the group is reported gone", async () => {
    const run = await started({}, { straggler: "ends on SIGTERM" });
    await finished(run);
    expect(run.child.signals.map((s) => s.signal)).toEqual(["SIGTERM"]);
    expect(run.ops.guard.words()).toEqual([`watch ${run.child.pid}`, "groupGone", "release"]);
  });

  it(`a straggler that ignores SIGTERM gets SIGKILL ${STRAGGLER_KILL_MS} ms after it, then the group is reported gone`, async () => {
    const run = await started({}, { straggler: "ignores SIGTERM" });
    run.child.print(assistantEnd({ text: "done" }));
    run.child.exit(0);
    await until(() => run.child.signals.length === 1, "the group's SIGTERM");
    const termAt = run.child.signals[0]!.at;
    await run.clock.advance(STRAGGLER_KILL_MS - 1);
    expect(run.child.signals.map((s) => s.signal)).toEqual(["SIGTERM"]);
    expect(run.ops.guard.words()).toEqual([`watch ${run.child.pid}`]);
    await run.clock.advance(1);
    expect(run.child.signals).toEqual([
      { signal: "SIGTERM", at: termAt, afterExit: true },
      { signal: "SIGKILL", at: termAt + STRAGGLER_KILL_MS, afterExit: true },
    ]);
    await run.clock.advance(GROUP_POLL_MS);
    const { result } = await run.done;
    expect(result).toMatchObject({ status: "completed", forcedExit: false });
    expect(run.ops.guard.words()).toEqual([`watch ${run.child.pid}`, "groupGone", "release"]);
  });

  it("a group that cannot be seen to empty after SIGKILL: the guard is released without groupGone", async () => {
    const run = await started({}, { straggler: "ignores SIGTERM" });
    run.ops.signalGroup = () => undefined; // nothing reaches it, SIGKILL included (a zombie that nothing reaps)
    run.child.print(assistantEnd({ text: "done" }));
    run.child.exit(0);
    await until(() => run.clock.pending().length > 0, "the straggler wait");
    await run.clock.advance(STRAGGLER_KILL_MS + 2 * GROUP_POLL_MS);
    const { result } = await run.done;
    expect(result.status).toBe("completed");
    expect(run.ops.guard.words()).toEqual([`watch ${run.child.pid}`, "release"]);
  });
});

describe("the normal end: what left the child's group but carries the run's token", () => {
  it("gets SIGTERM once the child has exited, and the guard is released only after it is gone and result.json is on disk", async () => {
    const run = await started({}, { escapee: "ends on SIGTERM" });
    const resultWhenReleased: boolean[] = [];
    const childExitedWhenSignalled: boolean[] = [];
    const signal = run.ops.signalProcess;
    run.ops.signalProcess = (pid, sig) => {
      childExitedWhenSignalled.push(run.child.exited);
      signal(pid, sig);
    };
    const release = run.ops.guard.release.bind(run.ops.guard);
    run.ops.guard.release = () => {
      resultWhenReleased.push(existsSync(path.join(fake.dir, "result.json")));
      return release();
    };
    run.child.print(assistantEnd({ text: "done" }));
    run.child.exit(0);
    await until(() => run.child.escapeeSignals.length === 1, "the escapee's SIGTERM");
    const termAt = run.clock.now();
    // Gone at the next look, GROUP_POLL_MS later: no SIGKILL.
    await run.clock.advance(GROUP_POLL_MS);
    const { result } = await run.done;
    expect(result.status).toBe("completed");
    expect(run.child.escapeeSignals).toEqual([{ signal: "SIGTERM", at: termAt }]);
    expect(childExitedWhenSignalled).toEqual([true]);
    expect(resultWhenReleased).toEqual([true]);
    expect(run.ops.guard.words()).toEqual([`watch ${run.child.pid}`, "groupGone", "release"]);
  });

  it(`one that ignores SIGTERM gets SIGKILL ${STRAGGLER_KILL_MS} ms later; then the guard is released`, async () => {
    const run = await started({}, { escapee: "ignores SIGTERM" });
    run.child.print(assistantEnd({ text: "done" }));
    run.child.exit(0);
    await until(() => run.child.escapeeSignals.length === 1, "the escapee's SIGTERM");
    const termAt = run.child.escapeeSignals[0]!.at;
    await run.clock.advance(STRAGGLER_KILL_MS - 1);
    expect(run.child.escapeeSignals.map((s) => s.signal)).toEqual(["SIGTERM"]);
    expect(run.ops.guard.words()).not.toContain("release");
    await run.clock.advance(1);
    await run.done;
    expect(run.child.escapeeSignals).toEqual([
      { signal: "SIGTERM", at: termAt },
      { signal: "SIGKILL", at: termAt + STRAGGLER_KILL_MS },
    ]);
    expect(run.ops.guard.words().at(-1)).toBe("release");
    expect(ESCAPEE_PID).toBeGreaterThan(0);
  });

  it("result.json is written only once it is gone: the parent takes the result as the turn's end", async () => {
    const run = await started({}, { escapee: "ignores SIGTERM" });
    const resultFile = path.join(fake.dir, "result.json");
    run.child.print(assistantEnd({ text: "done" }));
    run.child.exit(0);
    await until(() => run.child.escapeeSignals.length === 1, "the escapee's SIGTERM");
    await run.clock.advance(STRAGGLER_KILL_MS - 1);
    expect(existsSync(resultFile)).toBe(false);
    await run.clock.advance(1);
    const { result } = await run.done;
    expect(run.child.escapeeSignals.map((s) => s.signal)).toEqual(["SIGTERM", "SIGKILL"]);
    expect(result.status).toBe("completed");
    expect(existsSync(resultFile)).toBe(true);
  });

  it("one that takes its time to die after SIGKILL is waited for: the guard is released only once it is gone", async () => {
    const run = await started({}, { escapee: "ignores SIGTERM, dies 120 ms after SIGKILL" });
    run.child.print(assistantEnd({ text: "done" }));
    run.child.exit(0);
    await until(() => run.child.escapeeSignals.length === 1, "the escapee's SIGTERM");
    await run.clock.advance(STRAGGLER_KILL_MS);
    expect(run.child.escapeeSignals.map((s) => s.signal)).toEqual(["SIGTERM", "SIGKILL"]);
    await run.clock.advance(100);
    expect(run.ops.guard.words()).not.toContain("release");
    await run.clock.advance(GROUP_POLL_MS);
    await run.done;
    expect(run.child.escapeeAlive).toBe(false);
    expect(run.ops.guard.words().at(-1)).toBe("release");
  });

  it("a run that never started pi looks for nothing", async () => {
    const run = begin({ timeoutMs: 10 });
    let asked = 0;
    run.ops.tokenProcesses = async () => {
      asked++;
      return [];
    };
    await run.clock.advance(10);
    await run.done;
    expect(asked).toBe(0);
  });
});

describe("start-up: limits first, then files", () => {
  it("timeoutMs is armed before any file is touched: a start-up that has not reached pi ends timed_out, pi never started", async () => {
    const run = begin({ timeoutMs: 250 });
    // Synchronously after the call: the run awaits its first files, the limit already pending.
    expect(run.clock.pending()).toEqual([250]);
    expect(run.ops.spawned).toEqual([]);
    await run.clock.advance(250);
    const { result, exitCode } = await run.done;
    expect(exitCode).toBe(1);
    expect(run.ops.spawned).toEqual([]);
    expect(result).toMatchObject({
      status: "timed_out",
      errorMessage: "run exceeded timeoutMs (250 ms)",
      childExitCode: null,
    });
  });

  it("a run whose result.json space cannot be reserved never starts pi, and says why (exit 3 when result.json cannot be written either)", async () => {
    await writeFile(path.join(fake.dir, "a-file"), "");
    const run = begin({ resultPath: path.join(fake.dir, "a-file", "result.json") });
    const { result, exitCode } = await run.done;
    expect(run.ops.spawned).toEqual([]);
    expect(exitCode).toBe(WRAPPER_EXIT.noResult);
    expect(result.status).toBe("failed");
    expect(result.errorMessage).toMatch(
      /^cannot reserve space for result\.json beside .*a-file\/result\.json: .*a-file is not a folder/,
    );
    // The run's temp folder, with the task file written meanwhile, is gone too.
    expect((await readdir(os.tmpdir())).filter((name) => name.startsWith(`pi-subagent-run-${process.pid}-`))).toEqual(
      [],
    );
  });

  it("a completed run leaves no reserve behind", async () => {
    const run = await started();
    await finished(run);
    expect((await readdir(fake.dir)).sort()).toEqual(["events.jsonl", "result.json"]);
  });
});
