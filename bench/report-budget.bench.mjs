#!/usr/bin/env node
// How much of a long answer a notice keeps inline at the 8 000-char bound of a notice: the
// extension's boundNotice on a completion notice with realistic side fields, for answers of
// growing length. Thinking is never relayed, so it takes none of the budget. The notice is a
// leaf's (no subtree_usage, which a parent whose children spent tokens adds: ~90 chars).
import { readFileSync } from "node:fs";
import { fmt, row } from "./support.mjs";

/** What the extension this package replaces kept of the same answer: its thinking shared the budget. */
const EARLIER_EXTENSION_CHARS = 5397;
const MARKER = /\n\[truncated: (\d+) chars omitted — get_agent_report has the full text\]\n/;

/** What a notice keeps of `answer`: chars of the answer itself (the marker line not counted). */
function keptChars({ boundNotice, usageTotals }, answer) {
  const notice = boundNotice({
    agent_name: "/root/review_pipeline",
    nickname: "Archimedes",
    type: "completed",
    agent_status: "completed",
    health: "healthy",
    model: "deepseek/deepseek-v4-flash",
    reasoning: "high",
    // As turnEndNotice (src/extension/turns/delivery/notices.ts) builds it from the agent's summed usage.
    usage: usageTotals({
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
    }),
    report_chars: answer.length,
    report_stored: true,
    report: answer,
  });
  const size = JSON.stringify(notice).length;
  if (size > 8000) throw new Error(`notice of ${size} chars is over the bound`);
  const omitted = Number(MARKER.exec(notice.report)?.[1] ?? 0);
  return { kept: answer.length - omitted, size };
}

export async function run() {
  const { boundNotice } = await import("../dist/extension/turns/delivery/bounds.js");
  const { usageTotals } = await import("../dist/contracts/usage.js");
  const bound = { boundNotice, usageTotals };
  const base = readFileSync(new URL("../fixtures/reports/long-answer.md", import.meta.url), "utf8");
  const answerOf = (chars) => base.repeat(Math.ceil(chars / base.length)).slice(0, chars);
  const points = [10_000, 25_000, 65_536].map((chars) => {
    const { kept } = keptChars(bound, answerOf(chars));
    return {
      input: `${chars} chars answer`,
      value: fmt.chars(kept),
      baseline: fmt.chars(EARLIER_EXTENSION_CHARS),
      ratio: fmt.x(kept / EARLIER_EXTENSION_CHARS),
      pass: kept >= 7500,
    };
  });
  const code = readFileSync(
    new URL("../node_modules/pi-coding-agent-0.73/docs/extensions.md", import.meta.url),
    "utf8",
  );
  const codePoints = [10_000, 25_000, 65_536].map((chars) => {
    const { kept } = keptChars(bound, code.slice(0, chars));
    return {
      input: `${chars} chars, code-heavy`,
      value: fmt.chars(kept),
      baseline: fmt.chars(EARLIER_EXTENSION_CHARS),
      ratio: fmt.x(kept / EARLIER_EXTENSION_CHARS),
    };
  });
  return [
    row({
      id: "report-budget",
      what: "report text kept inline at the 8 000-char notice bound (long answer with thinking)",
      target: "≥ 7 500 chars",
      points,
      note: `boundNotice (src/extension/turns/delivery/bounds.ts) on a completion notice with realistic side fields (a 20-char path, a nickname, model and reasoning, usage with six-figure token counts, summarized as notices carry it: input, output, total_tokens, cost) whose report is a markdown review (fixtures/reports/long-answer.md, repeated to length: headings, paragraphs, lists, inline code; 0.8 % of its chars need a JSON escape). Counted: chars of the answer kept (head + tail), the truncation line not included; the notice's compact JSON is exactly at the 8 000 bound. The thinking of the answer is not relayed, so it costs nothing; the extension this package replaces kept ${EARLIER_EXTENSION_CHARS} chars because thinking shared the budget.`,
    }),
    row({
      id: "report-budget-code",
      what: "report text kept inline, code-heavy answer",
      target: "(informative: escapes cost budget)",
      points: codePoints,
      note: "Same, with pi's extensions.md (code blocks, quotes: 3.9 % of its chars need a JSON escape, and each escape takes one char of the budget).",
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
