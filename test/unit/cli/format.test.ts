/** The pure screens of inspect, tail and doctor: what a person reads, table by table. */
import { beforeAll, describe, expect, it } from "vitest";
import { type ContractChecks, loadContractChecks } from "../../../src/cli/contract-check.js";
import { formatDoctorReport, nodeVersionOk, parsePiVersion } from "../../../src/cli/doctor-format.js";
import { checkRunContracts, describeState, formatInspection, runState } from "../../../src/cli/inspect-format.js";
import type { EventLine, RunSnapshot } from "../../../src/cli/run-files.js";
import { parseEventLines } from "../../../src/cli/run-files.js";
import {
  followDecision,
  formatStoppedSummary,
  formatTailLine,
  formatTailSummary,
  tailExitCode,
} from "../../../src/cli/tail-format.js";
import { firstLinePreview, formatCount, formatDuration, lastLines, plural } from "../../../src/cli/text.js";
import type { ResultV1 } from "../../../src/contracts/result.js";
import { emptyUsage, formatCost } from "../../../src/contracts/usage.js";

const T0 = 1_796_046_533_000;
const usage = {
  ...emptyUsage(),
  input: 1200,
  output: 300,
  totalTokens: 1500,
  cost: { ...emptyUsage().cost, total: 0.0123 },
};

const RECORDS = [
  { type: "run_start", runId: "r1", pid: 4242, argv: ["--mode", "json"], seq: 1, ts: T0 },
  {
    type: "assistant_text",
    text: "let me look",
    model: "fake/fast",
    stopReason: "toolUse",
    rawStopReason: "toolUse",
    usage,
    seq: 2,
    ts: T0 + 100,
  },
  { type: "tool_call", toolCallId: "c1", toolName: "bash", args: { command: "ls" }, seq: 3, ts: T0 + 200 },
  { type: "tool_result", toolCallId: "c1", toolName: "bash", isError: false, seq: 4, ts: T0 + 300 },
  {
    type: "assistant_text",
    text: "the answer\nin two lines",
    model: "fake/fast",
    stopReason: "stop",
    rawStopReason: "stop",
    usage,
    seq: 5,
    ts: T0 + 400,
  },
  { type: "run_end", status: "completed", exitCode: 0, seq: 6, ts: T0 + 500 },
];

const lines = (records: Record<string, unknown>[]): EventLine[] =>
  records.map((record, index) => ({ line: index + 1, record }));

const RESULT: ResultV1 = {
  version: 1,
  runId: "r1",
  agent: "scout",
  agentPath: "/root/scout_one",
  status: "completed",
  exitCode: 0,
  stopReason: "stop",
  rawStopReason: "stop",
  finalText: "the answer\nin two lines",
  usage: { ...usage, input: 2400, output: 600, totalTokens: 3000, cost: { ...usage.cost, total: 0.0246 } },
  turns: 2,
  toolCalls: 1,
  resolvedModel: "fake/fast",
  startedAt: new Date(T0).toISOString(),
  endedAt: new Date(T0 + 1500).toISOString(),
  durationMs: 1500,
  childExitCode: 0,
  childSignal: null,
  forcedExit: false,
};

function snapshot(overrides: Partial<RunSnapshot> = {}): RunSnapshot {
  return {
    files: {
      dir: "/runs/0001-spawn",
      resultPath: "/runs/0001-spawn/result.json",
      eventsPath: "/runs/0001-spawn/events.jsonl",
    },
    events: lines(RECORDS),
    eventsExists: true,
    artifacts: ["stderr.log"],
    result: RESULT,
    takenAt: T0 + 2000,
    ...overrides,
  };
}

let checks: ContractChecks;
beforeAll(async () => {
  checks = await loadContractChecks();
});

