import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { Notice, NoticeWorktree } from "../../../../../src/contracts/notice.js";
import { LIMITS } from "../../../../../src/contracts/tree.js";
import { usageTotals } from "../../../../../src/contracts/usage.js";
import {
  boundNotice,
  boundWorktree,
  capText,
  dropThinking,
  stripSignatures,
  truncateMiddle,
} from "../../../../../src/extension/turns/delivery/bounds.js";

const MARKER = /\n\[truncated: (\d+) chars omitted — get_agent_report has the full text\]\n/;

function notice(report: string, extra: Partial<Notice> = {}): Notice {
  return {
    agent_name: "/root/worker",
    nickname: "Euclid",
    type: "completed",
    agent_status: "completed",
    health: "healthy",
    model: "fake/fast",
    reasoning: "medium",
    usage: { input: 1200, output: 340, total_tokens: 1540, cost: 0.003 },
    report_chars: report.length,
    report_stored: true,
    report,
    ...extra,
  };
}

/** A report with a recognisable head and tail around `filler`. */
function makeReport(length: number, filler: string): string {
  if (length < 20) return "x".repeat(length);
  const head = "HEAD>";
  const tail = "<TAIL";
  let middle = "";
  while (middle.length < length - head.length - tail.length) middle += filler;
  return head + middle.slice(0, length - head.length - tail.length) + tail;
}

