/**
 * What the person at the terminal reads: a notice's line and weight, the exit lines when pi
 * leaves with children working, the quit keys watched for the last frame, and /agents'
 * view of one agent. Pure functions (and one fake terminal-input seam).
 */
import { describe, expect, it } from "vitest";
import type { AgentRecordV1 } from "../../../../src/contracts/tree.js";
import { emptyUsage } from "../../../../src/contracts/usage.js";
import { WRAPPER_BIN } from "../../../../src/extension/config.js";
import { emptyRunProgress } from "../../../../src/extension/progress/events-tail.js";
import type { AgentProgress } from "../../../../src/extension/progress/progress.js";
import { cancelledLine } from "../../../../src/extension/tools/wait-agent.js";
import {
  describeNotice,
  messageNotice,
  stopNotice,
  turnEndNotice,
} from "../../../../src/extension/turns/delivery/notices.js";
import { agentActions, agentDetails, tailLines } from "../../../../src/extension/ui/agent-view.js";
import { activeAgents, exitLines, someNames, stoppingStatus } from "../../../../src/extension/ui/exit.js";
import { noticeLevel, noticeLine } from "../../../../src/extension/ui/notice-view.js";
import type { Painter } from "../../../../src/extension/ui/paint.js";
import { watchForQuit } from "../../../../src/extension/ui/quit-watch.js";
import { agentRecord } from "../../../support/records.js";

const tagged: Painter = { fg: (color, text) => `<${color}>${text}</${color}>`, bold: (text) => text };

describe("a notice's line", () => {
  it("says who, how the turn ended and why, then the head of the report, in the colour of the ending", () => {
    const failed = turnEndNotice(
      agentRecord({ path: "/root/b", nickname: "Hypatia", status: "errored", health: "unhealthy" }),
      {
        outcome: "failed",
        reason: "500 Internal\nServer Error",
        text: "partial\nanswer",
        reportStored: true,
      },
    );
    expect(describeNotice(failed)).toBe(
      "/root/b (Hypatia) errored (failed): 500 Internal Server Error — partial answer",
    );
    expect(noticeLine(failed, tagged)).toBe(
      "<error>✗ /root/b (Hypatia) errored (failed): 500 Internal Server Error — partial answer</error>",
    );
    expect(noticeLevel(failed)).toBe("error");
    const aborted = turnEndNotice(agentRecord({ status: "aborted" }), {
      outcome: "aborted",
      reason: "no key",
      text: "",
      reportStored: false,
    });
    expect(noticeLine(aborted)).toBe("■ /root/worker (Euclid) aborted: no key");
    expect(noticeLevel(aborted)).toBe("warning");
    const completed = turnEndNotice(agentRecord(), { outcome: "completed", text: "done", reportStored: true });
    expect([noticeLine(completed, tagged), noticeLevel(completed)]).toEqual([
      "<success>✓ /root/worker (Euclid) completed: done</success>",
      "info",
    ]);
    expect(noticeLevel(stopNotice(agentRecord({ status: "interrupted" }), "interrupt", undefined))).toBe("warning");
    expect(noticeLine(messageNotice("/root/a", undefined, "hi"))).toBe("✉ message from /root/a: hi");
  });

  it("a stop the person ordered reads as theirs; the model's notice says the user did it", () => {
    const byYou = stopNotice(agentRecord({ status: "interrupted" }), "interrupt", undefined, undefined, "user");
    expect(byYou.reason).toBe("interrupted by the user");
    expect(noticeLine(byYou)).toBe("■ /root/worker (Euclid) interrupted: stopped by you");
    const closed = stopNotice(agentRecord({ status: "shutdown" }), "close", undefined, undefined, "user");
    expect(closed.reason).toBe("closed by the user");
    expect(noticeLine(closed)).toMatch(/shutdown \(interrupted\): closed by you$/);
    const byParent = stopNotice(agentRecord({ status: "interrupted" }), "interrupt", undefined);
    expect(noticeLine(byParent)).toMatch(/interrupted: interrupted by its parent$/);
  });

  it("names the branch of a child that worked in its own worktree", () => {
    const notice = {
      ...turnEndNotice(agentRecord(), { outcome: "completed", text: "ok", reportStored: true }),
      worktree: {
        branch: "subagent/7f3a9c2e-worker",
        path: "/w",
        base_commit: "a".repeat(40),
        head_commit: "b".repeat(40),
        changed_files: ["x.ts"],
        insertions: 1,
        deletions: 0,
      },
    };
    expect(noticeLine(notice)).toBe(
      "✓ /root/worker (Euclid) completed: ok · branch subagent/7f3a9c2e-worker · aaaaaaa..bbbbbbb, 1 file: x.ts",
    );
  });

  it("shows what the model sees of an isolated child's work: branch, base and head, changed files, the command", () => {
    const hint = `/p/bin/subagent-wrapper bring ${"a".repeat(40)} ${"b".repeat(40)}`;
    const notice = {
      ...turnEndNotice(agentRecord(), { outcome: "completed", text: "done", reportStored: true }),
      worktree: {
        branch: "subagent/7f3a9c2e-worker",
        path: "/w",
        base_commit: "a".repeat(40),
        head_commit: "b".repeat(40),
        changed_files: ["src/a.ts", "src/b.ts", "src/c.ts", "src/d.ts"],
        changed_files_total: 60,
        insertions: 1,
        deletions: 0,
        merge_hint: hint,
      },
    };
    expect(describeNotice(notice)).toBe(
      `/root/worker (Euclid) completed: done · branch subagent/7f3a9c2e-worker · aaaaaaa..bbbbbbb, 60 files: src/a.ts, src/b.ts, src/c.ts +57 more · bring it in: ${hint}`,
    );
    expect(noticeLine(notice)).toBe(`✓ ${describeNotice(notice)}`);
  });
});

