import { describe, expect, it } from "vitest";
import { LIMITS } from "../../../src/contracts/tree.js";
import { describeNotice, messageNotice, stopNotice, turnEndNotice } from "../../../src/extension/turns/notices.js";
import { agentRecord } from "../../support/records.js";

const spent = (total_tokens: number) => ({ input: total_tokens, output: 0, total_tokens, cost: 0 });

describe("notices", () => {
  it("a completed turn carries no outcome or reason; subtree_usage only when descendants spent", () => {
    const record = agentRecord({ status: "completed" });
    const leaf = turnEndNotice(record, { outcome: "completed", reason: "ignored", text: "done", reportStored: true, subtreeUsage: spent(0) });
    expect(leaf).toMatchObject({ type: "completed", agent_status: "completed", report: "done", report_chars: 4, report_stored: true });
    expect(leaf).not.toHaveProperty("outcome");
    expect(leaf).not.toHaveProperty("reason");
    expect(leaf).not.toHaveProperty("subtree_usage");
    expect(turnEndNotice(record, { outcome: "completed", text: "", reportStored: false, subtreeUsage: spent(9) }).subtree_usage).toEqual(spent(9));
  });

  it("a failed turn says its outcome and reason, and its type is the status it left", () => {
    const record = agentRecord({ status: "errored", health: "unhealthy" });
    expect(turnEndNotice(record, { outcome: "timed_out", reason: "turn limit", text: "", reportStored: false })).toMatchObject({
      type: "errored",
      health: "unhealthy",
      outcome: "timed_out",
      reason: "turn limit",
    });
  });

  it("interrupt and close say who stopped the turn", () => {
    expect(stopNotice(agentRecord({ status: "interrupted" }), "interrupt", undefined)).toMatchObject({
      type: "interrupted",
      outcome: "interrupted",
      reason: "interrupted by its parent",
    });
    expect(stopNotice(agentRecord({ status: "shutdown" }), "close", undefined)).toMatchObject({ type: "shutdown", reason: "closed by its parent" });
  });

  it("a message from a child whose record cannot be read names it by path; a long one is bounded", () => {
    const text = "x".repeat(20_000);
    const notice = messageNotice("/root/a", undefined, text);
    expect(notice).toMatchObject({ agent_name: "/root/a", nickname: "/root/a", type: "message", agent_status: "running", report_chars: 20_000 });
    expect(JSON.stringify(notice).length).toBeLessThanOrEqual(LIMITS.maxMessageChars);
    expect(messageNotice("/root/a", agentRecord({ path: "/root/a", nickname: "Ada", model: "m/x" }), "hi")).toMatchObject({ nickname: "Ada", model: "m/x" });
  });

  it("describeNotice: one line, the report cut at 200 chars without splitting a surrogate pair", () => {
    const record = agentRecord({ status: "completed" });
    expect(describeNotice(turnEndNotice(record, { outcome: "completed", text: "", reportStored: false }))).toBe("/root/worker (Euclid) completed");
    expect(describeNotice(messageNotice("/root/a", undefined, "hello"))).toBe("message from /root/a: hello");
    const long = describeNotice(turnEndNotice(record, { outcome: "completed", text: `${"a".repeat(199)}😀tail`, reportStored: true }));
    expect(long).toBe(`/root/worker (Euclid) completed: ${"a".repeat(199)}…`);
  });
});
