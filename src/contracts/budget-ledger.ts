/**
 * The spending ledger behind the period budgets (settings `budgets`): every model request a
 * child makes, in every tree of the user, is one line `{"at":<ms>,"usd":<cost>,"run":"…"}`
 * appended by that run's wrapper to the month's file (layout.ts `ledgerFile`).
 *
 * - Several trees and processes append at once: the file is opened with O_APPEND and each
 *   line goes in one write() far below PIPE_BUF (4 096 bytes; `run` and `agent` are cut to
 *   keep it so), so lines never interleave and none is lost.
 * - A line is a spend, never a total: nothing is rewritten, so a crash loses at most the line
 *   being written, and a run's spend is the sum of its lines.
 * - A writer that died mid-line leaves a torn line without its newline; the next writer's line
 *   then follows it on the same line. Every record starts with `{"at":`, so a line that does
 *   not parse is split there and each complete record in it still counts.
 */
import fs from "node:fs";
import { readRegularFileSync } from "../lib/regular-file.js";
import { type PeriodSpend, periodStart } from "./budget-periods.js";
import { ledgerFile } from "./layout.js";

export interface LedgerEntry {
  /** When the request ended (ms since the epoch). */
  at: number;
  /** Its cost in USD (pi's cost.total). */
  usd: number;
  /** The run that spent it (meta.json runId). */
  run: string;
  /** The agent's path in its tree, when the run has one. */
  agent?: string;
}

const RECORD_START = '{"at":';
const MAX_LABEL = 300;

/** One line of the ledger, newline included; its fields in a fixed order so every line starts with `{"at":`. */
export function ledgerLine(entry: LedgerEntry): string {
  const record = {
    at: Math.round(entry.at),
    usd: entry.usd,
    run: entry.run.slice(0, MAX_LABEL),
    ...(entry.agent !== undefined && { agent: entry.agent.slice(0, MAX_LABEL) }),
  };
  return `${JSON.stringify(record)}\n`;
}

function asEntry(text: string): LedgerEntry | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const record = value as Partial<LedgerEntry> | null;
  if (typeof record !== "object" || record === null) return undefined;
  const { at, usd } = record;
  if (typeof at !== "number" || !Number.isFinite(at) || typeof usd !== "number" || !Number.isFinite(usd) || usd < 0) {
    return undefined;
  }
  return { at, usd, run: typeof record.run === "string" ? record.run : "" };
}

/** Each record of a ledger text: blank and torn lines skipped, records that follow a torn one on its line kept. */
export function parseLedger(text: string): LedgerEntry[] {
  const entries: LedgerEntry[] = [];
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const whole = asEntry(line);
    if (whole) {
      entries.push(whole);
      continue;
    }
    for (const piece of line.split(RECORD_START)) {
      const entry = piece === "" ? undefined : asEntry(RECORD_START + piece);
      if (entry) entries.push(entry);
    }
  }
  return entries;
}

/**
 * Appends one spend to the ledger in `dir` (made when missing): O_APPEND, one write. Throws
 * when it cannot (the wrapper says so once in its warnings and goes on).
 */
export function appendLedger(dir: string, entry: LedgerEntry): void {
  fs.mkdirSync(dir, { recursive: true });
  const line = Buffer.from(ledgerLine(entry));
  const fd = fs.openSync(
    ledgerFile(dir, entry.at),
    fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT,
    0o600,
  );
  try {
    const written = fs.writeSync(fd, line);
    if (written !== line.length) throw new Error(`only ${written} of ${line.length} bytes written`);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * What was spent today and this month (local time) as of `now`, by the ledger in `dir`; nothing
 * when it has no file yet. Throws when the file cannot be read.
 */
export function readPeriodSpend(dir: string, now: number): PeriodSpend {
  const spend: PeriodSpend = { daily: 0, monthly: 0 };
  // The month's file only: a day never starts before its month does.
  const file = ledgerFile(dir, now);
  const read = readRegularFileSync(file);
  if ("absent" in read) return spend;
  if ("problem" in read) throw new Error(`the budget ledger ${file} ${read.problem}`);
  const dayStart = periodStart("daily", now);
  const monthStart = periodStart("monthly", now);
  const add = (at: number, usd: number) => {
    if (at >= monthStart) spend.monthly += usd;
    if (at >= dayStart) spend.daily += usd;
  };
  const { text } = read;
  for (let from = 0; from < text.length; ) {
    const end = text.indexOf("\n", from);
    const lineEnd = end === -1 ? text.length : end;
    const fast = writtenLine(text, from, lineEnd);
    if (fast) add(fast.at, fast.usd);
    else if (lineEnd > from) for (const entry of parseLedger(text.slice(from, lineEnd))) add(entry.at, entry.usd);
    from = lineEnd + 1;
  }
  return spend;
}

const USD_FIELD = ',"usd":';
const RUN_FIELD = ',"run":"';

/**
 * A line as ledgerLine writes it (`{"at":N,"usd":X,"run":"…"…}`, one record), read without
 * JSON.parse: the check runs before every spawn, over a month of lines. Anything else (a torn
 * line, a second record on the line, a foreign one) is undefined, for parseLedger to sort out.
 */
function writtenLine(text: string, from: number, end: number): { at: number; usd: number } | undefined {
  if (!text.startsWith(RECORD_START, from) || text.charCodeAt(end - 1) !== 125 /* } */) return undefined;
  const usdAt = text.indexOf(USD_FIELD, from);
  const runAt = usdAt === -1 ? -1 : text.indexOf(RUN_FIELD, usdAt);
  if (runAt === -1 || runAt > end) return undefined;
  const second = text.indexOf(RECORD_START, from + 1);
  if (second !== -1 && second < end) return undefined;
  const at = Number(text.slice(from + RECORD_START.length, usdAt));
  const usd = Number(text.slice(usdAt + USD_FIELD.length, runAt));
  return Number.isFinite(at) && Number.isFinite(usd) && usd >= 0 ? { at, usd } : undefined;
}
