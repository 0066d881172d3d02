#!/usr/bin/env node
// The period budgets' check at spawn: what spawn_agent and followup_task pay before a turn
// starts when `budgets` is set — pi's global settings read, then the spending ledger's month
// file read and summed for today and this month (src/extension/progress/period-budget.ts). The
// ledger holds 1 000 and 10 000 entries (lines as the wrappers write them, spread over the
// month so far): a process's first check, and its later ones (only the new lines read); the
// baseline is the same check with no ledger file yet.
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
  const { appendLedger, ledgerLine, readPeriodSpend } = await import("../dist/contracts/budget-ledger.js");
  const { periodOverrun } = await import("../dist/contracts/budget-periods.js");
  const { ledgerDir, ledgerFile } = await import("../dist/contracts/layout.js");
  const { periodBudgetRefusal, periodBudgetSource } = await import("../dist/extension/progress/period-budget.js");
  const points = [];
  let baseline;
  const measure = (check) => {
    const samples = [];
    for (let i = 0; i < rounds(200); i++) {
      const started = performance.now();
      if (check() !== undefined) throw new Error("the budget was not meant to be spent");
      samples.push(performance.now() - started);
    }
    return median(samples);
  };
  const point = (input, value, pass) => ({
    input,
    value: fmt.ms(value),
    baseline: fmt.ms(baseline),
    ratio: `+${(value - baseline).toFixed(1)} ms`,
    ...(pass !== undefined && { pass }),
    raw: value,
  });
  for (const entries of [0, 1_000, 10_000]) {
    const { dir, cleanup } = tempDir("psa-bench-ledger-");
    try {
      writeFileSync(path.join(dir, "settings.json"), JSON.stringify({ subagents: { budgets: { daily_usd: 1e9 } } }));
      const env = { PI_CODING_AGENT_DIR: dir };
      const ledger = ledgerDir(dir);
      mkdirSync(ledger, { recursive: true });
      if (entries > 0) fillLedger(ledgerLine, ledgerFile(ledger, Date.now()), entries, Date.now());
      // A process's first check: the settings, then the whole month read.
      const cold = measure(() => {
        const source = periodBudgetSource(env);
        return periodOverrun(source.budgets, readPeriodSpend(ledgerDir(source.agentDir), source.now));
      });
      if (entries === 0) baseline = cold;
      points.push(point(`${entries} ledger entries, first check`, cold, entries === 10_000 ? cold <= 5 : undefined));
      if (entries === 10_000) {
        // Its later checks (the extension keeps its reader): only what was appended since, one spend each time.
        periodBudgetRefusal(periodBudgetSource(env));
        const warm = measure(() => {
          appendLedger(ledger, { at: Date.now(), usd: 0.0123, run: "another-tree-0001-spawn", agent: "/root/other" });
          return periodBudgetRefusal(periodBudgetSource(env));
        });
        points.push(point(`${entries} ledger entries, later check (+1 entry)`, warm, warm <= 5));
      }
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
      note: "What spawn_agent and followup_task pay when settings set `budgets`, in the bench process: pi's global settings.json read and parsed, then the spending ledger's month file (subagents/ledger/<yyyy-mm>.jsonl in pi's agent dir) summed for today and this month. A process's first check reads the whole file (each line as the wrappers write it, ~90 bytes, is read from its bytes without JSON.parse); its later checks read only the lines appended since (the later-check row appends one line, another tree's spend, before each check, and includes that write). Baseline: the first check with no ledger file yet. Medians of 200 checks each.",
    }),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import("./report.mjs");
  printRows(await run());
}
