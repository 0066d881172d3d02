import { afterEach, describe, expect, it } from "vitest";
import { killAll } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, fakePiSignals, wrapperCase } from "../support/wrapper-harness.js";

afterEach(async () => {
  await killAll();
  await cleanupWrapperCases();
});

describe("subagent-wrapper against the fake pi: outcomes", () => {
  it("a tool call then a final answer completes, with normalized events, usage, turns and artifacts", async () => {
    const run = await (await wrapperCase({ scenario: "tool-then-answer" })).run();
    expect(run.code).toBe(0);
    expect(run.result).toMatchObject({
      version: 1,
      runId: "run-1",
      status: "completed",
      exitCode: 0,
      stopReason: "stop",
      rawStopReason: "stop",
      finalText: "final answer",
      turns: 2,
      toolCalls: 1,
      resolvedModel: "fake/fast",
      childExitCode: 0,
      childSignal: null,
      forcedExit: false,
    });
    expect(run.result!.usage.totalTokens).toBe(30);
    expect(run.result!.usage.cost.total).toBeCloseTo(0.002);
    expect(Date.parse(run.result!.endedAt) - Date.parse(run.result!.startedAt)).toBe(run.result!.durationMs);

    const types = run.events.map((e) => e.type);
    expect(types).toEqual(["run_start", "assistant_text", "tool_call", "tool_result", "assistant_text", "run_end"]);
    expect(run.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    for (const [i, event] of run.events.entries()) {
      expect(typeof event.ts).toBe("number");
      if (i > 0) expect(event.ts).toBeGreaterThanOrEqual(run.events[i - 1]!.ts);
    }
    expect(run.events[2]).toMatchObject({ type: "tool_call", toolName: "bash", args: { command: expect.any(String) } });
    expect(run.events.at(-1)).toMatchObject({ type: "run_end", status: "completed", exitCode: 0 });

    const transcript = await run.read("out/transcript.md");
    expect(transcript).toContain("let me look");
    expect(transcript).toMatch(/→ bash \{"command":/);
    expect(transcript).toContain("← bash ok");
    expect(transcript).toContain("final answer");
    expect(await run.read("out/stdout.log")).toContain('"type":"message_update"');
  });

  it("a non-terminal toolUse message followed later by the true completion does not end the run early", async () => {
    // The fake exits 500 ms after its final message: within a 2 s grace, nothing is forced.
    const run = await (
      await wrapperCase({ scenario: "tooluse-then-late-final", meta: defaultMeta({ graceMs: 2000 }) })
    ).run();
    expect(run.code).toBe(0);
    expect(run.result).toMatchObject({
      status: "completed",
      exitCode: 0,
      stopReason: "stop",
      rawStopReason: "stop",
      finalText: "final",
    });
    expect(run.events.some((e) => e.type === "tool_call")).toBe(true);
    expect(run.result!.forcedExit).toBe(false);
  });

  it("an unknown stop reason is not terminal", async () => {
    const run = await (await wrapperCase({ scenario: "unknown-stop" })).run();
    expect(run.result).toMatchObject({ status: "completed", finalText: "real end" });
    expect(run.events.find((e) => e.type === "assistant_text")).toMatchObject({ rawStopReason: "weird" });
    expect(run.events.find((e) => e.type === "assistant_text")).not.toHaveProperty("stopReason");
  });

  it("a retried provider error is not final; the recovered answer decides", async () => {
    const run = await (await wrapperCase({ scenario: "retry-then-success" })).run();
    expect(run.code).toBe(0);
    expect(run.result).toMatchObject({ status: "completed", finalText: "recovered", turns: 2 });
    const retries = run.events.filter((e) => e.type === "retry");
    expect(retries).toEqual([
      expect.objectContaining({ phase: "start", attempt: 1, maxAttempts: 3, delayMs: 50 }),
      expect.objectContaining({ phase: "end", success: true }),
    ]);
  });

  it("a final provider error is failed with pi's message, though pi exits 0", async () => {
    const run = await (await wrapperCase({ scenario: "error-final" })).run();
    expect(run.code).toBe(1);
    expect(run.result).toMatchObject({ status: "failed", exitCode: 1, stopReason: "error", childExitCode: 0 });
    expect(run.result!.errorMessage).toContain("provider exploded");
    expect(run.stderr).toContain("failed: provider exploded");
  });

  it("a length stop is truncated", async () => {
    const run = await (await wrapperCase({ scenario: "length" })).run();
    expect(run.code).toBe(1);
    expect(run.result).toMatchObject({ status: "truncated", stopReason: "length", exitCode: 1 });
  });

  it("pi's own abort is aborted with source child", async () => {
    const run = await (await wrapperCase({ scenario: "pi-abort" })).run();
    expect(run.code).toBe(1);
    expect(run.result).toMatchObject({ status: "aborted", abortSource: "child", abortReason: "Request was aborted" });
    expect(run.events).toContainEqual(
      expect.objectContaining({ type: "abort", source: "child", reason: "Request was aborted" }),
    );
  });

  it("an [ABORT] line stops a lingering child at once and reports the reason", async () => {
    // A grace far beyond the harness's 25 s limit: the run ends only if the marker stops the child at once.
    const run = await (await wrapperCase({ scenario: "abort-marker", meta: defaultMeta({ graceMs: 600_000 }) })).run();
    expect(run.timedOut).toBe(false);
    expect(run.code).toBe(1);
    expect(run.result).toMatchObject({
      status: "aborted",
      exitCode: 1,
      abortReason: "API is not enabled for this project",
      abortSource: "marker",
      forcedExit: true,
      childSignal: null,
      childExitCode: 143,
    });
    expect(run.events).toContainEqual(
      expect.objectContaining({ type: "abort", source: "marker", reason: "API is not enabled for this project" }),
    );
    expect((await fakePiSignals(run.dir)).map((s) => s.signal)).toEqual(["SIGTERM"]);
  });

  it("an [ABORT] quoted mid-line is not a marker", async () => {
    const run = await (await wrapperCase({ scenario: "abort-midline" })).run();
    expect(run.result).toMatchObject({ status: "completed", finalText: "Note: do not write [ABORT] here" });
    expect(run.events.some((e) => e.type === "abort")).toBe(false);
  });

  it("a child that dies after asking for a tool is incomplete, with its exit code and stderr", async () => {
    const run = await (await wrapperCase({ scenario: "crash" })).run();
    expect(run.code).toBe(1);
    expect(run.result).toMatchObject({
      status: "incomplete",
      stopReason: "toolUse",
      childExitCode: 3,
      finalText: "running the build",
    });
    expect(run.result!.errorMessage).toContain("boom: something broke");
    expect(await run.read("out/stderr.log")).toContain("boom: something broke");
  });

  it("a child that dies with no answer is failed, with the tail of its stderr", async () => {
    const run = await (await wrapperCase({ scenario: "crash-nothing" })).run();
    expect(run.code).toBe(1);
    expect(run.result).toMatchObject({ status: "failed", childExitCode: 1, turns: 0 });
    expect(run.result!.errorMessage).toContain("fatal: cannot start");
  });

  it("a child killed by a signal is failed and names the signal", async () => {
    const run = await (
      await wrapperCase({ scenario: { steps: [{ stderr: "segfaulting" }, { crash: "SIGSEGV" }] } })
    ).run();
    expect(run.result).toMatchObject({ status: "failed", childSignal: "SIGSEGV", childExitCode: null });
    expect(run.result!.errorMessage).toContain("SIGSEGV");
  });

  it("garbage, unknown events and an oversized line never stop the run, and stay in the raw log", async () => {
    const run = await (await wrapperCase({ scenario: "garbage" })).run();
    expect(run.result).toMatchObject({ status: "completed", finalText: "done" });
    expect(run.events.map((e) => e.type)).toEqual(["run_start", "assistant_text", "run_end"]);
    const raw = await run.read("out/stdout.log");
    expect(raw).toContain("this is not json\n");
    expect(raw).toContain("[1,2,3]\n");
    expect(raw).toContain("totally_unknown_event");
    expect(raw.length).toBeGreaterThan(200_000);
  });

  it("message_update deltas are not copied into events.jsonl", async () => {
    const run = await (await wrapperCase({ scenario: "big-updates" })).run();
    expect(run.result?.status).toBe("completed");
    const events = await run.read("out/events.jsonl");
    const raw = await run.read("out/stdout.log");
    expect(events).not.toContain("message_update");
    expect(raw.length).toBeGreaterThan(20 * events.length);
  });
});