describe("leaving pi with children working", () => {
  const records = [
    agentRecord({ path: "/root/a", status: "running" }),
    agentRecord({ path: "/root/b", status: "running" }),
    agentRecord({ path: "/root/b/c", status: "running" }),
    agentRecord({ path: "/root/d", status: "pending_init" }),
    agentRecord({ path: "/root/e", status: "pending_init" }),
    agentRecord({ path: "/root/f", status: "completed" }),
  ];

  it("says what was stopped (counts, a few names) and how to resume", () => {
    const active = activeAgents(records);
    expect(exitLines(active, { sessionFile: "/s/root.jsonl", treeDir: "/s/subagents/id" })).toEqual([
      "pi-subagent-tree: stopped 3 running and 2 queued agents (/root/a, /root/b, /root/b/c, /root/d and 1 more); they are interrupted, not lost.",
      "  resume: pi --session /s/root.jsonl  (or pi -c in this folder), then ask to follow them up",
      "  their run folders: /s/subagents/id  (subagent-wrapper inspect /s/subagents/id)",
    ]);
    expect(exitLines(activeAgents(records.slice(0, 1)), { sessionFile: undefined, treeDir: "/t" })[1]).toBe(
      "  this session was not saved, so the tree cannot be resumed",
    );
    expect(
      exitLines(activeAgents(records.slice(0, 1)), { sessionFile: undefined, treeDir: "/t", temporary: true }),
    ).toEqual([
      "pi-subagent-tree: stopped 1 running agent (/root/a); it is interrupted, not lost.",
      "  this session was not saved, so the tree cannot be resumed",
      "  their run folders were in a temporary folder, /t, removed as pi ends",
    ]);
    expect(stoppingStatus(active, tagged)).toBe(
      "<warning>agents: stopping 3 running and 2 queued (pi is exiting; they end interrupted and can be resumed)</warning>",
    );
    expect(someNames(records.slice(0, 2))).toBe("/root/a, /root/b");
  });

  it("the quit keys: ctrl+d on an empty editor, ctrl+c twice within half a second, /quit submitted", () => {
    let handler: ((data: string) => unknown) | undefined;
    let editor = "";
    let clock = 0;
    let quits = 0;
    const unwatch = watchForQuit(
      {
        onTerminalInput: (h) => {
          handler = h;
          return () => {
            handler = undefined;
          };
        },
        getEditorText: () => editor,
      },
      () => quits++,
      { now: () => clock },
    );
    const press = (data: string) => expect(handler!(data)).toBeUndefined(); // never consumed
    press("\x04");
    expect(quits).toBe(1);
    editor = "draft";
    press("\x04"); // not empty: pi deletes a character instead
    press("\x03");
    clock = 600;
    press("\x03"); // too late: pi only clears the editor
    expect(quits).toBe(1);
    clock = 900;
    press("\x03");
    expect(quits).toBe(2);
    editor = " /quit ";
    press("\r");
    expect(quits).toBe(3);
    editor = "hello";
    press("\r");
    press("x");
    expect(quits).toBe(3);
    unwatch();
    expect(handler).toBeUndefined();
  });

  it("Esc during wait_agent says the children keep working and how to stop them", () => {
    expect(cancelledLine({ running: 2, queued: 1 })).toBe(
      "wait_agent cancelled: 2 running, 1 queued child agents keep working — /agents stop stops them",
    );
    expect(cancelledLine({ running: 1, queued: 0 })).toBe(
      "wait_agent cancelled: 1 running child agent keeps working — /agents stop stops it",
    );
    expect(cancelledLine({ running: 0, queued: 0 })).toBe("wait_agent cancelled");
  });
});

