#!/usr/bin/env node
// The period budgets' check at spawn: what spawn_agent and followup_task pay before a turn
// starts when `budgets` is set — pi's global settings read, then the spending ledger's month
// file read and summed for today and this month (src/extension/progress/period-budget.ts). The
// ledger holds 1 000 and 10 000 entries (lines as the wrappers write them, spread over the
// month so far); the baseline is the same check with no ledger file yet.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fmt, median, rounds, row, tempDir } from "./support.mjs";

/** `entries` ledger lines, as the wrappers append them, spread over the month up to now. */
function fillLedger(ledgerLine, file, entries, now) {
  const monthStart = new Date(new Date(now).getFullYear(), new Date(now).getMonth(), 1).getTime();
  const lines = [];
  for (let i = 0; i < entries; i++) {
    const at = monthStart + Math.floor(((now - monthStart) * i) / entries);
    lines.push(
      ledgerLine({ at, usd: 0.0123, run: `scout-one-${String(i).padStart(4, "0")}-spawn`, agent: "/root/scout_one" }),
    );
  }
  writeFileSync(file, lines.join(""));
}

export async function run() {
  const { ledgerLine } = await import("../dist/contracts/budget-ledger.js");
  const { ledgerDir, ledgerFile } = await import("../dist/contracts/layout.js");
  const { periodBudgetRefusal, periodBudgetSource } = await import("../dist/extension/progress/period-budget.js");
  const points = [];
  let baseline;
  for (const entries of [0, 1_000, 10_000]) {
    const { dir, cleanup } = tempDir("psa-bench-ledger-");
    try {
      writeFileSync(path.join(dir, "settings.json"), JSON.stringify({ subagents: { budgets: { daily_usd: 1e9 } } }));
      const env = { PI_CODING_AGENT_DIR: dir };
      const ledger = ledgerDir(dir);
      mkdirSync(ledger, { recursive: true });
      if (entries > 0) fillLedger(ledgerLine, ledgerFile(ledger, Date.now()), entries, Date.now());
      const samples = [];
      for (let i = 0; i < rounds(200); i++) {
        const started = performance.now();
        if (periodBudgetRefusal(periodBudgetSource(env)) !== undefined)
          throw new Error("the budget was not meant to be spent");
        samples.push(performance.now() - started);
      }
      const value = median(samples);
      if (entries === 0) baseline = value;
      points.push({
        input: `${entries} ledger entries`,
        value: fmt.ms(value),
        baseline: fmt.ms(baseline),
        ratio: `+${(value - baseline).toFixed(1)} ms`,
        ...(entries === 10_000 && { pass: value <= 5 }),
        raw: value,
      });
    } finally {
      cleanup();
    }
  }
  return [
    row({
      id: "ledger-check",
      what: "period budgets: the check at spawn (settings + the ledger's month summed)",
      target: "≤ 5 ms at 10 000 entries",
      points,
      note: "periodBudgetRefusal(periodBudgetSource()) in the bench process, as spawn_agent and followup_task call it when settings set `budgets`: pi's global settings.json read and parsed, then the ledger's month file (subagents/ledger/<yyyy-mm>.jsonl in pi's agent dir) read whole and each line parsed and summed for today and this month. Entries are ~90-byte lines as the wrappers append them. Baseline: the same check with no ledger file yet. Medians of 200 checks each.",
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
