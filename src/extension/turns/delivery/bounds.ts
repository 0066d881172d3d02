/**
 * Size bounds for whatever the tree relays between agents, so that no notice or copied
 * message can flood a parent's or a child's context: notices in a parent's mailbox and whole
 * messages copied into a child's history. Pure functions, no I/O.
 */

import type { Notice, NoticeWorktree } from "../../../contracts/notice.js";
import { LIMITS } from "../../../contracts/tree.js";
import { headChars, tailChars } from "../../../lib/text.js";
import { isRecord } from "../../../lib/values.js";

type Json = Record<string, unknown>;

/** `text` if it has at most `maxChars` chars, else its head ending in `…` (total ≤ maxChars). */
export function capText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  if (maxChars <= 0) return "";
  return `${headChars(text, maxChars - 1)}…`;
}

export function truncationMarker(omitted: number): string {
  return `[truncated: ${omitted} chars omitted — get_agent_report has the full text]`;
}

/**
 * Keeps about `keepChars` chars of `text`, 60% from the head and 40% from the tail, with the
 * omitted middle replaced by the marker on a line of its own. The marker is not counted in
 * `keepChars`; N in it is the exact number of chars left out.
 */
export function truncateMiddle(text: string, keepChars: number): string {
  if (text.length <= keepChars) return text;
  const keep = Math.max(0, Math.floor(keepChars));
  const head = headChars(text, Math.ceil(keep * 0.6));
  const tail = tailChars(text, keep - Math.ceil(keep * 0.6));
  const omitted = text.length - head.length - tail.length;
  return `${head}\n${truncationMarker(omitted)}\n${tail}`;
}

/**
 * Signatures are opaque provider tokens: a cut one, or one from another provider or session,
 * makes the provider refuse the next request, so copies carry none.
 */
const SIGNATURE_KEYS = ["thinkingSignature", "textSignature"] as const;

/**
 * A deep copy of a pi message without transport signatures and with thinking capped at
 * LIMITS.thinkingChars. Redacted thinking blocks are dropped: their whole payload is the
 * signature, and pi would send them back as `redacted_thinking` with no data.
 */
export function stripSignatures<T>(message: T): T {
  if (!isRecord(message)) return message;
  const copy = structuredClone(message) as Json;
  if (Array.isArray(copy.content)) {
    copy.content = copy.content
      .filter((block) => !(isRecord(block) && block.type === "thinking" && block.redacted === true))
      .map((block) => {
        if (!isRecord(block)) return block;
        for (const key of SIGNATURE_KEYS) delete block[key];
        if (block.type === "thinking" && typeof block.thinking === "string") {
          block.thinking = capText(block.thinking, LIMITS.thinkingChars);
        }
        return block;
      });
  }
  return copy as T;
}

/** A deep copy without thinking blocks: another provider cannot use this one's reasoning. */
export function dropThinking<T>(message: T): T {
  if (!isRecord(message)) return message;
  const copy = structuredClone(message) as Json;
  if (Array.isArray(copy.content)) {
    copy.content = copy.content.filter((block) => !(isRecord(block) && block.type === "thinking"));
  }
  return copy as T;
}

function jsonLength(value: unknown): number {
  return JSON.stringify(value).length;
}

function capSideFields(notice: Notice, maxChars: number): Notice {
  const out: Json = { ...notice };
  for (const [key, value] of Object.entries(out)) {
    if (key !== "report" && typeof value === "string") out[key] = capText(value, maxChars);
  }
  return out as unknown as Notice;
}

/** A path's end (the file name says most), with `…` in front when it was cut. */
function capPath(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `…${tailChars(text, maxChars - 1)}`;
}

/**
 * An isolated agent's `worktree` field within `maxChars` of compact JSON. It is kept whole in
 * what the parent needs to bring the work in — path, branch, both commits, the counts, the
 * merge hint — and the file list gives way: each path is capped (its end kept), then paths are
 * dropped from the end of the sorted list until it fits, `changed_files_total` telling how
 * many there are. The string fields are capped like a notice's side fields.
 */
export function boundWorktree(worktree: NoticeWorktree, maxChars: number = LIMITS.noticeWorktreeChars): NoticeWorktree {
  const total = worktree.changed_files_total ?? worktree.changed_files.length;
  const files = worktree.changed_files
    .slice(0, LIMITS.changedFilesListed)
    .map((file) => capPath(file, LIMITS.changedFilePathChars));
  const bounded: NoticeWorktree = {
    ...worktree,
    path: capText(worktree.path, LIMITS.sideFieldChars),
    branch: capText(worktree.branch, LIMITS.sideFieldChars),
    ...(worktree.error !== undefined && { error: capText(worktree.error, LIMITS.sideFieldChars) }),
    changed_files: files,
  };
  const withFiles = (count: number): NoticeWorktree => {
    const { changed_files_total: _, ...rest } = bounded;
    return { ...rest, changed_files: files.slice(0, count), ...(count < total && { changed_files_total: total }) };
  };
  let count = files.length;
  while (count > 0 && jsonLength(withFiles(count)) > maxChars) count--;
  return withFiles(count);
}

/**
 * A notice whose compact JSON is at most `maxChars` long. Side fields are capped first (an
 * isolated agent's `worktree` to LIMITS.noticeWorktreeChars); the report then gets whatever
 * budget is left, keeping its head and tail. Lengths are measured on the JSON text, so
 * quotes, newlines and control chars (which grow when escaped) count as what they cost. `maxChars` must leave room for the notice's keys and the marker line
 * (a few hundred chars); below that the result is as small as it gets, not within bound.
 */
export function boundNotice(input: Notice, maxChars: number = LIMITS.maxMessageChars): Notice {
  // The worktree field is bounded on its own (boundWorktree) and then kept whole: the report gives way to it.
  const notice = input.worktree ? { ...input, worktree: boundWorktree(input.worktree) } : input;
  let capped = capSideFields(notice, LIMITS.sideFieldChars);
  if (jsonLength(capped) <= maxChars) return capped;

  const report = notice.report;
  // What a report of one truncated line costs at most: the marker naming every char.
  const minimalReport = `\n${truncationMarker(report.length)}\n`;
  const emptyReportLength = (n: Notice): number => jsonLength({ ...n, report: "" }) - 2;
  const reserve = jsonLength(minimalReport);

  if (emptyReportLength(capped) + reserve > maxChars) {
    // Only side fields full of escaped chars get here: shrink them until the marker fits.
    let lo = 0;
    let hi = LIMITS.sideFieldChars;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (emptyReportLength(capSideFields(notice, mid)) + reserve <= maxChars) lo = mid;
      else hi = mid - 1;
    }
    capped = capSideFields(notice, lo);
    if (jsonLength(capped) <= maxChars) return capped;
  }

  const base = emptyReportLength(capped);
  const fits = (keep: number): boolean => base + jsonLength(truncateMiddle(report, keep)) <= maxChars;
  // Every kept char costs at least one JSON char, so more than the budget can never fit.
  let lo = 0;
  let hi = Math.min(report.length - 1, Math.max(0, maxChars - base));
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  const text = fits(lo) ? truncateMiddle(report, lo) : "";
  return { ...capped, report: text };
}
