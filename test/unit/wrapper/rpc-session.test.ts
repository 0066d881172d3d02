/**
 * The wrapper's side of a child in RPC mode (meta.json `dialogs`), with a recording stdin and
 * fake time: the prompt, the end of pi's work on both pi lines, the child's arguments, and the
 * dialogs folder (ask files, answers, the time-out's cancel).
 */
import { mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { dialogAnswerFileName, dialogAskFileName } from "../../../src/contracts/dialogs.js";
import type { EventRecordBody } from "../../../src/contracts/events.js";
import type { MetaV1 } from "../../../src/contracts/meta.js";
import { checkMeta, parseMeta } from "../../../src/contracts/meta-check.js";
import { TASK_PLACEHOLDER } from "../../../src/contracts/task-handoff.js";
import { buildChildArgs, runsRpc } from "../../../src/wrapper/child.js";
import { RpcSession } from "../../../src/wrapper/rpc-session.js";
import { RunTimers } from "../../../src/wrapper/run-timers.js";
import { formatTranscriptEntry } from "../../../src/wrapper/transcript.js";
import { FakeClock, settle } from "../../support/fake-clock.js";

const base = { runId: "r", task: "t", cwd: "/w", resultPath: "/w/r.json", eventsPath: "/w/e.jsonl" };
const dirs: string[] = [];

afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A session on a stdin that keeps what was written, pi's line told by `settles`. */
async function session(settles: boolean, timeoutMs = 1000) {
  const dir = await mkdtemp(path.join(os.tmpdir(), "psa-rpc-"));
  dirs.push(dir);
  const clock = new FakeClock();
  const timers = new RunTimers(clock);
  const stdin = new PassThrough();
  let written = "";
  stdin.on("data", (chunk: Buffer) => {
    written += chunk.toString("utf8");
  });
  let ended = false;
  stdin.on("finish", () => {
    ended = true;
  });
  const records: EventRecordBody[] = [];
  const warnings: string[] = [];
  const meta = { ...base, resultPath: path.join(dir, "result.json"), dialogs: { timeoutMs } } as MetaV1 & {
    dialogs: { timeoutMs: number };
  };
  const rpc = new RpcSession(stdin, meta, {
    settles: () => settles,
    now: () => clock.now(),
    after: (ms, fn) => timers.after(ms, fn),
    record: (record) => records.push(record),
    warn: (line) => warnings.push(line),
  });
  const lines = () =>
    written
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  await settle();
  return { rpc, clock, dir: path.join(dir, "dialogs"), lines, ended: () => ended, records, warnings, timers };
}

describe("meta.json dialogs", () => {
  it("is accepted as {timeoutMs} and runs pi in RPC mode without the placeholder on its command line", () => {
    const args = buildChildArgs(parseMeta({ ...base, dialogs: { timeoutMs: 5000 } }, "/w"), "/ext/task.js");
    expect(args.slice(0, 2)).toEqual(["--mode", "rpc"]);
    expect(args).not.toContain(TASK_PLACEHOLDER);
    expect(runsRpc(args)).toBe(true);
    expect(runsRpc(buildChildArgs(parseMeta(base, "/w"), "/ext/task.js"))).toBe(false);
  });

  it("a bad dialogs value is one line naming the field", () => {
    expect(checkMeta({ ...base, dialogs: 5 }, "/w").problems).toEqual([
      'meta.json field "dialogs" must be an object like {"timeoutMs": 300000}, not a number',
    ]);
    expect(checkMeta({ ...base, dialogs: { timeoutMs: 0, other: 1 } }, "/w").problems).toEqual([
      'meta.json field "dialogs.timeoutMs" must be a whole number of milliseconds above 0',
      'meta.json field "dialogs.other" is not a known field',
    ]);
  });
});

describe("RpcSession: the end of pi's work", () => {
  it("sends the task's placeholder as the prompt", async () => {
    const s = await session(true);
    s.rpc.start();
    await settle();
    expect(s.lines()).toEqual([{ type: "prompt", message: TASK_PLACEHOLDER }]);
  });

  it("a pi with agent_settled: stdin ends at agent_settled, not at agent_end", async () => {
    const s = await session(true);
    s.rpc.observe({ type: "agent_end" });
    await settle();
    expect(s.ended()).toBe(false);
    expect(s.lines()).toEqual([]);
    s.rpc.observe({ type: "agent_settled" });
    await settle();
    expect(s.ended()).toBe(true);
  });

  it("pi 0.73.1: agent_end sends a get_state probe; an idle answer ends stdin", async () => {
    const s = await session(false);
    s.rpc.observe({ type: "agent_end" });
    await settle();
    const [probe] = s.lines();
    expect(probe).toMatchObject({ type: "get_state" });
    s.rpc.observe({
      type: "response",
      command: "get_state",
      id: probe!.id,
      success: true,
      data: { isStreaming: false, isCompacting: false },
    });
    await settle();
    expect(s.ended()).toBe(true);
  });

  it("pi 0.73.1: a retry announced before the probe's answer keeps pi running until the retry's own end", async () => {
    const s = await session(false);
    s.rpc.observe({ type: "agent_end" });
    s.rpc.observe({ type: "auto_retry_start", attempt: 1 });
    const [first] = s.lines();
    s.rpc.observe({
      type: "response",
      command: "get_state",
      id: first!.id,
      success: true,
      data: { isStreaming: false },
    });
    await settle();
    expect(s.ended()).toBe(false);
    s.rpc.observe({ type: "agent_start" });
    s.rpc.observe({ type: "agent_end" });
    await settle();
    const second = s.lines()[1];
    expect(second).toMatchObject({ type: "get_state" });
    expect(second!.id).not.toBe(first!.id);
    s.rpc.observe({
      type: "response",
      command: "get_state",
      id: second!.id,
      success: true,
      data: { isStreaming: false },
    });
    await settle();
    expect(s.ended()).toBe(true);
  });

  it("pi 0.73.1: a compaction after agent_end is waited for; its end probes again", async () => {
    const s = await session(false);
    s.rpc.observe({ type: "agent_end" });
    s.rpc.observe({ type: "compaction_start", reason: "threshold" });
    const [first] = s.lines();
    s.rpc.observe({
      type: "response",
      command: "get_state",
      id: first!.id,
      success: true,
      data: { isCompacting: true },
    });
    await settle();
    expect(s.ended()).toBe(false);
    s.rpc.observe({ type: "compaction_end", willRetry: false });
    await settle();
    const second = s.lines()[1];
    s.rpc.observe({
      type: "response",
      command: "get_state",
      id: second!.id,
      success: true,
      data: { isStreaming: false, isCompacting: false },
    });
    await settle();
    expect(s.ended()).toBe(true);
  });

  it("pi 0.73.1: an agent_end that says a retry follows sends no probe", async () => {
    const s = await session(false);
    s.rpc.observe({ type: "agent_end", willRetry: true });
    await settle();
    expect(s.lines()).toEqual([]);
  });

  it("a prompt pi refuses ends stdin with a warning naming pi's reason", async () => {
    const s = await session(true);
    s.rpc.observe({ type: "response", command: "prompt", success: false, error: "No API key found for fake" });
    await settle();
    expect(s.ended()).toBe(true);
    expect(s.warnings).toEqual(["pi refused the task: No API key found for fake"]);
  });
});

describe("RpcSession: dialogs through the run's dialogs folder", () => {
  const select = { type: "extension_ui_request", id: "d-1", method: "select", title: "Allow?", options: ["Yes", "No"] };

  it("a select becomes ask file 1 and an asked record; its answer file goes to pi as one response line", async () => {
    const s = await session(true, 60_000);
    s.rpc.observe(select);
    const ask = JSON.parse(await readFile(path.join(s.dir, dialogAskFileName(1)), "utf8"));
    expect(ask).toMatchObject({
      version: 1,
      id: "d-1",
      seq: 1,
      method: "select",
      title: "Allow?",
      options: ["Yes", "No"],
    });
    expect(Date.parse(ask.expiresAt) - Date.parse(ask.askedAt)).toBe(60_000);
    expect(s.records).toEqual([
      { type: "dialog", phase: "asked", id: "d-1", dialogSeq: 1, method: "select", title: "Allow?" },
    ]);
    const temp = path.join(s.dir, ".a.tmp");
    await writeFile(
      temp,
      JSON.stringify({ version: 1, id: "d-1", value: "Yes", answeredBy: "person", answeredAt: "x" }),
    );
    await rename(temp, path.join(s.dir, dialogAnswerFileName(1)));
    // The poll finds it even where the watch does not fire.
    await s.clock.advance(1000);
    expect(s.lines()).toEqual([{ type: "extension_ui_response", id: "d-1", value: "Yes" }]);
    expect(s.records.at(-1)).toMatchObject({ phase: "answered", answeredBy: "person", dialogSeq: 1 });
    s.timers.dispose();
  });

  it("unanswered at timeoutMs: the wrapper writes the cancel (answeredBy timeout) and sends it", async () => {
    const s = await session(true, 5000);
    s.rpc.observe(select);
    await s.clock.advance(4999);
    expect(s.lines()).toEqual([]);
    await s.clock.advance(1);
    expect(s.lines()).toEqual([{ type: "extension_ui_response", id: "d-1", cancelled: true }]);
    const written = JSON.parse(await readFile(path.join(s.dir, dialogAnswerFileName(1)), "utf8"));
    expect(written).toMatchObject({ id: "d-1", cancelled: true, answeredBy: "timeout" });
    expect(s.records.at(-1)).toMatchObject({ phase: "answered", answeredBy: "timeout", cancelled: true });
    s.timers.dispose();
  });

  it("an answer that is not JSON cancels the dialog with a warning, never leaving the child waiting", async () => {
    const s = await session(true, 60_000);
    s.rpc.observe(select);
    await writeFile(path.join(s.dir, dialogAnswerFileName(1)), "{ not json");
    await s.clock.advance(1000);
    expect(s.lines()).toEqual([{ type: "extension_ui_response", id: "d-1", cancelled: true }]);
    expect(s.warnings).toEqual([expect.stringMatching(/^dialog 1: its answer is not valid JSON \(.+\): cancelled$/)]);
    s.timers.dispose();
  });

  it("notify is recorded; setStatus and other fire-and-forget calls are dropped", async () => {
    const s = await session(true);
    s.rpc.observe({
      type: "extension_ui_request",
      id: "n",
      method: "notify",
      message: "careful",
      notifyType: "warning",
    });
    s.rpc.observe({ type: "extension_ui_request", id: "s", method: "setStatus", statusKey: "k", statusText: "t" });
    expect(s.records).toEqual([{ type: "notify", message: "careful", level: "warning" }]);
    expect(s.lines()).toEqual([]);
  });
});

describe("dialog and notify records in the transcript (inspect, tail)", () => {
  it("a dialog reads as asked then answered, a notice with its level", () => {
    const asked = { type: "dialog", phase: "asked", id: "d", dialogSeq: 2, method: "confirm", title: "Go?" } as const;
    expect(formatTranscriptEntry(asked)).toBe("? dialog 2 (confirm): Go?\n");
    expect(formatTranscriptEntry({ ...asked, phase: "answered", answeredBy: "timeout", cancelled: true })).toBe(
      "? dialog 2 answered by timeout (cancelled)\n\n",
    );
    expect(formatTranscriptEntry({ type: "notify", message: "careful", level: "warning" })).toBe(
      "! notice (warning): careful\n\n",
    );
  });
});
