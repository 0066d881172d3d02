/**
 * Area 2 — the child misbehaves: crashes mid-stream, is SIGKILLed, hangs without output,
 * ignores SIGTERM while lingering after its answer. Each run ends with the right status, in bounded
 * time, with no process left behind (counted from /proc by the suite's environment tag).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { RunStatus } from "../../src/contracts/result.js";
import { killAll } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, signalsReached, wrapperCase } from "../support/wrapper-harness.js";
import { killLeftovers, settleLeftovers } from "./support.js";

afterEach(async () => {
  await killAll();
  await killLeftovers();
  await cleanupWrapperCases();
});

const answer = (text: string, stopReason = "stop") => ({ assistant: { text, stopReason } });
const grandchild = { spawnGrandchild: { sleepMs: 60_000, pidFile: "gc.pid" } };

type Expected = Partial<{ status: RunStatus; forcedExit: boolean; childSignal: string | null }>;

/**
 * [name, scenario, meta overrides, expected result fields, the signals that reached the child
 * (those the fake pi logged, then the one it died of), bound on the run's wall time in ms]. A lingering child that obeys
 * SIGTERM is tested in test/wrapper/lifecycle.test.ts; the timing of each case on fake time in
 * test/unit/wrapper/run.test.ts.
 */
const FAULTS: Array<[string, object, Record<string, unknown>, Expected, NodeJS.Signals[], number]> = [
  [
    "crashes (SIGSEGV) mid-stream after asking for a tool",
    { steps: [grandchild, answer("let me look", "toolUse"), { crash: "SIGSEGV" }] },
    {},
    { status: "incomplete", childSignal: "SIGSEGV" },
    ["SIGSEGV"],
    10_000,
  ],
  [
    "is SIGKILLed before any answer",
    { steps: [grandchild, { crash: "SIGKILL" }] },
    {},
    { status: "failed", childSignal: "SIGKILL" },
    ["SIGKILL"],
    10_000,
  ],
  [
    "hangs forever without output (timeoutMs 800)",
    { steps: [grandchild, { linger: null }] },
    { timeoutMs: 800 },
    { status: "timed_out", forcedExit: true },
    ["SIGTERM"],
    10_000,
  ],
  [
    "ignores SIGTERM while lingering after its answer: SIGKILL follows",
    { ignoreSigterm: true, steps: [grandchild, answer("done"), { linger: null }] },
    {},
    { status: "completed", forcedExit: true, childSignal: "SIGKILL" },
    ["SIGTERM", "SIGKILL"],
    12_000,
  ],
];

describe(`area 2: ${FAULTS.length} child process faults → right status, bounded time, 0 processes left`, () => {
  it.each(FAULTS)("the child %s", async (_name, scenario, overrides, expected, signals, boundMs) => {
    const run = await (await wrapperCase({ meta: defaultMeta(overrides), scenario })).run();
    expect(run.result).toMatchObject(expected);
    expect(run.code).toBe(expected.status === "completed" ? 0 : 1);
    expect(run.durationMs).toBeLessThan(boundMs);
    expect(run.events.at(-1)).toMatchObject({ type: "run_end", status: expected.status });
    expect(await signalsReached(run)).toEqual(signals);
    // The grandchild shares the child's process group; the wrapper ends the group.
    expect(await settleLeftovers()).toEqual([]);
  });
});
