/**
 * The wrapper's half of a child's extension dialogs (contracts/dialogs.ts): each dialog pi
 * asks for on its stdout becomes `<seq>.ask.json` in the run's `dialogs/` folder and a `dialog`
 * record; the answer file whoever answers writes beside it goes back to pi as one
 * `extension_ui_response` line. A dialog nobody answers in `timeoutMs` is answered here, as a
 * cancel by `timeout`, so the child's extension takes its "no answer" path and goes on.
 *
 * Answers are noticed by fs.watch on the folder, with a poll beside it: a watch can miss an
 * event (network file systems, a folder replaced), and a missed answer would hold the child
 * until its time-out.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import {
  DIALOG_METHODS,
  type DialogAnswerV1,
  type DialogAskV1,
  type DialogMethod,
  dialogAnswerFileName,
  dialogAskFileName,
  piDialogResponse,
} from "../contracts/dialogs.js";
import type { EventRecordBody } from "../contracts/events.js";
import { errorText, isRecord } from "../lib/values.js";
import type { PiEvent } from "./normalize.js";

/** How often the folder is read for answers besides fs.watch. */
export const DIALOG_POLL_MS = 1000;

export interface DialogDeskOptions {
  /** The run's `dialogs/` folder (created when the first dialog is asked). */
  dir: string;
  timeoutMs: number;
  now(): number;
  /** One-shot timers the run cancels when it is over. */
  after(ms: number, fn: () => void): () => void;
  record(body: EventRecordBody): void;
  /** One line to pi's stdin. */
  send(line: Record<string, unknown>): void;
  warn(line: string): void;
}

interface OpenDialog {
  ask: DialogAskV1;
  cancelTimeout: () => void;
}

const asString = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

/** The dialogs of one pi process: asked, waiting, answered. */
export class DialogDesk {
  private seq = 0;
  private readonly open = new Map<number, OpenDialog>();
  private watcher: fs.FSWatcher | undefined;
  private cancelPoll: (() => void) | undefined;
  private closed = false;

  constructor(private readonly options: DialogDeskOptions) {}

  /** The number of dialogs waiting for an answer. */
  get waiting(): number {
    return this.open.size;
  }

  /** One `extension_ui_request` from pi: a dialog is asked, a notice recorded, anything else (status, widgets, titles) dropped. */
  request(event: PiEvent): void {
    const method = asString(event.method);
    if (method === "notify") {
      const level = asString(event.notifyType);
      this.options.record({ type: "notify", message: asString(event.message) ?? "", ...(level && { level }) });
      return;
    }
    const id = asString(event.id);
    if (!id || !(DIALOG_METHODS as readonly string[]).includes(method ?? "")) return;
    this.ask(id, method as DialogMethod, event);
  }

  /** Stops watching and forgets what is waiting (the child is gone: nobody could be answered). */
  close(): void {
    this.closed = true;
    this.watcher?.close();
    this.watcher = undefined;
    this.cancelPoll?.();
    for (const dialog of this.open.values()) dialog.cancelTimeout();
    this.open.clear();
  }

  private ask(id: string, method: DialogMethod, event: PiEvent): void {
    if (this.closed) return;
    this.seq += 1;
    const seq = this.seq;
    const askedAt = this.options.now();
    const options = Array.isArray(event.options) ? event.options.filter((o) => typeof o === "string") : undefined;
    const message = asString(event.message);
    const placeholder = asString(event.placeholder);
    const prefill = asString(event.prefill);
    const ask: DialogAskV1 = {
      version: 1,
      id,
      seq,
      method,
      title: asString(event.title) ?? "",
      ...(message !== undefined && { message }),
      ...(options && { options }),
      ...(placeholder !== undefined && { placeholder }),
      ...(prefill !== undefined && { prefill }),
      askedAt: new Date(askedAt).toISOString(),
      expiresAt: new Date(askedAt + this.options.timeoutMs).toISOString(),
    };
    try {
      fs.mkdirSync(this.options.dir, { recursive: true });
      this.writeWhole(dialogAskFileName(seq), ask);
    } catch (err) {
      // Nobody can see this dialog: it is cancelled at once rather than left to hang the child.
      this.options.warn(`dialog ${seq} could not be written to ${this.options.dir} (${errorText(err)}): cancelled`);
      this.options.send({ type: "extension_ui_response", id, cancelled: true });
      return;
    }
    this.options.record({ type: "dialog", phase: "asked", id, dialogSeq: seq, method, title: ask.title });
    const cancelTimeout = this.options.after(this.options.timeoutMs, () => this.answerByTimeout(seq));
    this.open.set(seq, { ask, cancelTimeout });
    this.watch();
    // Answered already (a fast answerer, or an answer the watch saw before this dialog was open).
    this.collect(seq);
  }

