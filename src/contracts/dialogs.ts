/**
 * A child's extension dialogs, carried between its wrapper and its parent's extension.
 *
 * A child whose meta.json sets `dialogs` runs pi so that extension dialogs work in it (pi's RPC
 * mode: `ctx.hasUI` is true and `select` / `confirm` / `input` / `editor` become requests on
 * pi's stdout, answered on its stdin). The wrapper turns each request into a file in the run's
 * `dialogs/` folder and waits for the answer file beside it; whoever answers (the parent's
 * extension: the person, the parent model, or a refusal) writes that file. Both files are
 * written whole (temp file + rename, the temp name starting with `.`), so a reader never sees
 * half of one.
 *
 * - `<seq>.ask.json` (DialogAskV1): written by the wrapper when pi asks; `seq` sorts in the
 *   order of asking.
 * - `<seq>.answer.json` (DialogAnswerV1): written once by whoever answers first. The wrapper
 *   hands it to pi and records the dialog's end in events.jsonl.
 * - The wrapper answers by itself, with `answered_by: "timeout"` (a cancel), once
 *   `timeoutMs` passes: a dialog never outlives its time-out, even when no parent is there to
 *   answer it (a root that went away and comes back in time still sees it waiting).
 *
 * Fire-and-forget calls (`notify`) need no answer: the wrapper records them in events.jsonl.
 */

/** The dialog kinds that wait for an answer (pi's names). */
export const DIALOG_METHODS = ["select", "confirm", "input", "editor"] as const;
export type DialogMethod = (typeof DIALOG_METHODS)[number];

/** Who answered a dialog: a person, the asking agent's parent model, its time-out, or the `deny` setting. */
export const DIALOG_ANSWERERS = ["person", "parent", "timeout", "deny"] as const;
export type DialogAnswerer = (typeof DIALOG_ANSWERERS)[number];

/** meta.json `dialogs`: run the child so its dialogs reach the parent. */
export interface DialogSettingsV1 {
  /**
   * An unanswered dialog is cancelled after this long (the child's extension takes its "no answer" path).
   * @asType integer
   * @minimum 1
   */
  timeoutMs: number;
}

/** One dialog a child's extension opened, as its wrapper wrote it down. */
export interface DialogAskV1 {
  version: 1;
  /** pi's request id (answers name it). */
  id: string;
  /** Its place in the run's order of asking, from 1. */
  seq: number;
  method: DialogMethod;
  /** The extension's title (a question, a command to allow). */
  title: string;
  /** `confirm`'s message. */
  message?: string;
  /** `select`'s options, in order. */
  options?: string[];
  /** `input`'s placeholder. */
  placeholder?: string;
  /** `editor`'s starting text. */
  prefill?: string;
  /** When pi asked (ISO 8601). */
  askedAt: string;
  /** When the wrapper cancels it unanswered (ISO 8601). */
  expiresAt: string;
}

/** The answer to one dialog. Exactly one of `value`, `confirmed`, `cancelled` says what it is. */
export interface DialogAnswerV1 {
  version: 1;
  /** The ask's `id`. */
  id: string;
  /** `select`: the chosen option; `input` / `editor`: the text. */
  value?: string;
  /** `confirm`: yes or no. */
  confirmed?: boolean;
  /** No answer: the extension takes its own "no answer" path. */
  cancelled?: boolean;
  answeredBy: DialogAnswerer;
  /** When it was answered (ISO 8601). */
  answeredAt: string;
}

/** The folder in a run directory that holds its dialogs. */
export const DIALOGS_FOLDER = "dialogs";

/** `00000001.ask.json`: sorts in the order of asking up to 10⁸ dialogs. */
export function dialogAskFileName(seq: number): string {
  return `${String(seq).padStart(8, "0")}.ask.json`;
}

/** `00000001.answer.json`, beside its ask. */
export function dialogAnswerFileName(seq: number): string {
  return `${String(seq).padStart(8, "0")}.answer.json`;
}

/** The seq of an ask file's name, or undefined for any other name (temp files start with `.`). */
export function dialogAskSeq(name: string): number | undefined {
  const match = /^(\d{8,})\.ask\.json$/.exec(name);
  return match ? Number(match[1]) : undefined;
}

/** The line pi's stdin takes for an answer (pi's `extension_ui_response`). */
export function piDialogResponse(answer: DialogAnswerV1): Record<string, unknown> {
  if (answer.cancelled === true || (answer.value === undefined && answer.confirmed === undefined))
    return { type: "extension_ui_response", id: answer.id, cancelled: true };
  if (answer.confirmed !== undefined)
    return { type: "extension_ui_response", id: answer.id, confirmed: answer.confirmed };
  return { type: "extension_ui_response", id: answer.id, value: answer.value };
}
