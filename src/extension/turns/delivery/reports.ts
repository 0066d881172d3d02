/**
 * Full reports: every turn's final answer, stored out of band in the agent's folder of the
 * tree directory, so that sessions and notices stay small while the whole answer stays
 * readable. `reports/<turn>.json`, one file per turn, newest LIMITS.reportsKept kept.
 */
import { readdir, rm } from "node:fs/promises";
import path from "node:path";
import { TREE_FILES } from "../../../contracts/layout.js";
import { LIMITS } from "../../../contracts/tree.js";
import { writeFileAtomic } from "../../../lib/atomic-file.js";
import { readJsonFile } from "../../../lib/regular-file.js";
import { cutBefore, headChars } from "../../../lib/text.js";

export interface StoredReportV1 {
  version: 1;
  runId: string;
  turn: number;
  outcome: string;
  at: string;
  /** The answer's first LIMITS.reportChars chars. */
  text: string;
  original_chars: number;
  /** False when the answer was longer than the cap. */
  complete: boolean;
}

export interface SaveReportEntry {
  runId: string;
  turn: number;
  outcome: string;
  text: string;
  at?: string;
}

export interface SavedReport {
  stored_chars: number;
  original_chars: number;
  complete: boolean;
}

export interface ReportPage {
  available: boolean;
  text: string;
  offset: number;
  next_offset: number | null;
  total_chars: number;
  original_chars: number;
  complete: boolean;
  turn_number?: number;
}

const REPORT_FILE = /^(\d+)\.json$/;

function reportsDir(agentDir: string): string {
  return path.join(agentDir, TREE_FILES.reports);
}

/** Zero-padded so a plain directory listing sorts in turn order too. */
function reportFileName(turn: number): string {
  return `${String(turn).padStart(6, "0")}.json`;
}

function checkIndex(name: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    throw new Error(`${name} must be a non-negative integer`);
  }
  return value;
}

/** Stored report files, newest turn first. */
async function listReports(agentDir: string): Promise<Array<{ turn: number; file: string }>> {
  let names: string[];
  try {
    names = await readdir(reportsDir(agentDir));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
  const reports: Array<{ turn: number; file: string }> = [];
  for (const name of names) {
    const match = REPORT_FILE.exec(name);
    if (match) reports.push({ turn: Number(match[1]), file: path.join(reportsDir(agentDir), name) });
  }
  return reports.sort((a, b) => b.turn - a.turn);
}

export async function saveReport(agentDir: string, entry: SaveReportEntry): Promise<SavedReport> {
  const turn = checkIndex("turn", entry.turn);
  const text = headChars(entry.text, LIMITS.reportChars);
  const complete = text.length === entry.text.length;
  const record: StoredReportV1 = {
    version: 1,
    runId: entry.runId,
    turn,
    outcome: entry.outcome,
    at: entry.at ?? new Date().toISOString(),
    text,
    original_chars: entry.text.length,
    complete,
  };
  // Other processes of the tree read reports at any time: they must never see half a file.
  await writeFileAtomic(path.join(reportsDir(agentDir), reportFileName(turn)), `${JSON.stringify(record)}\n`);
  const stale = (await listReports(agentDir)).slice(LIMITS.reportsKept);
  await Promise.all(stale.map((report) => rm(report.file, { force: true })));
  return { stored_chars: text.length, original_chars: entry.text.length, complete };
}

function unavailable(): ReportPage {
  return {
    available: false,
    text: "",
    offset: 0,
    next_offset: null,
    total_chars: 0,
    original_chars: 0,
    complete: false,
  };
}

async function readStored(file: string): Promise<StoredReportV1 | undefined> {
  // Pruned by another process between listing and reading, or damaged (a FIFO included,
  // which is refused without blocking): no report to page.
  const read = await readJsonFile(file);
  if (!read.ok) return undefined;
  const raw = read.value;
  if (typeof raw !== "object" || raw === null) return undefined;
  const record = raw as Partial<StoredReportV1>;
  if (record.version !== 1 || typeof record.text !== "string" || typeof record.turn !== "number") return undefined;
  return record as StoredReportV1;
}

/**
 * One page of a stored report: `turn` 0 is the latest, 1 the one before, …; page through with
 * `offset = next_offset` until `next_offset` is null.
 */
export async function readReportPage(
  agentDir: string,
  opts: { turn?: number; offset?: number } = {},
): Promise<ReportPage> {
  const back = checkIndex("turn", opts.turn ?? 0);
  const offset = checkIndex("offset", opts.offset ?? 0);
  const reports = await listReports(agentDir);
  const chosen = reports[back];
  if (!chosen) return unavailable();
  const stored = await readStored(chosen.file);
  if (!stored) return unavailable();

  const total = stored.text.length;
  const start = Math.min(offset, total);
  const end = Math.max(start, cutBefore(stored.text, start + LIMITS.reportPageChars));
  return {
    available: true,
    text: stored.text.slice(start, end),
    offset,
    next_offset: end < total ? end : null,
    total_chars: total,
    original_chars: typeof stored.original_chars === "number" ? stored.original_chars : total,
    complete: stored.complete !== false,
    turn_number: stored.turn,
  };
}
