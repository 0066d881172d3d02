/**
 * `inspect <tree dir>`: the tree's dialogs.jsonl — every dialog a child opened, what it asked,
 * who answered (the person, the parent model, the time-out, `deny`) and when. Read
 * tolerantly: a torn or foreign line is skipped and counted, never an error.
 */
import path from "node:path";
import type { DialogRecordV1 } from "../contracts/dialog-record.js";
import { TREE_FILES } from "../contracts/layout.js";
import { isRecord } from "../lib/values.js";
import { readTail } from "./run-files.js";
import { plural } from "./text.js";

/** How many of the newest dialogs the text view lists (`--json` gives every one read). */
const DIALOGS_SHOWN = 20;
/** How much of dialogs.jsonl is read: its end, where the newest dialogs are. */
const DIALOGS_READ_BYTES = 256 * 1024;
const TITLE_CHARS = 100;

export interface TreeDialogs {
  records: DialogRecordV1[];
  /** Lines that are not a dialog record (a line torn by a full disk, the first line of a cut read). */
  skipped: number;
}

export function readTreeDialogs(treeDir: string): TreeDialogs {
  const text = readTail(path.join(treeDir, TREE_FILES.dialogs), DIALOGS_READ_BYTES) ?? "";
  const records: DialogRecordV1[] = [];
  let skipped = 0;
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      const value: unknown = JSON.parse(line);
      if (isRecord(value) && typeof value.agent === "string" && typeof value.answeredBy === "string")
        records.push(value as unknown as DialogRecordV1);
      else skipped++;
    } catch {
      skipped++;
    }
  }
  return { records, skipped };
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > TITLE_CHARS ? `${flat.slice(0, TITLE_CHARS - 1)}…` : flat;
}

/** What the dialog was answered with, as the person would say it. */
function answerText(record: DialogRecordV1): string {
  if (record.cancelled) return "cancelled";
  if (record.confirmed !== undefined) return record.confirmed ? "yes" : "no";
  return JSON.stringify(oneLine(record.value ?? ""));
}

/** The text view's lines; none when the tree had no dialog. */
export function formatTreeDialogs(dialogs: TreeDialogs): string[] {
  const { records } = dialogs;
  if (records.length === 0) return [];
  const shown = records.slice(-DIALOGS_SHOWN);
  const lines = [
    "",
    `dialogs   ${plural(records.length, "dialog")}${shown.length < records.length ? ` (the newest ${shown.length})` : ""}`,
  ];
  for (const record of shown)
    lines.push(
      `  ${record.answeredAt}  ${record.agent} ${record.method} ${JSON.stringify(oneLine(record.title))} → ${answerText(record)} (${record.answeredBy})`,
    );
  if (dialogs.skipped > 0) lines.push(`  ${plural(dialogs.skipped, "line")} of dialogs.jsonl could not be read`);
  return lines;
}
