/**
 * Pure: who answers a child's dialog, what the person sees of it, and what an answer from the
 * parent model must hold. The I/O (the dialogs/ folders, the record, pi's dialogs) is
 * dialogs.ts'.
 */

import type { DialogRecordV1 } from "../../../contracts/dialog-record.js";
import type { DialogRoute } from "../../../contracts/dialog-settings.js";
import type { DialogAnswerer, DialogAskV1, DialogMethod } from "../../../contracts/dialogs.js";

/**
 * Where this agent sends a dialog one of its children opened:
 * - `present`: pi's own dialog in this process — the person's in a root with a UI, and in an
 *   agent below the root (itself run so its dialogs reach its parent) the same dialog goes one
 *   step up, on its way to the person;
 * - `parent_model`: a question notice to this agent's model, answered with send_message;
 * - `deny`: cancelled at once (recorded).
 */
export type DialogHandling = "present" | "parent_model" | "deny";

/**
 * The route a root hands its descendants: the person only when the setting allows it and the
 * root has a UI to show them (interactive or RPC); else the parent model; `deny` stays.
 */
export function treeDialogRoute(setting: DialogRoute, rootHasUi: boolean): DialogRoute {
  if (setting === "person" && !rootHasUi) return "parent";
  return setting;
}

/**
 * How this agent handles a child's dialog, given the tree's route and whether this process
 * can open a dialog (`hasUi`). An agent below the root with no UI (run without dialogs) cannot
 * pass a dialog up: its own model answers.
 */
export function dialogHandling(route: DialogRoute, hasUi: boolean): DialogHandling {
  if (route === "deny") return "deny";
  if (route === "person" && hasUi) return "present";
  return "parent_model";
}

/** `/root/fixer asks: ` — a heading naming the asking agent. */
const HEADING = /^(\/root(?:\/[^\s/]+)*) asks: /;

/**
 * The title pi's dialog shows: headed with the asking agent's path. A title already headed
 * by an agent below `agentPath` (a dialog a middle agent passes up from its own child) keeps
 * its heading, which names the agent that really asks; any other heading is the extension's
 * own text, and gets ours in front of it.
 */
export function headedTitle(agentPath: string, title: string): string {
  const heading = HEADING.exec(title)?.[1];
  if (heading?.startsWith(`${agentPath}/`)) return title;
  return `${agentPath} asks: ${title}`;
}

/** The id a parent model answers a question by: the asking child's name, its run and the dialog's place there. */
export function questionId(agentPath: string, runName: string, seq: number): string {
  return `${agentPath.split("/").at(-1)}.${runName.split("-")[0]}.${seq}`;
}

/** What a parent model answers with (send_message `answer`). */
export interface ModelAnswer {
  question_id: string;
  value?: string | undefined;
  confirmed?: boolean | undefined;
}

/** The answer's content as the answer file holds it: exactly one of value, confirmed, cancelled. */
export type AnswerContent = { value: string } | { confirmed: boolean } | { cancelled: true };

/**
 * The parent model's answer checked against the question: a `select` takes one of its
 * options, a `confirm` takes `confirmed`, `input` and `editor` take a `value`. Neither given
 * is a cancel (the extension takes its "no answer" path). Throws one line when it does not fit.
 */
export function modelAnswerContent(ask: Pick<DialogAskV1, "method" | "options">, answer: ModelAnswer): AnswerContent {
  const { method } = ask;
  if (answer.value === undefined && answer.confirmed === undefined) return { cancelled: true };
  if (method === "confirm") {
    if (answer.confirmed === undefined)
      throw new Error(`question ${answer.question_id} is a confirm: answer with "confirmed": true or false`);
    return { confirmed: answer.confirmed };
  }
  if (answer.value === undefined) throw new Error(`question ${answer.question_id} is a ${method}: answer with "value"`);
  if (method === "select" && !(ask.options ?? []).includes(answer.value))
    throw new Error(
      `question ${answer.question_id}: "${answer.value}" is not one of its options (${(ask.options ?? []).map((option) => JSON.stringify(option)).join(", ")})`,
    );
  return { value: answer.value };
}

/** pi's dialog result as answer content: undefined (dismissed, aborted) is a cancel. */
export function presentedContent(method: DialogMethod, result: string | boolean | undefined): AnswerContent {
  if (result === undefined) return { cancelled: true };
  if (method === "confirm") return { confirmed: result === true };
  return { value: String(result) };
}

export function dialogRecord(
  agent: string,
  run: string,
  ask: DialogAskV1,
  answer: AnswerContent & { answeredBy: DialogAnswerer; answeredAt: string },
): DialogRecordV1 {
  return {
    version: 1,
    agent,
    run,
    seq: ask.seq,
    method: ask.method,
    title: ask.title,
    ...(ask.message !== undefined && { message: ask.message }),
    ...(ask.options && { options: ask.options }),
    askedAt: ask.askedAt,
    answeredBy: answer.answeredBy,
    answeredAt: answer.answeredAt,
    ...("value" in answer && { value: answer.value }),
    ...("confirmed" in answer && { confirmed: answer.confirmed }),
    ...("cancelled" in answer && { cancelled: true }),
  };
}

/**
 * The person's dialogs, one at a time in order of arrival: `next` is the one to show once the
 * shown one is done; one already answered elsewhere (its time-out) leaves the line.
 */
export class DialogLine<T extends { key: string }> {
  private readonly waiting: T[] = [];
  private shown: T | undefined;

  /** Adds a dialog at the end; returns it when nothing is shown (show it now). */
  add(item: T): T | undefined {
    if (this.shown?.key === item.key || this.waiting.some((queued) => queued.key === item.key)) return undefined;
    this.waiting.push(item);
    return this.shown ? undefined : this.advance();
  }

  /** The shown dialog is done; returns the next to show, if any. */
  done(key: string): T | undefined {
    if (this.shown?.key !== key) return undefined;
    this.shown = undefined;
    return this.advance();
  }

  /** A dialog answered elsewhere leaves the line; true when it was the one shown (close it). */
  drop(key: string): boolean {
    if (this.shown?.key === key) return true;
    const at = this.waiting.findIndex((queued) => queued.key === key);
    if (at >= 0) this.waiting.splice(at, 1);
    return false;
  }

  /** How many wait, the shown one included (the widget's count). */
  get count(): number {
    return this.waiting.length + (this.shown ? 1 : 0);
  }

  get current(): T | undefined {
    return this.shown;
  }

  private advance(): T | undefined {
    this.shown = this.waiting.shift();
    return this.shown;
  }
}
