/**
 * The published JSON Schemas (schemas/*.json) are generated from src/contracts: this test
 * fails when a committed schema drifts from the types, and proves that the schemas and the
 * wrapper's own validation agree on every meta.json example.
 */
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { type ContractChecks, formatIssue, loadContractChecks } from "../../../src/cli/contract-check.js";
import { MetaError } from "../../../src/contracts/meta.js";
import { parseMeta } from "../../../src/contracts/meta-check.js";
import type { ResultV1 } from "../../../src/contracts/result.js";
import { emptyUsage } from "../../../src/contracts/usage.js";
import { INVALID_META, VALID_META } from "../../support/meta-examples.js";
import { REPO_ROOT } from "../../support/pi-home.js";
import { runProcess } from "../../support/processes.js";

let checks: ContractChecks;
beforeAll(async () => {
  checks = await loadContractChecks();
});

/** What a file would hold: undefined fields gone, as after JSON.stringify. */
const asFile = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

describe("published schemas", () => {
  it("match what scripts/gen-schemas.mjs generates from src/contracts (run `npm run schemas` after changing a type)", async () => {
    const run = await runProcess(process.execPath, [path.join(REPO_ROOT, "scripts", "gen-schemas.mjs"), "--check"], {
      timeoutMs: 60_000,
    });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
  });

  it.each(VALID_META)("meta.json: both the wrapper and the schema accept %s", (_name, raw) => {
    expect(() => parseMeta(raw, "/base")).not.toThrow();
    expect(checks.meta(asFile(raw))).toEqual([]);
  });

  it.each(INVALID_META)("meta.json: both the wrapper and the schema reject %s", (_name, raw) => {
    expect(() => parseMeta(raw, "/base")).toThrow(MetaError);
    expect(checks.meta(asFile(raw)).length).toBeGreaterThan(0);
  });

  const result: ResultV1 = {
    version: 1,
    runId: "r1",
    status: "completed",
    exitCode: 0,
    finalText: "done",
    usage: emptyUsage(),
    turns: 1,
    toolCalls: 0,
    startedAt: "2026-01-01T00:00:00.000Z",
    endedAt: "2026-01-01T00:00:01.500Z",
    durationMs: 1500,
    childExitCode: 0,
    childSignal: null,
    forcedExit: false,
  };

  it("result.json: a well-formed result passes; each fault is named with its path", () => {
    expect(checks.result(result)).toEqual([]);
    const broken = {
      ...result,
      status: "done",
      exitCode: 0.5,
      usage: { ...emptyUsage(), cost: undefined },
      endedAt: "later",
      extra: true,
    };
    expect(checks.result(asFile(broken)).map(formatIssue)).toEqual([
      'unexpected field "extra"',
      '/status: must be one of "completed", "truncated", "aborted", "interrupted", "timed_out", "incomplete", "failed"',
      "/exitCode: must be integer",
      '/usage: missing required field "cost"',
      '/endedAt: must match format "date-time"',
    ]);
  });

  it("events.jsonl: a record is checked against its own type's shape", () => {
    const stamp = { seq: 3, ts: 1_796_046_533_700 };
    expect(
      checks.event({ type: "tool_call", ...stamp, toolCallId: "c1", toolName: "bash", args: { command: "ls" } }),
    ).toEqual([]);
    expect(checks.event({ type: "retry", ...stamp, phase: "end", attempt: 1, success: true })).toEqual([]);
    expect(checks.event({ type: "settled", ...stamp, aborted: true })).toEqual([]);
    expect(checks.event({ type: "settled", ...stamp })).toEqual([]);
    expect(checks.event({ type: "settled", ...stamp, aborted: "yes" }).map(formatIssue)).toEqual([
      "/aborted: must be boolean",
    ]);
    expect(checks.event({ type: "message_delivered", ...stamp, id: "msg-1", text: "skip legacy/" })).toEqual([]);
    expect(checks.event({ type: "message_delivered", ...stamp, text: "no id" }).map(formatIssue)).toEqual([
      'missing required field "id"',
    ]);
    expect(
      checks.event({
        type: "model_switch",
        ...stamp,
        from: "a/x",
        to: "b/y",
        errorClass: "rate_limit",
        message: "429",
      }),
    ).toEqual([]);
    const dialog = {
      type: "dialog",
      ...stamp,
      phase: "answered",
      id: "d",
      dialogSeq: 1,
      method: "select",
      title: "Allow?",
    };
    expect(checks.event({ ...dialog, answeredBy: "timeout", cancelled: true })).toEqual([]);
    expect(checks.event({ ...dialog, method: "pick" }).map(formatIssue)).not.toEqual([]);
    expect(checks.event({ type: "notify", ...stamp, message: "careful", level: "warning" })).toEqual([]);
    expect(checks.event({ type: "retry", ...stamp, phase: "end", attempt: 1 }).map(formatIssue)).toEqual([
      'missing required field "success"',
    ]);
    expect(
      checks
        .event({ type: "tool_result", ...stamp, toolCallId: "c1", toolName: "bash", isError: "no" })
        .map(formatIssue),
    ).toEqual(["/isError: must be boolean"]);
    expect(checks.event({ type: "assistant_text", seq: 0, ts: 1.5, text: "x" }).map(formatIssue)).toEqual([
      "/seq: must be >= 1",
      "/ts: must be integer",
    ]);
    expect(checks.event({ type: "progress", ...stamp }).map(formatIssue)).toEqual([
      '/type: "progress" is not a record type (run_start, assistant_text, tool_call, tool_result, retry, abort, settled, message_delivered, limit, model_switch, dialog, notify, check, repair, run_end)',
    ]);
  });
});
