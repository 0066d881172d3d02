import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  appendLedger,
  LedgerReader,
  ledgerLine,
  parseLedger,
  readPeriodSpend,
} from "../../../src/contracts/budget-ledger.js";
import { ledgerDir, ledgerFile } from "../../../src/contracts/layout.js";

const savedTz = process.env.TZ;
beforeAll(() => {
  process.env.TZ = "America/New_York";
});
afterAll(() => {
  if (savedTz === undefined) delete process.env.TZ;
  else process.env.TZ = savedTz;
});

let dir: string;
beforeEach(() => {
  dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "ledger-")), "agent");
});
afterEach(() => fs.rmSync(path.dirname(dir), { recursive: true, force: true }));

const local = (y: number, m: number, d: number, h = 0) => new Date(y, m - 1, d, h).getTime();
const line = (at: number, usd: number, run = "r") => ledgerLine({ at, usd, run });

describe("the spending ledger's lines", () => {
  it("one line per spend, starting with its time, far below PIPE_BUF even for long names", () => {
    expect(line(1_000, 0.25, "scout-0001-spawn")).toBe('{"at":1000,"usd":0.25,"run":"scout-0001-spawn"}\n');
    const long = ledgerLine({ at: 1, usd: 1, run: "r".repeat(10_000), agent: `/root/${"a".repeat(10_000)}` });
    expect(Buffer.byteLength(long)).toBeLessThan(1024);
    expect(long.endsWith("\n")).toBe(true);
  });

  it("a reader skips blank, torn and foreign lines", () => {
    const text = [line(1, 0.1), "", '{"at":2,"usd":', "not json", '{"at":3,"usd":-1}', '{"usd":1}', line(4, 0.2)].join(
      "\n",
    );
    expect(parseLedger(text).map((e) => [e.at, e.usd])).toEqual([
      [1, 0.1],
      [4, 0.2],
    ]);
  });

  it("a line written after a torn one (no newline) still counts, and so does a whole record left without its newline", () => {
    const torn = '{"at":5,"usd":0.3,"ru';
    const whole = '{"at":6,"usd":0.4,"run":"x"}';
    expect(parseLedger(torn + line(7, 0.5)).map((e) => e.at)).toEqual([7]);
    expect(parseLedger(whole + line(8, 0.6)).map((e) => e.at)).toEqual([6, 8]);
    // The last line of a file whose writer is mid-way: skipped now, counted once whole.
    expect(parseLedger(line(9, 0.1) + torn).map((e) => e.at)).toEqual([9]);
  });
});

describe("the spending ledger on disk", () => {
  it("appends in the file of the spend's local month and reads today's and this month's sums", () => {
    const ledger = ledgerDir(dir);
    expect(ledger).toBe(path.join(dir, "subagents", "ledger"));
    const now = local(2026, 12, 3, 15);
    appendLedger(ledger, { at: local(2026, 11, 30, 23), usd: 9, run: "last-month" });
    appendLedger(ledger, { at: local(2026, 12, 1, 10), usd: 1, run: "a" });
    appendLedger(ledger, { at: local(2026, 12, 2, 23), usd: 2, run: "b" });
    appendLedger(ledger, { at: local(2026, 12, 3, 0), usd: 0.25, run: "c" });
    appendLedger(ledger, { at: local(2026, 12, 3, 14), usd: 0.5, run: "d", agent: "/root/x" });
    expect(fs.readdirSync(ledger).sort()).toEqual(["2026-11.jsonl", "2026-12.jsonl"]);
    expect(ledgerFile(ledger, now)).toBe(path.join(ledger, "2026-12.jsonl"));
    expect(readPeriodSpend(ledger, now)).toEqual({ daily: 0.75, monthly: 3.75 });
  });

  it("no ledger yet: nothing spent; a ledger that is not a file is one clear error", () => {
    const ledger = ledgerDir(dir);
    const now = local(2026, 12, 3, 15);
    expect(readPeriodSpend(ledger, now)).toEqual({ daily: 0, monthly: 0 });
    fs.mkdirSync(ledgerFile(ledger, now), { recursive: true });
    expect(() => readPeriodSpend(ledger, now)).toThrow(/^the budget ledger .*2026-12\.jsonl is not a regular file$/);
  });

  it("several writers appending by turns: every line whole, none lost, one torn line in between costs only itself", () => {
    const ledger = ledgerDir(dir);
    const now = local(2026, 12, 3, 15);
    for (let i = 0; i < 50; i++) {
      appendLedger(ledger, { at: now - i, usd: 0.01, run: `writer-a-${i}` });
      if (i === 25) fs.appendFileSync(ledgerFile(ledger, now), '{"at":1,"usd":0.5,"run":"crashed');
      appendLedger(ledger, { at: now - i, usd: 0.02, run: `writer-b-${i}` });
    }
    const entries = parseLedger(fs.readFileSync(ledgerFile(ledger, now), "utf8"));
    expect(entries).toHaveLength(100);
    expect(new Set(entries.map((e) => e.run)).size).toBe(100);
    expect(readPeriodSpend(ledger, now).daily).toBeCloseTo(1.5, 10);
  });

  it("the summing reader counts each whole record of a line a writer left without its newline", () => {
    const ledger = ledgerDir(dir);
    const now = local(2026, 12, 3, 15);
    fs.mkdirSync(ledger, { recursive: true });
    const whole = ledgerLine({ at: now, usd: 0.25, run: "died-before-newline" }).trimEnd();
    fs.writeFileSync(ledgerFile(ledger, now), `${whole}${line(now, 0.5)}${line(now, 1)}`);
    expect(readPeriodSpend(ledger, now)).toEqual({ daily: 1.75, monthly: 1.75 });
  });
});