describe("text helpers", () => {
  it.each([
    [850, "850 ms"],
    [12_345, "12.3 s"],
    [754_000, "12 min 34 s"],
    [-1, "?"],
  ])("formatDuration(%d) = %s", (ms, text) => expect(formatDuration(ms)).toBe(text));

  it("counts, costs, plurals, previews and tails", () => {
    expect(formatCount(1_234_567)).toBe("1,234,567");
    expect(formatCost(0.00123)).toBe("$0.0012");
    expect(formatCost(1.5)).toBe("$1.50");
    expect(plural(1, "record")).toBe("1 record");
    expect(plural(2, "record")).toBe("2 records");
    expect(firstLinePreview("short")).toBe("short");
    expect(firstLinePreview("first\nsecond")).toBe("first  (2 lines, 12 chars)");
    expect(firstLinePreview("x".repeat(150), 100)).toBe(`${"x".repeat(100)}…  (1 line, 150 chars)`);
    expect(lastLines("a\nb\nc\n\n", 2)).toEqual(["b", "c"]);
    expect(lastLines("", 5)).toEqual([]);
  });
});

describe("run state", () => {
  it.each<[string, Partial<RunSnapshot>, string]>([
    ["finished", {}, "completed (exit 0)"],
    [
      "live",
      { result: undefined, events: lines(RECORDS.slice(0, 3)), child: { pid: 4242, alive: true } },
      "running (pi pid 4242, 2.0 s so far)",
    ],
    ["run_end but no result.json", { result: undefined }, "ended completed, but result.json is not there (yet)"],
    [
      "child gone without a result",
      { result: undefined, events: lines(RECORDS.slice(0, 3)), child: { pid: 4242, alive: false } },
      "stopped without result.json (its pi process, pid 4242, is gone)",
    ],
    [
      "nothing yet",
      { result: undefined, events: [], eventsExists: false },
      "not started (no events and no result.json yet)",
    ],
  ])("%s", (_name, overrides, text) => {
    expect(describeState(runState(snapshot(overrides)))).toBe(text);
  });
});

describe("inspect screen", () => {
  it("summarizes a finished run, shows its transcript and that its files hold to the schemas", () => {
    const snap = snapshot();
    const text = formatInspection(snap, checkRunContracts(snap, checks), { transcript: true });
    expect(text).toContain("run       r1  (/runs/0001-spawn)\n");
    expect(text).toContain("agent     /root/scout_one · scout\n");
    expect(text).toContain("status    completed (exit 0) · stop reason stop\n");
    expect(text).toContain(
      "usage     2 turns · 1 tool call · 3,000 tokens (in 2,400, out 600, cache read 0, write 0) · $0.0246\n",
    );
    expect(text).toContain("files     events.jsonl (6 records), result.json, stderr.log\n");
    expect(text).toContain("── transcript (events.jsonl) ──\n# run r1 (pid 4242)\n");
    expect(text).toContain('→ bash {"command":"ls"}\n← bash ok\n');
    expect(text).toContain("## assistant (fake/fast, stop: stop)\nthe answer\nin two lines\n");
    expect(text).toContain("── contracts (schemas/*.schema.json) ──\n✓ result.json\n✓ events.jsonl (6 records)\n");
    expect(text).not.toContain("✗");
  });

  it("shows the final answer instead of the transcript when asked", () => {
    const text = formatInspection(snapshot(), undefined, { transcript: false });
    expect(text).toContain("── final answer ──\nthe answer\nin two lines\n");
    expect(text).not.toContain("transcript");
    expect(text).not.toContain("contracts");
  });

  it("a live run shows usage so far and the record being written", () => {
    const snap = snapshot({
      result: undefined,
      events: lines(RECORDS.slice(0, 3)),
      child: { pid: 4242, alive: true },
      partialLine: '{"type":"tool_res',
    });
    const text = formatInspection(snap, undefined, { transcript: true });
    expect(text).toContain("status    running (pi pid 4242, 2.0 s so far)\n");
    expect(text).toContain(
      "usage     1 turn · 1 tool call · 1,500 tokens (in 1,200, out 300, cache read 0, write 0) · $0.0123 so far\n",
    );
    expect(text).toContain("(a record is being written)");
    expect(text).toContain("no result.json");
  });

  it("a failed run shows its error, the child's exit and the tail of stderr", () => {
    const failed = {
      ...RESULT,
      status: "failed",
      exitCode: 1,
      errorMessage: "pi exited with code 2",
      childExitCode: 2,
    };
    const text = formatInspection(snapshot({ result: failed, stderrTail: "one\ntwo\n" }), undefined, {
      transcript: false,
    });
    expect(text).toContain("status    failed (exit 1)");
    expect(text).toContain("error     pi exited with code 2\n");
    expect(text).toContain("pi        exit 2\n");
    expect(text).toContain("── stderr.log (last 2 lines) ──\none\ntwo\n");
  });

  it("lists every contract violation by file and line, capped", () => {
    const broken = lines([
      { ...RECORDS[0], seq: 1 },
      { type: "tool_result", toolCallId: "c1", toolName: "bash", isError: "no", seq: 3, ts: T0 },
    ]);
    broken.push({ line: 3, error: "not JSON (Unexpected token)", text: "garbage" });
    const snap = snapshot({ events: broken, result: { ...RESULT, status: "done" } });
    const report = checkRunContracts(snap, checks);
    expect(report.passed).toEqual([]);
    expect(report.findings).toEqual([
      {
        label: "result.json",
        issues: [
          '/status: must be one of "completed", "truncated", "aborted", "interrupted", "timed_out", "incomplete", "failed"',
        ],
      },
      { label: "events.jsonl line 2", issues: ["/isError: must be boolean", "/seq: 3 out of order (expected 2)"] },
      { label: "events.jsonl line 3", issues: ["not JSON (Unexpected token)"] },
    ]);
    const text = formatInspection(snap, report, { transcript: false, maxIssues: 2 });
    expect(text).toContain("✗ result.json: /status: must be one of");
    expect(text).toContain("✗ events.jsonl line 2: /isError: must be boolean\n… and 2 more\n");
  });

  it("a record that breaks its contract is noted in the transcript instead of crashing it", () => {
    const snap = snapshot({ events: lines([{ type: "run_start", seq: 1, ts: T0 }]) });
    expect(formatInspection(snap, undefined, { transcript: true })).toContain(
      '? record 1 of type "run_start" cannot be shown',
    );
  });
});