/** Checks the bound and that the report is either whole or head + marker + tail of the original. */
function checkBounded(input: Notice, maxChars: number = LIMITS.maxMessageChars): Notice {
  const out = boundNotice(input, maxChars);
  expect(JSON.stringify(out).length).toBeLessThanOrEqual(maxChars);
  expect(out.report_chars).toBe(input.report_chars);
  const match = MARKER.exec(out.report);
  if (!match) {
    expect(out.report).toBe(input.report);
    return out;
  }
  const head = out.report.slice(0, match.index);
  const tail = out.report.slice(match.index + match[0].length);
  expect(input.report.startsWith(head)).toBe(true);
  expect(input.report.endsWith(tail)).toBe(true);
  expect(Number(match[1])).toBe(input.report.length - head.length - tail.length);
  expect(out.report.match(/\[truncated: /g)?.length).toBe(1);
  // Head a bit larger than tail.
  expect(head.length).toBeGreaterThanOrEqual(tail.length);
  for (const part of [head, tail]) {
    expect(/[\ud800-\udbff]$/.test(part) || /^[\udc00-\udfff]/.test(part)).toBe(false);
  }
  return out;
}

describe("boundNotice", () => {
  const lengths = [0, 100, 7999, 8000, 50_000, 1_000_000];
  const fillers: Array<[string, string]> = [
    ["plain text", "lorem ipsum dolor sit amet "],
    ["quotes", '"'],
    ["newlines", "\n"],
    ["emoji", "🙂"],
    ["control chars", "\u0001\t"],
    ["mixed", 'a"\n🙂\\\u0000'],
  ];

  for (const [name, filler] of fillers) {
    it(`keeps a report full of ${name} within the bound at every length`, () => {
      for (const length of lengths) {
        const out = checkBounded(notice(makeReport(length, filler)));
        if (length >= 50_000) {
          expect(out.report.startsWith("HEAD>")).toBe(true);
          expect(out.report.endsWith("<TAIL")).toBe(true);
        }
      }
    });
  }

  it("keeps the bulk of the budget for a long plain report", () => {
    const report = makeReport(50_000, "lorem ipsum dolor sit amet ");
    const out = checkBounded(notice(report));
    const kept = out.report.replace(MARKER, "").length;
    expect(kept).toBeGreaterThan(7000);
    expect(JSON.stringify(out).length).toBeGreaterThan(LIMITS.maxMessageChars - 10);
    const omitted = Number(MARKER.exec(out.report)?.[1]);
    expect(omitted).toBe(50_000 - kept);
  });

  it("keeps at least 7 500 chars of a long markdown answer inline (thinking takes none of the budget)", () => {
    // A review with headings, paragraphs, lists and inline code, as a model writes it.
    const answer = readFileSync(new URL("../../../../../fixtures/reports/long-answer.md", import.meta.url), "utf8");
    expect(answer.length).toBeGreaterThan(20_000);
    const usage = usageTotals({
      input: 123456,
      output: 23456,
      cacheRead: 345678,
      cacheWrite: 0,
      totalTokens: 492590,
      cost: {
        input: 0.0172838400000001,
        // biome-ignore lint/correctness/noPrecisionLoss: float noise as pi sums it, on purpose
        output: 0.0065676800000000005,
        cacheRead: 0.009679,
        cacheWrite: 0,
        total: 0.03353052000000001,
      },
    });
    const out = checkBounded(
      notice(answer, {
        agent_name: "/root/review_pipeline",
        nickname: "Archimedes",
        model: "deepseek/deepseek-v4-flash",
        reasoning: "high",
        usage,
      }),
    );
    const omitted = Number(MARKER.exec(out.report)?.[1]);
    expect(answer.length - omitted).toBeGreaterThanOrEqual(7500);
    expect(JSON.stringify(out).length).toBeGreaterThan(LIMITS.maxMessageChars - 10);
  });

  it("summarizes usage for notices: tokens in, out, total, and the cost rounded to a millionth", () => {
    const usage = {
      input: 5,
      output: 7,
      cacheRead: 100,
      cacheWrite: 3,
      totalTokens: 115,
      cost: { input: 0.1, output: 0.2, cacheRead: 0, cacheWrite: 0, total: 0.30000000000000004 },
    };
    expect(usageTotals(usage)).toEqual({ input: 5, output: 7, total_tokens: 115, cost: 0.3 });
  });

  it("returns small notices unchanged", () => {
    const small = notice("all done, 3 files changed", { outcome: "completed" });
    expect(boundNotice(small)).toEqual(small);
    const noReport = notice("");
    expect(boundNotice(noReport)).toEqual(noReport);
  });

  it("caps every string side field at 600 chars ending in …, and leaves report_chars alone", () => {
    const long = "r".repeat(5000);
    const input = notice(makeReport(20_000, "abc "), {
      reason: long,
      model: `m/${long}`,
      nickname: long,
      report_chars: 123_456,
    });
    const out = checkBounded(input);
    for (const key of ["reason", "model", "nickname"] as const) {
      expect(out[key]).toHaveLength(LIMITS.sideFieldChars);
      expect(out[key]?.endsWith("…")).toBe(true);
    }
    expect(out.agent_name).toBe("/root/worker");
    expect(out.usage).toEqual(input.usage);
    expect(out.report_chars).toBe(123_456);
  });

  it("caps side fields even when the report is short", () => {
    const out = boundNotice(notice("short", { reason: "x".repeat(700) }));
    expect(out.reason).toBe(`${"x".repeat(599)}…`);
    expect(out.report).toBe("short");
  });

  it("stays within the bound when side fields are full of escaped characters", () => {
    const nasty = "\u0001".repeat(5000);
    const input = notice(makeReport(30_000, '\n"'), { reason: nasty, outcome: nasty, model: nasty, nickname: nasty });
    const out = checkBounded(input);
    expect(MARKER.test(out.report)).toBe(true);
  });

  it("respects a smaller maxChars", () => {
    for (const length of [0, 500, 3000, 10_000]) checkBounded(notice(makeReport(length, 'ab"🙂\n')), 2000);
  });
});

describe("truncateMiddle", () => {
  it("returns short text unchanged and keeps 60/40 of long text with the exact count", () => {
    expect(truncateMiddle("hello", 5)).toBe("hello");
    const out = truncateMiddle("0123456789".repeat(10), 10);
    expect(out).toBe("012345\n[truncated: 90 chars omitted — get_agent_report has the full text]\n6789");
  });

  it("never splits a surrogate pair", () => {
    const text = "🙂".repeat(50);
    for (let keep = 0; keep < 30; keep++) {
      const out = truncateMiddle(text, keep);
      expect(out.replace(MARKER, "")).toMatch(/^(🙂)*$/u);
    }
  });
});

describe("capText", () => {
  it("caps with an ellipsis and respects surrogate pairs", () => {
    expect(capText("abcdef", 6)).toBe("abcdef");
    expect(capText("abcdef", 4)).toBe("abc…");
    expect(capText("a🙂b", 3)).toBe("a…");
  });
});

describe("stripSignatures", () => {
  const assistant = {
    role: "assistant",
    provider: "openai",
    content: [
      {
        type: "thinking",
        thinking: "t".repeat(5000),
        thinkingSignature: `{"id":"rs_1","encrypted_content":"${"e".repeat(3000)}"}`,
      },
      { type: "thinking", thinking: "[Reasoning redacted]", thinkingSignature: "opaque", redacted: true },
      { type: "text", text: "answer", textSignature: '{"v":1,"id":"msg_1"}' },
      { type: "toolCall", id: "c1", name: "bash", arguments: { command: "ls" } },
    ],
  };

  it("removes signatures, caps thinking and drops redacted thinking, without touching the input", () => {
    const before = structuredClone(assistant);
    const out = stripSignatures(assistant);
    expect(assistant).toEqual(before);
    expect(JSON.stringify(out)).not.toMatch(/Signature/);
    expect(out.content).toHaveLength(3);
    const thinking = out.content[0] as { thinking: string };
    expect(thinking.thinking).toHaveLength(LIMITS.thinkingChars);
    expect(out.content[1]).toEqual({ type: "text", text: "answer" });
    expect(out.content[2]).toEqual(assistant.content[3]);
  });

  it("passes non-objects through and copies messages with string content", () => {
    expect(stripSignatures("text")).toBe("text");
    expect(stripSignatures(null)).toBe(null);
    const user = { role: "user", content: "hi", timestamp: 1 };
    const out = stripSignatures(user);
    expect(out).toEqual(user);
    expect(out).not.toBe(user);
  });

  it("dropThinking removes every thinking block", () => {
    const out = dropThinking(assistant);
    expect(out.content.map((b) => b.type)).toEqual(["text", "toolCall"]);
    expect(assistant.content).toHaveLength(4);
  });
});

describe("a notice with an isolated agent's worktree", () => {
  const sha = (digit: string) => digit.repeat(40);
  const worktree = (files: string[], extra: Partial<NoticeWorktree> = {}): NoticeWorktree => ({
    path: "/home/u/.pi/agent/sessions/x/subagents/0192/worktrees/lead-checker",
    branch: "subagent/7f3a9c2e-lead-checker",
    base_commit: sha("a"),
    head_commit: sha("b"),
    changed_files: files,
    insertions: 1234,
    deletions: 56,
    merge_hint: `/home/u/.pi/agent/npm/node_modules/pi-subagent-tree/bin/subagent-wrapper bring ${sha("a")} ${sha("b")}`,
    ...extra,
  });
  const longPath = (i: number) => `src/${"deeply/nested/".repeat(30)}module_${String(i).padStart(2, "0")}/file.ts`;

  it("50 long paths and a long report: within 8 000 chars, the worktree whole but for its file list, the report cut", () => {
    const files = Array.from({ length: 50 }, (_, i) => longPath(i));
    const input = notice(makeReport(20_000, "report line\n"), {
      worktree: worktree(files, { changed_files_total: 73 }),
    });
    const out = checkBounded(input);
    const kept = out.worktree!;
    expect(JSON.stringify(kept).length).toBeLessThanOrEqual(LIMITS.noticeWorktreeChars);
    // Everything the parent needs to bring the work in is there, exactly.
    expect(kept).toMatchObject({
      path: input.worktree!.path,
      branch: input.worktree!.branch,
      base_commit: sha("a"),
      head_commit: sha("b"),
    });
    expect(kept).toMatchObject({
      insertions: 1234,
      deletions: 56,
      merge_hint: input.worktree!.merge_hint,
      changed_files_total: 73,
    });
    // Each listed path is capped with its end kept, in the original order.
    expect(kept.changed_files.length).toBeGreaterThan(5);
    expect(kept.changed_files.length).toBeLessThan(50);
    kept.changed_files.forEach((file, i) => {
      expect(file.length).toBeLessThanOrEqual(LIMITS.changedFilePathChars);
      expect(file.startsWith("…")).toBe(true);
      expect(longPath(i).endsWith(file.slice(1))).toBe(true);
    });
    expect(out.report).toMatch(MARKER);
    expect(out.report.length).toBeGreaterThan(3000);
  });

  it("a small worktree and a short report are left as they are", () => {
    const input = notice("done", { worktree: worktree(["a.txt", "src/b.ts"]) });
    expect(boundNotice(input)).toEqual(input);
  });

  it("says how many paths there are once some are left out, and never lists more than 50", () => {
    const files = Array.from({ length: 80 }, (_, i) => `f${i}.txt`);
    const out = boundWorktree(worktree(files));
    expect(out.changed_files).toEqual(files.slice(0, 50));
    expect(out.changed_files_total).toBe(80);
    const few = boundWorktree(worktree(files.slice(0, 3)));
    expect(few.changed_files).toEqual(files.slice(0, 3));
    expect(few.changed_files_total).toBeUndefined();
  });

  it("caps a long error like a side field and keeps the notice in bound", () => {
    const out = checkBounded(notice("x".repeat(9000), { worktree: worktree([], { error: "e".repeat(5000) }) }));
    expect(out.worktree!.error).toHaveLength(LIMITS.sideFieldChars);
    expect(out.worktree!.error!.endsWith("…")).toBe(true);
  });
});
