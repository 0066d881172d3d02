/**
 * How a notice is shown to the person at the terminal: one line (mark, who, how it ended,
 * why, the head of the report, an isolated child's branch and how to bring it in), in the colour of how it
 * ended, and the weight pi gives it (an error line, a warning, or a quiet status line).
 * Pure: the Painter is injected.
 */
import type { Notice } from "../../contracts/notice.js";
import { describeNotice, STOP_REASONS } from "../turns/delivery/notices.js";
import { type Painter, plain, statusColor, statusMark } from "./paint.js";

export type NoticeLevel = "info" | "warning" | "error";

/** Errors are errors; a stopped or aborted turn warns; a completed one and a message inform. */
export function noticeLevel(notice: Pick<Notice, "type">): NoticeLevel {
  if (notice.type === "errored") return "error";
  if (notice.type === "aborted" || notice.type === "interrupted") return "warning";
  return "info";
}

/** A stop the person ordered, as the person reads it (the model reads "… by the user"). */
const TO_THE_PERSON: Readonly<Record<string, string>> = {
  [STOP_REASONS.interrupt.user]: "stopped by you",
  [STOP_REASONS.close.user]: "closed by you",
};

/**
 * `✓ /root/worker (Euclid) completed: the report…`, coloured by how the turn ended; an
 * isolated child's line goes on with its branch, commits, files and the command that brings
 * its work in (describeNotice). A stop the person ordered reads as theirs.
 */
export function noticeLine(notice: Notice, p: Painter = plain): string {
  const personal = notice.reason !== undefined ? TO_THE_PERSON[notice.reason] : undefined;
  const shown = personal !== undefined ? { ...notice, reason: personal } : notice;
  return p.fg(statusColor(notice.type), `${statusMark(notice.type)} ${describeNotice(shown)}`);
}
