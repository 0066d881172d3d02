import { appendFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  applyRecord,
  currentTool,
  EventsTail,
  emptyRunProgress,
} from "../../../../src/extension/progress/events-tail.js";

const usage = (input: number, output: number, cost: number) => ({
  input,
  output,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: input + output,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: cost },
});

const line = (record: object) => `${JSON.stringify(record)}\n`;

describe("applyRecord", () => {
  it("knows the model in use: the run_start's --model, then each model_switch's", () => {
    const p = emptyRunProgress();
    applyRecord(p, {
      type: "run_start",
      seq: 1,
      ts: 1000,
      runId: "r",
      pid: 1,
      argv: ["--mode", "json", "--model", "a/x"],
    });
    expect(p.model).toBe("a/x");
    applyRecord(p, {
      type: "model_switch",
      seq: 2,
      ts: 1100,
      from: "a/x",
      to: "b/y",
      errorClass: "rate_limit",
      message: "429",
    });
    expect(p.model).toBe("b/y");
    applyRecord(p, { type: "run_start", seq: 3, ts: 1200, runId: "r", pid: 2, argv: ["--model", "b/y"] });
    expect(p.model).toBe("b/y");
    // The first run_start's time stays the run's start.
    expect(p.startedAt).toBe(1000);
  });

  it("folds a run: start, turns with usage, open tools, retries, end", () => {
    const p = emptyRunProgress();
    applyRecord(p, { type: "run_start", seq: 1, ts: 1000, runId: "r", pid: 1, argv: [] });
    applyRecord(p, { type: "assistant_text", seq: 2, ts: 1100, text: "", usage: usage(100, 10, 0.5) });
    applyRecord(p, { type: "tool_call", seq: 3, ts: 1200, toolCallId: "a", toolName: "bash", args: {} });
    applyRecord(p, { type: "tool_call", seq: 4, ts: 1200, toolCallId: "b", toolName: "read", args: {} });
    expect(currentTool(p)).toBe("read");
    applyRecord(p, { type: "tool_result", seq: 5, ts: 1300, toolCallId: "b", toolName: "read", isError: false });
    expect(currentTool(p)).toBe("bash");
    applyRecord(p, { type: "retry", seq: 6, ts: 1400, phase: "start", attempt: 1 });
    expect(p.retrying).toBe(true);
    applyRecord(p, { type: "assistant_text", seq: 7, ts: 1500, text: "done", usage: usage(50, 5, 0.25) });
    expect(p.retrying).toBe(false);
    applyRecord(p, { type: "run_end", seq: 8, ts: 2000, status: "completed", exitCode: 0 });
    expect(p).toMatchObject({ startedAt: 1000, endedAt: 2000, status: "completed", turns: 2, toolCalls: 2 });
    expect(p.usage).toMatchObject({ input: 150, output: 15, totalTokens: 165, cost: { total: 0.75 } });
    expect(currentTool(p)).toBeUndefined();
  });

  it("keeps a child's latest notify, replaced at most once a second", () => {
    const p = emptyRunProgress();
    applyRecord(p, { type: "notify", seq: 1, ts: 10_000, message: "Formatting 3 files", level: "info" });
    applyRecord(p, { type: "notify", seq: 2, ts: 10_400, message: "too soon" });
    expect(p.notified).toEqual({ message: "Formatting 3 files", at: 10_000 });
    applyRecord(p, { type: "notify", seq: 3, ts: 11_000, message: "Formatted" });
    expect(p.notified).toEqual({ message: "Formatted", at: 11_000 });
    applyRecord(p, { type: "notify", seq: 4, ts: 13_000, message: 5 });
    expect(p.notified?.message).toBe("Formatted");
  });

  it("ignores what is not a record it knows", () => {
    const p = emptyRunProgress();
    for (const junk of [null, 3, "x", [], { type: "mystery" }, { type: "tool_call" }]) applyRecord(p, junk);
    expect(p.turns).toBe(0);
    expect(p.openTools.size).toBe(0);
  });
});

describe("EventsTail", () => {
  let dir: string;
  let file: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "psa-tail-"));
    file = path.join(dir, "events.jsonl");
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it("treats a missing file as a run not started", async () => {
    const tail = new EventsTail(file);
    expect((await tail.poll()).turns).toBe(0);
    expect(tail.done).toBe(false);
  });

  it("reads only appended bytes and keeps a partial last line for the next poll", async () => {
    const tail = new EventsTail(file);
    const text = line({ type: "assistant_text", ts: 1, text: "é".repeat(10), usage: usage(10, 1, 0.1) });
    const tool = line({ type: "tool_call", ts: 2, toolCallId: "c1", toolName: "grep", args: {} });
    // Cut inside the two-byte "é": the decoder must not garble it, the parser must wait.
    const bytes = Buffer.from(text + tool);
    const cut = Buffer.from(text).indexOf(Buffer.from("é")) + 1;
    await writeFile(file, bytes.subarray(0, cut));
    expect((await tail.poll()).turns).toBe(0);
    await appendFile(file, bytes.subarray(cut, bytes.length - 5));
    const mid = await tail.poll();
    expect(mid.turns).toBe(1);
    expect(mid.toolCalls).toBe(0);
    await appendFile(file, bytes.subarray(bytes.length - 5));
    const after = await tail.poll();
    expect(after.toolCalls).toBe(1);
    expect(currentTool(after)).toBe("grep");
    expect(after.usage.input).toBe(10);
    // Polling again with nothing new changes nothing (no double counting).
    expect((await tail.poll()).usage.input).toBe(10);
  });

  it("skips a damaged line and starts over when the file is replaced by a shorter one", async () => {
    const tail = new EventsTail(file);
    await writeFile(
      file,
      `not json\n${line({ type: "assistant_text", ts: 1, text: "", usage: usage(1, 1, 0) })}${line({ type: "assistant_text", ts: 2, text: "" })}`,
    );
    expect((await tail.poll()).turns).toBe(2);
    await writeFile(file, line({ type: "run_end", ts: 9, status: "failed", exitCode: 1 }));
    const p = await tail.poll();
    expect(p.turns).toBe(0);
    expect(tail.done).toBe(true);
    expect(p.status).toBe("failed");
  });
});

describe("EventsTail, polled from two places at once", () => {
  it("folds each record once", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "psa-tail-"));
    try {
      const file = path.join(dir, "events.jsonl");
      await writeFile(
        file,
        Array.from({ length: 50 }, (_, i) =>
          line({ type: "assistant_text", ts: i, text: "", usage: usage(1, 0, 0) }),
        ).join(""),
      );
      const tail = new EventsTail(file);
      await Promise.all([tail.poll(), tail.poll(), tail.poll()]);
      expect(tail.progress.turns).toBe(50);
      expect(tail.progress.usage.input).toBe(50);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
