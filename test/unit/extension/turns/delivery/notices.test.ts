import { describe, expect, it } from "vitest";
import { LIMITS } from "../../../../../src/contracts/tree.js";
import {
  describeNotice,
  messageNotice,
  stopNotice,
  turnEndNotice,
} from "../../../../../src/extension/turns/delivery/notices.js";
import { agentRecord } from "../../../../support/records.js";

const spent = (total_tokens: number) => ({ input: total_tokens, output: 0, total_tokens, cost: 0 });

describe("notices", () => {
  it("a completed turn carries no outcome or reason; subtree_usage only when descendants spent", () => {
    const record = agentRecord({ status: "completed" });
    const leaf = turnEndNotice(record, {
      outcome: "completed",
      reason: "ignored",
      text: "done",
      reportStored: true,
      subtreeUsage: spent(0),
    });
    expect(leaf).toMatchObject({
      type: "completed",
      agent_status: "completed",
      report: "done",
      report_chars: 4,
      report_stored: true,
    });
    expect(leaf).not.toHaveProperty("outcome");
    expect(leaf).not.toHaveProperty("reason");
    expect(leaf).not.toHaveProperty("subtree_usage");
    expect(
      turnEndNotice(record, { outcome: "completed", text: "", reportStored: false, subtreeUsage: spent(9) })
        .subtree_usage,
    ).toEqual(spent(9));
  });

  it("a failed turn says its outcome and reason, and its type is the status it left", () => {
    const record = agentRecord({ status: "errored", health: "unhealthy" });
    expect(
      turnEndNotice(record, { outcome: "timed_out", reason: "turn limit", text: "", reportStored: false }),
    ).toMatchObject({
      type: "errored",
      health: "unhealthy",
      outcome: "timed_out",
      reason: "turn limit",
    });
  });

  it("a wrapped-up turn's notice carries limit, answered (completed) or stopped (interrupted), and the user's line says so", () => {
    const limit = { name: "max_turns", value: 5, used: 5 };
    const answered = turnEndNotice(agentRecord({ status: "completed" }), {
      outcome: "completed",
      text: "done: A; left: B",
      reportStored: true,
      limit,
    });
    expect(answered).toMatchObject({ type: "completed", limit, report: "done: A; left: B" });
    expect(answered).not.toHaveProperty("outcome");
    const stopped = turnEndNotice(agentRecord({ status: "interrupted" }), {
      outcome: "interrupted",
      reason: "limit max_turns reached (5 of 5): no answer within the grace of 2 model requests",
      text: "still digging",
      reportStored: true,
      limit,
    });
    expect(stopped).toMatchObject({ type: "interrupted", limit, report: "still digging" });
    expect(describeNotice(answered)).toMatch(/completed \[wrap-up: max_turns 5\/5\]: done: A; left: B$/);
    expect(
      turnEndNotice(agentRecord({ status: "completed" }), { outcome: "completed", text: "x", reportStored: true }),
    ).not.toHaveProperty("limit");
  });

  it("an isolated agent's notices carry its worktree, bounded; others carry none", () => {
    const worktree = {
      path: "/t/worktrees/w",
      branch: "subagent/7f3a9c2e-w",
      base_commit: "a".repeat(40),
      head_commit: "b".repeat(40),
      changed_files: ["x.ts"],
      insertions: 3,
      deletions: 1,
    };
    const record = agentRecord({ status: "completed" });
    expect(
      turnEndNotice(record, { outcome: "completed", text: "done", reportStored: true, worktree }).worktree,
    ).toEqual(worktree);
    expect(stopNotice(agentRecord({ status: "interrupted" }), "interrupt", undefined, worktree).worktree).toEqual(
      worktree,
    );
    expect(turnEndNotice(record, { outcome: "completed", text: "done", reportStored: true })).not.toHaveProperty(
      "worktree",
    );
    const many = { ...worktree, changed_files: Array.from({ length: 60 }, (_, i) => `f${i}`) };
    expect(
      turnEndNotice(record, { outcome: "completed", text: "", reportStored: true, worktree: many }).worktree,
    ).toMatchObject({
      changed_files: many.changed_files.slice(0, LIMITS.changedFilesListed),
      changed_files_total: 60,
    });
  });

  it("interrupt and close say who stopped the turn", () => {
    expect(stopNotice(agentRecord({ status: "interrupted" }), "interrupt", undefined)).toMatchObject({
      type: "interrupted",
      outcome: "interrupted",
      reason: "interrupted by its parent",
    });
    expect(stopNotice(agentRecord({ status: "shutdown" }), "close", undefined)).toMatchObject({
      type: "shutdown",
      reason: "closed by its parent",
    });
    // The person at the terminal (/agents) is not the parent's model: the model reads who it was.
    expect(stopNotice(agentRecord({ status: "interrupted" }), "interrupt", undefined, undefined, "user")).toMatchObject(
      {
        type: "interrupted",
        outcome: "interrupted",
        reason: "interrupted by the user",
      },
    );
    expect(stopNotice(agentRecord({ status: "shutdown" }), "close", undefined, undefined, "user")).toMatchObject({
      type: "shutdown",
      reason: "closed by the user",
    });
  });

  it("a message from a child whose record cannot be read names it by path; a long one is bounded", () => {
    const text = "x".repeat(20_000);
    const notice = messageNotice("/root/a", undefined, text);
    expect(notice).toMatchObject({
      agent_name: "/root/a",
      nickname: "/root/a",
      type: "message",
      agent_status: "running",
      report_chars: 20_000,
    });
    expect(JSON.stringify(notice).length).toBeLessThanOrEqual(LIMITS.maxMessageChars);
    expect(
      messageNotice("/root/a", agentRecord({ path: "/root/a", nickname: "Ada", model: "m/x" }), "hi"),
    ).toMatchObject({ nickname: "Ada", model: "m/x" });
  });

  it("describeNotice: one line, the report cut at 200 chars without splitting a surrogate pair", () => {
    const record = agentRecord({ status: "completed" });
    expect(describeNotice(turnEndNotice(record, { outcome: "completed", text: "", reportStored: false }))).toBe(
      "/root/worker (Euclid) completed",
    );
    expect(describeNotice(messageNotice("/root/a", undefined, "hello"))).toBe("message from /root/a: hello");
    const long = describeNotice(
      turnEndNotice(record, { outcome: "completed", text: `${"a".repeat(199)}😀tail`, reportStored: true }),
    );
    expect(long).toBe(`/root/worker (Euclid) completed: ${"a".repeat(199)}…`);
  });
});