describe("the ledger read as it grows (one reader per process)", () => {
  it("each check counts what was appended since, once; a line still being written counts once it is whole", () => {
    const ledger = ledgerDir(dir);
    const now = local(2026, 12, 3, 15);
    const reader = new LedgerReader(ledger);
    expect(reader.spend(now)).toEqual({ daily: 0, monthly: 0 });
    appendLedger(ledger, { at: now, usd: 0.5, run: "a" });
    expect(reader.spend(now).daily).toBe(0.5);
    const half = line(now, 0.25, "b");
    fs.appendFileSync(ledgerFile(ledger, now), half.slice(0, 10));
    expect(reader.spend(now).daily).toBe(0.5);
    fs.appendFileSync(ledgerFile(ledger, now), half.slice(10));
    expect(reader.spend(now).daily).toBe(0.75);
    expect(reader.spend(now).daily).toBe(0.75);
  });

  it("a ledger file replaced or cut short is read anew; a new month reads the new month's file", () => {
    const ledger = ledgerDir(dir);
    const now = local(2026, 12, 3, 15);
    const reader = new LedgerReader(ledger);
    appendLedger(ledger, { at: now, usd: 1, run: "a" });
    appendLedger(ledger, { at: now, usd: 2, run: "b" });
    expect(reader.spend(now).monthly).toBe(3);
    fs.writeFileSync(ledgerFile(ledger, now), line(now, 0.5));
    expect(reader.spend(now).monthly).toBe(0.5);
    const replacement = `${ledgerFile(ledger, now)}.new`;
    fs.writeFileSync(replacement, line(now, 4) + line(now, 4));
    fs.renameSync(replacement, ledgerFile(ledger, now));
    expect(reader.spend(now).monthly).toBe(8);
    const nextMonth = local(2027, 1, 1, 9);
    expect(reader.spend(nextMonth)).toEqual({ daily: 0, monthly: 0 });
    appendLedger(ledger, { at: nextMonth, usd: 0.125, run: "c" });
    expect(reader.spend(nextMonth)).toEqual({ daily: 0.125, monthly: 0.125 });
  });

  it("costs are summed exactly as JSON.parse reads them, whatever their digits", () => {
    const ledger = ledgerDir(dir);
    const now = local(2026, 12, 3, 15);
    const costs = [0.0123, 1.5, 12, 0.0012000000000000001, 1e-7, 3.3333333333333335, 0.1, 0, 123456.789];
    for (const usd of costs) appendLedger(ledger, { at: now, usd, run: "r" });
    const expected = parseLedger(fs.readFileSync(ledgerFile(ledger, now), "utf8")).reduce((sum, e) => sum + e.usd, 0);
    expect(readPeriodSpend(ledger, now).daily).toBe(expected);
    expect(parseLedger(fs.readFileSync(ledgerFile(ledger, now), "utf8")).map((e) => e.usd)).toEqual(costs);
  });
});