describe("/agents: one agent", () => {
  const progress = (record: AgentRecordV1, extra: Partial<AgentProgress> = {}): AgentProgress => {
    const usage = emptyUsage();
    usage.totalTokens = 1500;
    return { record, usage, subtreeUsage: { input: 0, output: 0, total_tokens: 1500, cost: 0 }, ...extra };
  };

  it("shows status, model, usage, the run folder with the inspect command, the live transcript's last lines and the latest report", () => {
    const run = { ...emptyRunProgress() };
    run.openTools.set("c1", "bash");
    const record = agentRecord({ status: "running", runs: ["0001-spawn", "0002-followup"], reasoning: "low" });
    const transcript = `${Array.from({ length: 12 }, (_, i) => `line ${i + 1}`).join("\n")}\n\n`;
    const lines = agentDetails(
      progress(record, { run, elapsedMs: 5000 }),
      {
        runDir: "/t/agents/worker/runs/0002-followup",
        transcriptTail: transcript,
        report: { text: "first\n\nsecond", turn: 1, totalChars: 13 },
      },
      true,
    );
    expect(lines).toEqual([
      "worker (Euclid) · /root/worker",
      "status   running · healthy · turn 2 · 5s · in bash",
      "model    fake/fast · reasoning low · role default",
      "usage    1.5k tok total · $0.0000",
      // A running turn's use against its limits: only the turn limit here (time_limit's default).
      "limits   time_limit 5/1800",
      "run      /t/agents/worker/runs/0002-followup",
      "         subagent-wrapper inspect /t/agents/worker/runs/0002-followup",
      "live transcript (last lines):",
      ...Array.from({ length: 8 }, (_, i) => `  line ${i + 5}`),
      "latest report (turn 1), 13 chars:",
      "  first",
      "  second",
    ]);
  });

  it("says why the last turn did not complete, names the worktree, and tells a grandchild's viewer who can act on it", () => {
    const record = {
      ...agentRecord({
        path: "/root/a/b",
        status: "errored",
        health: "unhealthy",
        lastOutcome: "timed_out",
        lastReason: "turn limit",
      }),
      worktree: {
        branch: "subagent/x-a-b",
        path: "/w/a-b",
        baseCommit: "a".repeat(40),
        gitDir: "/repo/.git",
        subdir: "",
      },
    };
    const lines = agentDetails(progress(record), {}, false);
    expect(lines[1]).toBe("status   errored · unhealthy · last turn timed_out: turn limit");
    expect(lines).toContain("worktree branch subagent/x-a-b at /w/a-b");
    expect(lines).toContain("run      none yet (queued)");
    expect(lines).toContain("latest report: none yet");
    expect(lines.at(-1)).toBe("its parent /root/a can act on it; from here you can only look");
  });

  it("shows what an isolated agent's latest turn left on its branch and the command that brings it in", () => {
    const worktree = {
      branch: "subagent/x-worker",
      path: "/w/worker",
      baseCommit: "a".repeat(40),
      gitDir: "/repo/.git",
      subdir: "",
      head: { commit: "b".repeat(40), changedFiles: ["src/login.ts"], insertions: 3, deletions: 1 },
    };
    const lines = agentDetails(progress({ ...agentRecord({ status: "completed" }), worktree }), {}, true);
    const at = lines.indexOf("worktree branch subagent/x-worker at /w/worker");
    expect(lines.slice(at + 1, at + 3)).toEqual([
      "         aaaaaaa..bbbbbbb, 1 file: src/login.ts",
      `         bring it in: ${WRAPPER_BIN} bring ${"a".repeat(40)} ${"b".repeat(40)}`,
    ]);
    // A turn that changed nothing: the range says so, and there is nothing to bring in.
    const unchanged = { ...worktree, head: { commit: "a".repeat(40), changedFiles: [], insertions: 0, deletions: 0 } };
    const still = agentDetails(progress({ ...agentRecord({ status: "completed" }), worktree: unchanged }), {}, true);
    expect(still).toContain("         aaaaaaa..aaaaaaa, no change");
    expect(still.join("\n")).not.toContain("bring it in");
  });

  it("offers what this process may do: a direct child's follow-up and message, interrupt while it works, close until it is shut down", () => {
    expect(agentActions(agentRecord({ status: "running" }), true)).toEqual([
      "follow up",
      "message",
      "interrupt",
      "close",
      "back",
    ]);
    expect(agentActions(agentRecord({ status: "pending_init" }), true)).toEqual([
      "follow up",
      "message",
      "interrupt",
      "close",
      "back",
    ]);
    expect(agentActions(agentRecord({ status: "completed" }), true)).toEqual(["follow up", "message", "close", "back"]);
    expect(agentActions(agentRecord({ status: "shutdown" }), true)).toEqual(["back"]);
    expect(agentActions(agentRecord({ status: "running" }), false)).toEqual(["back"]);
    expect(tailLines("a\n\n b \nc", 2)).toEqual([" b", "c"]);
  });
});
