/** What the end of a turn makes of an agent's record, whatever ended it. */
import { describe, expect, it } from "vitest";
import { applyTurnEnd, lostResultReason } from "../../../../src/extension/turns/turn-end.js";
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
