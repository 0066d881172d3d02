/** What the end of a turn makes of an agent's record, whatever ended it. */
import { describe, expect, it } from "vitest";
import { applyTurnEnd, lostResultReason, planTurnEnd } from "../../../../src/extension/turns/turn-end.js";
import { turnResult } from "../../../support/fake-turns.js";
import { agentRecord } from "../../../support/records.js";

describe("applyTurnEnd", () => {
  it("a result decides outcome, status and health; its error or abort reason is the reason", () => {
    const record = agentRecord({ status: "running" });
    expect(applyTurnEnd(record, { result: turnResult({ status: "completed", finalText: "done" }) })).toEqual({
      outcome: "completed",
      reason: undefined,
      text: "done",
    });
    expect(record).toMatchObject({
      status: "completed",
      health: "healthy",
      lastOutcome: "completed",
      lastTurnStatus: "completed",
    });
    expect(applyTurnEnd(record, { result: turnResult({ status: "timed_out", errorMessage: "limit" }) }).reason).toBe(
      "limit",
    );
    expect(record).toMatchObject({
      status: "errored",
      health: "unhealthy",
      lastOutcome: "timed_out",
      lastReason: "limit",
    });
    expect(applyTurnEnd(record, { result: turnResult({ status: "aborted", abortReason: "no access" }) }).reason).toBe(
      "no access",
    );
    expect(record.status).toBe("aborted");
  });

  it("no result: failed with the failure as the reason, unless this process stopped the turn (interrupted)", () => {
    const record = agentRecord({ status: "running" });
    expect(applyTurnEnd(record, { failure: "could not start" })).toEqual({
      outcome: "failed",
      reason: "could not start",
      text: "",
    });
    expect(record.status).toBe("errored");
    const stopped = agentRecord({ status: "running", health: "healthy" });
    expect(applyTurnEnd(stopped, { stopping: "interrupt" }).outcome).toBe("interrupted");
    expect(stopped).toMatchObject({ status: "interrupted", lastTurnStatus: "interrupted", health: "healthy" });
  });

  it("a turn stopped by close keeps the record's status (close sets shutdown) and notes how the turn went", () => {
    const record = agentRecord({ status: "shutdown" });
    applyTurnEnd(record, { stopping: "close", result: turnResult({ status: "completed" }) });
    expect(record).toMatchObject({ status: "shutdown", lastTurnStatus: "completed", lastOutcome: "completed" });
  });
});

describe("lostResultReason", () => {
  it("names how the wrapper exited, and a damaged result when there is one", () => {
    expect(lostResultReason("signal SIGKILL", undefined)).toBe(
      "wrapper exited (signal SIGKILL) without writing result.json",
    );
    expect(lostResultReason(undefined, "result.json is empty")).toBe(
      "wrapper exited (unknown); the run's result.json is empty",
    );
  });
});

describe("planTurnEnd: every fact given, nothing patched afterwards", () => {
  const part = { kind: "NEW_TASK" as const, from: "/root", text: "task", sentAt: "2026-01-01T00:00:00.000Z" };
  const base = { runName: "0001-spawn", parts: [part], notify: true, commitHow: "completed" };
  const noTurns = turnResult({ status: "interrupted", turns: 0 });
  const twoTurns = turnResult({ status: "interrupted", turns: 2 });
  /** [case, facts, returnParts given back, dropConfirmedOf, storeReport, failure, restored]. */
  const rows: Array<
    [string, Parameters<typeof planTurnEnd>[0], boolean, string | undefined, boolean, string | undefined, boolean]
  > = [
    [
      "ended on its own",
      { ...base, result: twoTurns, stopping: undefined },
      false,
      "0001-spawn",
      true,
      undefined,
      false,
    ],
    [
      "stopped before any model turn",
      { ...base, result: noTurns, stopping: "interrupt" },
      true,
      undefined,
      true,
      undefined,
      false,
    ],
    [
      "stopped after two model turns",
      { ...base, result: twoTurns, stopping: "close" },
      false,
      "0001-spawn",
      true,
      undefined,
      false,
    ],
    [
      "stopped, no result, the record counts its turns",
      { ...base, result: undefined, stopping: "shutdown", turnsRan: 1 },
      false,
      "0001-spawn",
      true,
      undefined,
      false,
    ],
    [
      "stopped though the result tells its status",
      { ...base, result: noTurns, stopping: undefined, stopped: true },
      true,
      undefined,
      true,
      undefined,
      false,
    ],
    [
      "its wrapper died",
      { ...base, result: undefined, stopping: undefined, failure: "wrapper exited (SIGKILL)" },
      false,
      "0001-spawn",
      true,
      "wrapper exited (SIGKILL)",
      false,
    ],
    [
      "no answer known, restored",
      { ...base, result: undefined, stopping: "shutdown", answered: false, restored: true },
      true,
      undefined,
      false,
      undefined,
      true,
    ],
    [
      "never started",
      { ...base, runName: undefined, result: undefined, stopping: undefined },
      false,
      undefined,
      false,
      undefined,
      false,
    ],
  ];
  it.each(rows)("%s", (_case, facts, partsBack, dropConfirmedOf, storeReport, failure, restored) => {
    const plan = planTurnEnd(facts);
    expect(plan.returnParts).toEqual(partsBack ? [part] : undefined);
    expect(plan).toMatchObject({ dropConfirmedOf, storeReport, failure, restored, stopping: facts.stopping });
    expect(plan.commitHow).toBe(facts.runName === undefined ? undefined : "completed");
  });
});