describe("events.jsonl lines", () => {
  it("parses whole lines, numbers them, keeps the one still being written apart", () => {
    const parsed = parseEventLines('{"type":"a"}\n\nnot json\n[1]\n{"type":"b', 5);
    expect(parsed.lines).toEqual([
      { line: 5, record: { type: "a" } },
      { line: 7, error: expect.stringMatching(/^not JSON/), text: "not json" },
      { line: 8, error: "not a JSON object", text: "[1]" },
    ]);
    expect(parsed.partial).toBe('{"type":"b');
    expect(parsed.nextLine).toBe(9);
  });
});

describe("tail lines", () => {
  it("stamps each record with its time and indents continuation lines", () => {
    const text = formatTailLine({ line: 5, record: RECORDS[4]! });
    expect(text).toMatch(/^\d\d:\d\d:\d\d ## assistant \(fake\/fast, stop: stop\)\n {9}the answer\n {9}in two lines$/);
    expect(formatTailLine({ line: 9, error: "not JSON (x)", text: "garbage" })).toBe(
      "?        line 9 is not JSON (x): garbage",
    );
  });

  it("shows pi's settled record (the end of its automatic work) in tail and inspect, aborted when pi said so", () => {
    const settled = { type: "settled", aborted: false, seq: 6, ts: T0 + 450 };
    expect(formatTailLine({ line: 6, record: settled })).toMatch(/^\d\d:\d\d:\d\d # pi settled$/);
    expect(formatTailLine({ line: 6, record: { ...settled, aborted: true } })).toMatch(
      /^\d\d:\d\d:\d\d # pi settled \(aborted\)$/,
    );
    const snap = snapshot({ events: lines([...RECORDS.slice(0, 5), settled, { ...RECORDS[5]!, seq: 7 }]) });
    const text = formatInspection(snap, checkRunContracts(snap, checks), { transcript: true });
    expect(text).toContain("the answer\nin two lines\n\n# pi settled\n\n# end: completed (exit 0)");
    expect(text).toContain("✓ events.jsonl (7 records)");
  });

  it("shows a live message where the child read it, in tail and inspect, and the record passes the contract check", () => {
    const delivered = {
      type: "message_delivered",
      id: "msg-1",
      text: "[MESSAGE from /root · task w · id msg-1]\nskip legacy/",
      seq: 5,
      ts: T0 + 350,
    };
    expect(formatTailLine({ line: 5, record: delivered })).toMatch(
      /^\d\d:\d\d:\d\d ## message msg-1 \(read by the child\)\n {9}\[MESSAGE from \/root · task w · id msg-1\]\n {9}skip legacy\/$/,
    );
    const records = [...RECORDS.slice(0, 4), delivered, ...RECORDS.slice(4).map((r) => ({ ...r, seq: r.seq + 1 }))];
    const snap = snapshot({ events: lines(records) });
    const text = formatInspection(snap, checkRunContracts(snap, checks), { transcript: true });
    expect(text).toContain(
      "← bash ok\n\n## message msg-1 (read by the child)\n[MESSAGE from /root · task w · id msg-1]\nskip legacy/\n\n## assistant",
    );
    expect(text).toContain("✓ events.jsonl (7 records)");
  });

  it("ends with a summary and an exit code from result.json, else from run_end", () => {
    expect(formatTailSummary(RESULT, undefined)).toBe("── completed (exit 0) · 1.5 s · 2 turns · $0.0246 ──");
    expect(formatTailSummary({ ...RESULT, status: "failed", exitCode: 1, errorMessage: "boom" }, undefined)).toBe(
      "── failed (exit 1) · 1.5 s · 2 turns · $0.0246 · boom ──",
    );
    expect(formatTailSummary(undefined, { status: "aborted", exitCode: 1 })).toBe(
      "── aborted (exit 1) · no result.json ──",
    );
    expect(formatStoppedSummary(4242)).toBe("── stopped without result.json (its pi process, pid 4242, is gone) ──");
    expect(tailExitCode(RESULT, undefined)).toBe(0);
    expect(tailExitCode(undefined, { status: "aborted" })).toBe(1);
    expect(tailExitCode(undefined, undefined)).toBe(1);
  });

  it.each([
    ["result.json is there", { resultPresent: true }, "finished"],
    ["run_end just written: wait for result.json", { runEndAt: 9_000 }, "wait"],
    ["run_end long ago and no result.json", { runEndAt: 4_000 }, "finished"],
    ["pi alive", { childAlive: true, lastDataAt: 0 }, "wait"],
    ["pi gone, recently active", { childAlive: false, lastDataAt: 5_000 }, "wait"],
    ["pi gone, silent for 10 s", { childAlive: false, lastDataAt: 0 }, "stopped"],
    ["no pid known", { childAlive: undefined, lastDataAt: 0 }, "wait"],
  ])("follow decision: %s", (_name, facts, decision) => {
    expect(
      followDecision({
        resultPresent: false,
        runEndAt: undefined,
        childAlive: undefined,
        lastDataAt: 10_000,
        now: 10_000,
        ...facts,
      }),
    ).toBe(decision);
  });
});

describe("doctor screen", () => {
  it("marks each check, says what to do about failures, and counts them", () => {
    const text = formatDoctorReport([
      { name: "node", ok: true, detail: "20.20.2 (needs ≥ 20)" },
      { name: "pi --version", ok: false, detail: "no answer within 500 ms (stopped)", hint: "raise --timeout-ms" },
      { name: "pi agent dir", ok: true, detail: "/x is readable", notes: ["holds models.json"] },
    ]);
    expect(text).toBe(
      [
        "✓ node          20.20.2 (needs ≥ 20)",
        "✗ pi --version  no answer within 500 ms (stopped)",
        "                → raise --timeout-ms",
        "✓ pi agent dir  /x is readable",
        "                holds models.json",
        "",
        "1 check failed",
        "",
      ].join("\n"),
    );
    expect(formatDoctorReport([{ name: "node", ok: true, detail: "ok" }])).toContain("\nall checks passed\n");
  });

  it("reads Node and pi versions", () => {
    expect(nodeVersionOk("20.0.0")).toBe(true);
    expect(nodeVersionOk("v22.1.0")).toBe(true);
    expect(nodeVersionOk("18.19.1")).toBe(false);
    expect(parsePiVersion("0.73.1\n")).toBe("0.73.1");
    expect(parsePiVersion("\npi v0.74.0\n")).toBe("0.74.0");
    expect(parsePiVersion("")).toBeUndefined();
  });
});
