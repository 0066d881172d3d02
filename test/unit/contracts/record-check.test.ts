/**
 * Records read back from disk are checked against the contracts: agent.json (AgentRecordV1),
 * an inbox notice (Notice) and result.json (ResultV1). A sound record passes with every field
 * it holds — unknown ones included, so a newer writer's additions survive — and a damaged one
 * gets one line that says what is wrong, whatever the file holds.
 */
import { describe, expect, it } from "vitest";
import { checkNotice } from "../../../src/contracts/notice.js";
import { checkResult } from "../../../src/contracts/result.js";
import { checkAgentRecord } from "../../../src/contracts/tree.js";
import { turnResult } from "../../support/fake-turns.js";
import { agentRecord } from "../../support/records.js";

const sound = () =>
  JSON.parse(JSON.stringify(agentRecord({ path: "/root/mid/leaf", runs: ["0001-spawn", "0002-followup"] }))) as Record<
    string,
    unknown
  >;
const problemOf = (raw: unknown, expectedPath?: string) => {
  const checked = checkAgentRecord(raw, expectedPath);
  return checked.ok ? "ok" : checked.problem;
};

const worktree = () => ({
  path: "/t/worktrees/mid-leaf",
  branch: "subagent/7f3a9c2e-mid-leaf",
  baseCommit: "a".repeat(40),
  gitDir: "/repo/.git",
  subdir: "src",
});

describe("checkAgentRecord", () => {
  it.each<[string, unknown]>([
    ["a string", "/w"],
    ["a relative path", { ...worktree(), path: "w" }],
    ["a branch outside subagent/", { ...worktree(), branch: "main" }],
    ["a base commit that is not a sha", { ...worktree(), baseCommit: "HEAD" }],
    ["a subdir that climbs out", { ...worktree(), subdir: "../../etc" }],
    ["an absolute subdir", { ...worktree(), subdir: "/etc" }],
    ["setupPaths that are not strings", { ...worktree(), setupPaths: [1] }],
  ])("refuses a worktree that is %s (turns start and git runs there)", (_what, value) => {
    expect(problemOf({ ...sound(), worktree: value })).toMatch(/^field "worktree" must be a worktree \(/);
  });

  it("passes a sound record as it is, unknown fields and all (forward compatible)", () => {
    const raw = { ...sound(), worktree: worktree(), somethingNew: [1, 2] };
    const checked = checkAgentRecord(raw, "/root/mid/leaf");
    expect(checked).toEqual({ ok: true, record: raw });
  });

  it("checks the optional fields it knows only when they are there", () => {
    const raw = {
      ...sound(),
      lastOutcome: "timed_out",
      lastReason: "slow",
      lastTurnStatus: "errored",
      agentSource: "user",
      notifiedRun: "0001-spawn",
    };
    expect(problemOf(raw)).toBe("ok");
    expect(problemOf({ ...raw, lastOutcome: "exploded" })).toBe(
      'field "lastOutcome" must be one of completed, truncated, aborted, interrupted, timed_out, incomplete, failed, not "exploded"',
    );
  });

  it.each<[string, (r: Record<string, unknown>) => unknown, string]>([
    ["an empty object", () => ({}), 'field "version" is missing'],
    ["a number", () => 5, "it holds a number, not a JSON object"],
    ["an array", () => [], "it holds an array, not a JSON object"],
    ["a string", () => "x", "it holds a string, not a JSON object"],
    ["null", () => null, "it holds null, not a JSON object"],
    ["version 2", (r) => ({ ...r, version: 2 }), "version 2 is not 1"],
    ["another kind", (r) => ({ ...r, kind: "tree" }), 'field "kind" must be "agent", not tree'],
    [
      "a path that climbs out",
      (r) => ({ ...r, path: "/root/../../etc" }),
      'field "path" must be a canonical agent path below /root, not /root/../../etc',
    ],
    [
      "the root's path",
      (r) => ({ ...r, path: "/root" }),
      'field "path" must be a canonical agent path below /root, not /root',
    ],
    ["no inbox", (r) => ({ ...r, inbox: undefined }), 'field "inbox" is missing'],
    [
      "an inbox that is a string",
      (r) => ({ ...r, inbox: "hello" }),
      'field "inbox" must be a list of pending messages, not "hello"',
    ],
    [
      "a pending message without text",
      (r) => ({ ...r, undelivered: [{ kind: "MESSAGE", from: "/root", sentAt: "" }] }),
      'field "undelivered" must be a list of pending messages, not an array',
    ],
    ["no runs", (r) => ({ ...r, runs: undefined }), 'field "runs" is missing'],
    [
      "a run name that escapes",
      (r) => ({ ...r, runs: ["../../x"] }),
      'field "runs" must be a list of run names (0001-spawn, …), not an array',
    ],
    [
      "an unknown status",
      (r) => ({ ...r, status: "zombie" }),
      'field "status" must be one of pending_init, running, completed, errored, aborted, interrupted, shutdown, not "zombie"',
    ],
    [
      "usage without cost",
      (r) => ({ ...r, usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2 } }),
      'field "usage" must be a usage object',
    ],
    ["a spawnSeq that is text", (r) => ({ ...r, spawnSeq: "3" }), 'field "spawnSeq" must be a whole number, not "3"'],
    [
      "a parent that is not its path's",
      (r) => ({ ...r, parent: "/root" }),
      'field "parent" must be /root/mid, the parent of its path, not /root',
    ],
    [
      "a task name that is not its path's",
      (r) => ({ ...r, taskName: "other" }),
      'field "taskName" must be leaf, the last segment of its path, not other',
    ],
  ])("%s → one line naming the problem", (_title, damage, expected) => {
    const problem = problemOf(damage(sound()));
    expect(problem.startsWith(expected)).toBe(true);
    expect(problem).not.toContain("\n");
  });

  it("a record that is not the one of the folder it was read from is damaged", () => {
    expect(problemOf(sound(), "/root/other")).toBe(
      "its path /root/mid/leaf is not the path of its folder (/root/other)",
    );
  });

  it("names at most three problems, then how many more; a huge value is quoted bounded", () => {
    const problem = problemOf({ ...sound(), nickname: 1, role: 2, model: 3, status: "x".repeat(1_000_000), health: 5 });
    expect(problem).toBe(
      'field "nickname" must be a string, not a number; field "role" must be a string, not a number; field "model" must be a string, not a number; and 2 more',
    );
    expect(problemOf({ ...sound(), path: "/root/".padEnd(1_000_000, "x") }).length).toBeLessThan(400);
    expect(problemOf({ ...sound(), path: "/root/../".padEnd(1_000_000, "x") }).length).toBeLessThan(200);
  });
});

