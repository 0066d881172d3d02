/**
 * How the tree's words are coloured. Every line the UI draws is built by a pure function
 * that takes a `Painter`: pi's theme in the terminal, `plain` where colour codes would be
 * noise (RPC clients get the strings as JSON) and in tests (a painter that tags colours).
 */

import type { NoticeType } from "../../contracts/notice.js";
import type { AgentStatus } from "../../contracts/tree.js";

/** A status as a tool result carries it (any string: an unknown one is painted quietly). */
type StatusText = AgentStatus | NoticeType | (string & {});

/** The theme colours the tree uses (a subset of pi's ThemeColor). */
export type Color = "accent" | "success" | "error" | "warning" | "muted" | "dim" | "toolTitle" | "text";

export interface Painter {
  fg(color: Color, text: string): string;
  bold(text: string): string;
}

export const plain: Painter = { fg: (_color, text) => text, bold: (text) => text };

/** pi's theme as a Painter; `undefined` (no theme) paints nothing. */
export function themePainter(
  theme: { fg(color: never, text: string): string; bold(text: string): string } | undefined,
): Painter {
  if (!theme) return plain;
  return {
    fg: (color, text) => (theme.fg as (color: Color, text: string) => string)(color, text),
    bold: (text) => theme.bold(text),
  };
}

/** What a person reads for a status: `pending_init` is "queued". */
export function statusWord(status: StatusText): string {
  return status === "pending_init" ? "queued" : status;
}

/** Errors stand out, stops warn, work in progress is accented, the rest is quiet. */
export function statusColor(status: StatusText): Color {
  switch (status) {
    case "running":
      return "accent";
    case "completed":
      return "success";
    case "errored":
      return "error";
    case "aborted":
    case "interrupted":
      return "warning";
    case "message":
    case "question":
      return "accent";
    default:
      return "muted"; // queued, shutdown
  }
}

/** One character in front of a notice or an ended agent. */
export function statusMark(status: StatusText): string {
  switch (status) {
    case "completed":
      return "✓";
    case "errored":
      return "✗";
    case "aborted":
    case "interrupted":
      return "■";
    case "shutdown":
      return "○";
    case "message":
      return "✉";
    case "question":
      return "?";
    case "running":
      return "●";
    default:
      return "…";
  }
}

export function paintStatus(p: Painter, status: StatusText, text = statusWord(status)): string {
  return p.fg(statusColor(status), text);
}

/** Statuses in the order counts are told (work first, then how agents ended). */
export const STATUS_ORDER: readonly AgentStatus[] = [
  "running",
  "pending_init",
  "completed",
  "errored",
  "aborted",
  "interrupted",
  "shutdown",
];