  /** Starts the watch and the poll once, at the first dialog. */
  private watch(): void {
    if (this.watcher || this.cancelPoll) return;
    try {
      this.watcher = fs.watch(this.options.dir, (_kind, name) => {
        const seq = typeof name === "string" ? /^(\d{8,})\.answer\.json$/.exec(name)?.[1] : undefined;
        if (seq !== undefined) this.collect(Number(seq));
      });
      this.watcher.on("error", () => {
        this.watcher?.close();
      });
    } catch {
      // The poll alone finds the answers.
    }
    const poll = () => {
      for (const seq of [...this.open.keys()]) this.collect(seq);
      if (!this.closed) this.cancelPoll = this.options.after(DIALOG_POLL_MS, poll);
    };
    this.cancelPoll = this.options.after(DIALOG_POLL_MS, poll);
  }

  /** Hands dialog `seq`'s answer to pi if its answer file is there. */
  private collect(seq: number): void {
    const dialog = this.open.get(seq);
    if (!dialog) return;
    const answer = this.readAnswer(seq, dialog.ask.id);
    if (answer) this.deliver(seq, answer);
  }

  private readAnswer(seq: number, id: string): DialogAnswerV1 | undefined {
    let text: string;
    try {
      text = fs.readFileSync(path.join(this.options.dir, dialogAnswerFileName(seq)), "utf8");
    } catch {
      return undefined;
    }
    try {
      const parsed: unknown = JSON.parse(text);
      if (isRecord(parsed) && parsed.id === id) return parsed as unknown as DialogAnswerV1;
      this.options.warn(`dialog ${seq}: its answer names another dialog: cancelled`);
    } catch (err) {
      this.options.warn(`dialog ${seq}: its answer is not valid JSON (${errorText(err)}): cancelled`);
    }
    // A broken answer cannot say what was meant: the dialog is cancelled as the wrapper's own cancel.
    return {
      version: 1,
      id,
      cancelled: true,
      answeredBy: "timeout",
      answeredAt: new Date(this.options.now()).toISOString(),
    };
  }

  private deliver(seq: number, answer: DialogAnswerV1): void {
    const dialog = this.open.get(seq);
    if (!dialog) return;
    this.open.delete(seq);
    dialog.cancelTimeout();
    this.options.send(piDialogResponse(answer));
    const cancelled = piDialogResponse(answer).cancelled === true;
    this.options.record({
      type: "dialog",
      phase: "answered",
      id: dialog.ask.id,
      dialogSeq: seq,
      method: dialog.ask.method,
      title: dialog.ask.title,
      answeredBy: answer.answeredBy,
      ...(cancelled && { cancelled }),
    });
    if (this.open.size === 0) this.stopWatching();
  }

  /** Nobody answered in time: the wrapper's cancel, unless an answer lands first (the first file wins). */
  private answerByTimeout(seq: number): void {
    const dialog = this.open.get(seq);
    if (!dialog) return;
    const answer: DialogAnswerV1 = {
      version: 1,
      id: dialog.ask.id,
      cancelled: true,
      answeredBy: "timeout",
      answeredAt: new Date(this.options.now()).toISOString(),
    };
    try {
      this.writeWhole(dialogAnswerFileName(seq), answer, { exclusive: true });
    } catch {
      // An answer is there already (or the folder is gone): what is there decides.
      this.collect(seq);
      if (!this.open.has(seq)) return;
    }
    this.deliver(seq, answer);
  }

  private stopWatching(): void {
    this.watcher?.close();
    this.watcher = undefined;
    this.cancelPoll?.();
    this.cancelPoll = undefined;
  }

  /**
   * A file written whole: a temp name starting with `.`, then renamed (or, `exclusive`, linked:
   * fails when the name exists, so a first answer is never replaced).
   */
  private writeWhole(name: string, value: unknown, { exclusive = false } = {}): void {
    const target = path.join(this.options.dir, name);
    const temp = path.join(this.options.dir, `.${name}.${randomBytes(4).toString("hex")}.tmp`);
    fs.writeFileSync(temp, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
    try {
      if (exclusive) fs.linkSync(temp, target);
      else fs.renameSync(temp, target);
    } finally {
      if (exclusive) fs.rmSync(temp, { force: true });
    }
  }
}