describe("checkNotice and checkResult", () => {
  const notice = {
    agent_name: "/root/a",
    nickname: "Euclid",
    type: "message",
    agent_status: "running",
    health: "healthy",
    model: "fake/fast",
    reasoning: "low",
    report_chars: 2,
    report_stored: false,
    report: "hi",
    worktree: { branch: "b" },
  };

  it("a sound message notice passes with its unknown fields; a wrong-shaped one is named", () => {
    expect(checkNotice(notice)).toEqual({ ok: true, record: notice });
    expect(checkNotice({ ...notice, report: undefined })).toEqual({ ok: false, problem: 'field "report" is missing' });
    expect(checkNotice({ ...notice, agent_name: "../x" })).toMatchObject({
      ok: false,
      problem: 'field "agent_name" is not a canonical agent path',
    });
  });

  it("a result as the wrapper writes it passes; one the extension could not add up or store is damaged", () => {
    const result = { ...turnResult({ errorMessage: "x" }), futureField: true };
    expect(checkResult(result)).toEqual({ ok: true, record: result });
    expect(checkResult({})).toEqual({ ok: false, problem: 'field "version" is missing' });
    expect(checkResult({ ...result, usage: undefined })).toEqual({ ok: false, problem: 'field "usage" is missing' });
    expect(checkResult({ ...result, finalText: 7 })).toEqual({
      ok: false,
      problem: 'field "finalText" must be a string, not a number',
    });
    expect(checkResult({ ...result, status: "done" })).toMatchObject({
      ok: false,
      problem: expect.stringContaining('field "status" must be one of completed'),
    });
    expect(checkResult({ ...result, childSignal: null, childExitCode: null })).toMatchObject({ ok: true });
  });
});
