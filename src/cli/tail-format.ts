/**
 * Pure: the lines `subagent-wrapper tail` prints — each record as the transcript words it,
 * stamped with its time — the closing summary, and when to stop waiting.
 */

import { formatCost } from "../contracts/usage.js";
import { isRecord } from "../lib/values.js";
import { transcriptEntry } from "./inspect-format.js";
import type { EventLine } from "./run-files.js";
import { clockTime, formatDuration, indentContinuation, plural } from "./text.js";

const PAD = " ".repeat(9);

/** `12:00:01 ## assistant (…)` with continuation lines under the text, not the time. */
export function formatTailLine(line: EventLine): string {
  if (!("record" in line)) return `${"?".padEnd(8)} line ${line.line} is ${line.error}: ${line.text.slice(0, 200)}`;
  const text = transcriptEntry(line.record).replace(/\n+$/, "");
  if (text === "") return "";
  const stamp = typeof line.record.ts === "number" ? clockTime(line.record.ts) : "--:--:--";
  return `${stamp} ${indentContinuation(text, PAD)}`;
}

/** The last line: how the run ended, from result.json (else from its run_end record). */
export function formatTailSummary(result: unknown, runEnd: Record<string, unknown> | undefined): string {
  if (isRecord(result)) {
    const parts = [`${String(result.status)} (exit ${String(result.exitCode)})`];
    if (typeof result.durationMs === "number") parts.push(formatDuration(result.durationMs));
    if (typeof result.turns === "number") parts.push(plural(result.turns, "turn"));
    const cost = isRecord(result.usage) && isRecord(result.usage.cost) ? result.usage.cost.total : undefined;
    if (typeof cost === "number") parts.push(formatCost(cost));
    if (typeof result.errorMessage === "string" && result.status !== "completed") parts.push(result.errorMessage);
    return `── ${parts.join(" · ")} ──`;
  }
  if (runEnd) return `── ${String(runEnd.status)} (exit ${String(runEnd.exitCode)}) · no result.json ──`;
  return "── stopped without result.json ──";
}

/** When the run's pi is gone and the wrapper wrote nothing more: it died. */
export function formatStoppedSummary(pid: number | undefined): string {
  return `── stopped without result.json (its pi process${pid ? `, pid ${pid},` : ""} is gone) ──`;
}

/** tail's exit code for a finished run: 0 completed, 1 anything else. */
export function tailExitCode(result: unknown, runEnd: Record<string, unknown> | undefined): number {
  const status = isRecord(result) ? result.status : runEnd?.status;
  return status === "completed" ? 0 : 1;
}

export interface FollowFacts {
  /** result.json is on disk (and JSON). */
  resultPresent: boolean;
  /** When run_end was read, if it was. */
  runEndAt: number | undefined;
  /** The child's liveness, when run_start named its pid. */
  childAlive: boolean | undefined;
  /** When events.jsonl last grew. */
  lastDataAt: number;
  now: number;
}

/** How long to wait for result.json once run_end is written (the wrapper writes it next). */
export const RESULT_AFTER_END_MS = 5000;
/** How long a run whose pi is gone may stay silent before tail says it stopped. */
export const STALL_AFTER_CHILD_MS = 10_000;

export type FollowDecision = "wait" | "finished" | "stopped";

export function followDecision(facts: FollowFacts): FollowDecision {
  if (facts.resultPresent) return "finished";
  if (facts.runEndAt !== undefined) return facts.now - facts.runEndAt >= RESULT_AFTER_END_MS ? "finished" : "wait";
  // The wrapper writes result.json within seconds of pi's exit; a long silence after it
  // means the wrapper itself is gone.
  if (facts.childAlive === false && facts.now - facts.lastDataAt >= STALL_AFTER_CHILD_MS) return "stopped";
  return "wait";
}
