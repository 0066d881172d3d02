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
 * when it has no file yet. Throws when the file cannot be read. A one-off read (LedgerReader
 * keeps what it read, for a process that checks again and again).
 */
export function readPeriodSpend(dir: string, now: number): PeriodSpend {
  return new LedgerReader(dir).spend(now);
}

/**
 * The ledger's month read as it grows: each check reads only the bytes appended since the
 * last (whole lines: a line still being written is read once its newline is there), so a
 * wrapper that checks after every model request, or an extension before every spawn, pays
 * for the new lines only. A new month's file, or a file replaced or cut short, is read anew.
 */
export class LedgerReader {
  private file: string | undefined;
  private identity = "";
  private offset = 0;
  private ats: number[] = [];
  private usds: number[] = [];

  constructor(private readonly dir: string) {}

  spend(now: number): PeriodSpend {
    // The month's file only: a day never starts before its month does.
    const file = ledgerFile(this.dir, now);
    if (file !== this.file) this.restart(file, "");
    this.readNew(file);
    const dayStart = periodStart("daily", now);
    const monthStart = periodStart("monthly", now);
    const spend: PeriodSpend = { daily: 0, monthly: 0 };
    for (let i = 0; i < this.ats.length; i++) {
      const at = this.ats[i] as number;
      if (at >= monthStart) spend.monthly += this.usds[i] as number;
      if (at >= dayStart) spend.daily += this.usds[i] as number;
    }
    return spend;
  }

  private restart(file: string, identity: string): void {
    this.file = file;
    this.identity = identity;
    this.offset = 0;
    this.ats = [];
    this.usds = [];
  }

  private readNew(file: string): void {
    let fd: number;
    try {
      // Never blocks on a FIFO put in the ledger's place.
      fd = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") {
        throw new Error(`the budget ledger ${file} cannot be read: ${(err as Error).message}`);
      }
      this.restart(file, "");
      return;
    }
    try {
      const stat = fs.fstatSync(fd);
      if (!stat.isFile()) throw new Error(`the budget ledger ${file} is not a regular file`);
      const identity = `${stat.dev}:${stat.ino}`;
      if (identity !== this.identity || stat.size < this.offset) this.restart(file, identity);
      if (stat.size === this.offset) return;
      const bytes = Buffer.allocUnsafe(stat.size - this.offset);
      const length = fs.readSync(fd, bytes, 0, bytes.length, this.offset);
      const whole = bytes.lastIndexOf(NEWLINE, length - 1) + 1;
      this.take(bytes, whole);
      this.offset += whole;
    } finally {
      fs.closeSync(fd);
    }
  }

  /** The records of `bytes[0, end)`, whole lines. */
  private take(bytes: Buffer, end: number): void {
    for (let from = 0; from < end; ) {
      const newline = bytes.indexOf(NEWLINE, from);
      const lineEnd = newline === -1 || newline > end ? end : newline;
      const fast = writtenLine(bytes, from, lineEnd);
      if (fast) {
        this.ats.push(fast.at);
        this.usds.push(fast.usd);
      } else if (lineEnd > from) {
        for (const entry of parseLedger(bytes.toString("utf8", from, lineEnd))) {
          this.ats.push(entry.at);
          this.usds.push(entry.usd);
        }
      }
      from = lineEnd + 1;
    }
  }
}

const NEWLINE = 0x0a;
const RECORD_START_BYTES = Buffer.from(RECORD_START);
const USD_FIELD_BYTES = Buffer.from(',"usd":');
const RUN_FIELD_BYTES = Buffer.from(',"run":"');

/** Whether `bytes` holds `expected` at `at` (a short, fixed field name: compared in place, no native call). */
function holds(bytes: Buffer, at: number, expected: Buffer): boolean {
  for (let i = 0; i < expected.length; i++) if (bytes[at + i] !== expected[i]) return false;
  return true;
}

/**
 * A line as ledgerLine writes it (`{"at":N,"usd":X,"run":"…"…}`, one record), read from its
 * bytes without decoding or JSON.parse: the check runs before every spawn, over a month of
 * lines. Anything else (a torn line, a second record on the line, a foreign one) is undefined,
 * for parseLedger to sort out.
 */
function writtenLine(bytes: Buffer, from: number, end: number): { at: number; usd: number } | undefined {
  if (bytes[end - 1] !== 0x7d /* } */ || !holds(bytes, from, RECORD_START_BYTES)) return undefined;
  let i = from + RECORD_START_BYTES.length;
  const digitsFrom = i;
  let at = 0;
  for (; i < end; i++) {
    const c = bytes[i] as number;
    if (c < 0x30 || c > 0x39) break;
    at = at * 10 + (c - 0x30);
  }
  if (i === digitsFrom || !holds(bytes, i, USD_FIELD_BYTES)) return undefined;
  const usdFrom = i + USD_FIELD_BYTES.length;
  let usdEnd = usdFrom;
  while (usdEnd < end && bytes[usdEnd] !== 0x2c /* , */) usdEnd++;
  if (usdEnd === usdFrom || !holds(bytes, usdEnd, RUN_FIELD_BYTES)) return undefined;
  // A second record on the line (one written after a torn one) begins with `{"`: inside the
  // JSON strings a quote is escaped, so the pair appears nowhere else. Scanned in place: a
  // native search per line costs more than the line.
  for (let k = usdEnd + RUN_FIELD_BYTES.length; k < end - 1; k++) {
    if (bytes[k] === 0x7b /* { */ && bytes[k + 1] === 0x22 /* " */) return undefined;
  }
  const usd = decimalAt(bytes, usdFrom, usdEnd);
  return Number.isFinite(usd) && usd >= 0 ? { at, usd } : undefined;
}

/**
 * The JSON number in `bytes[from, end)`. Plain decimals of up to 15 digits (what costs are)
 * are read in place: their digits as a whole number, divided by the power of ten, which
 * rounds exactly as parsing the text would, since both are exact doubles. Anything else
 * (an exponent, more digits) is decoded and parsed.
 */
function decimalAt(bytes: Buffer, from: number, end: number): number {
  let digits = 0;
  let mantissa = 0;
  let scale = 1;
  let point = false;
  for (let i = from; i < end; i++) {
    const c = bytes[i] as number;
    if (c === 0x2e /* . */ && !point) point = true;
    else if (c >= 0x30 && c <= 0x39 && digits < 15) {
      mantissa = mantissa * 10 + (c - 0x30);
      digits += 1;
      if (point) scale *= 10;
    } else return Number(bytes.toString("latin1", from, end));
  }
  return digits === 0 ? Number.NaN : mantissa / scale;
}
