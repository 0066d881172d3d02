/**
 * The dialogs this agent's running children open, taken from each run's `dialogs/` folder
 * (contracts/dialogs.ts) and sent where dialog-routing.ts says: pi's own dialog here (the
 * person's, one at a time), a question to this agent's model, or a refusal. Each answer is
 * written to the asking run's folder only, once (whoever answers first wins: the wrapper
 * cancels a dialog by itself at its time-out), and every dialog that ends here is appended to
 * the tree's dialogs.jsonl.
 */
import fs from "node:fs";
import path from "node:path";
import {
  DIALOGS_FOLDER,
  type DialogAnswerer,
  type DialogAnswerV1,
  type DialogAskV1,
  dialogAnswerFileName,
  dialogAskSeq,
} from "../../../contracts/dialogs.js";
import { RUN_FILES } from "../../../contracts/layout.js";
import type { Notice } from "../../../contracts/notice.js";
import type { AgentRecordV1 } from "../../../contracts/tree.js";
import { createComplete } from "../../../lib/atomic-file.js";
import { type Clock, systemClock, type TimerHandle } from "../../../lib/clock.js";
import { errorText, isRecord } from "../../../lib/values.js";
import { messageNotice } from "../delivery/notices.js";
import {
  type AnswerContent,
  type DialogHandling,
  DialogLine,
  dialogRecord,
  headedTitle,
  type ModelAnswer,
  modelAnswerContent,
  presentedContent,
  questionId,
} from "./dialog-routing.js";
import { DialogWatch, type FolderWatch } from "./dialog-watch.js";

/** A running turn of a child, whose dialogs this agent answers. */
export interface DialogRun {
  record: AgentRecordV1;
  runDir: string;
}

function fileExists(file: string): Promise<boolean> {
  return fs.promises.access(file).then(
    () => true,
    () => false,
  );
}

/** Opens pi's dialog of the ask's kind with `title`; undefined when dismissed or aborted. */
export type DialogPresenter = (
  ask: DialogAskV1,
  title: string,
  signal: AbortSignal,
) => Promise<string | boolean | undefined>;

export interface DialogDeskOptions {
  handling: DialogHandling;
  /** The running turns of this agent's children now. */
  runs(): DialogRun[];
  /** pi's dialog (needed for `present`). */
  present?: DialogPresenter | undefined;
  /** A question for this agent's model (its mailbox). */
  question(notice: Notice): void;
  /** The tree's dialogs.jsonl. */
  recordPath: string;
  report(line: string): void;
  /** The count of dialogs waiting for the person changed (the widget shows it). */
  changed?(): void;
  clock?: Clock;
  /** How a folder is watched (tests pass none: they scan by hand). */
  watch?: FolderWatch;
}

interface Entry {
  key: string;
  agent: string;
  run: string;
  runDir: string;
  ask: DialogAskV1;
  done: boolean;
  abort?: AbortController;
  questionId?: string;
}

/** How often the running turns' dialogs/ folders are looked at besides their watch: a person sees a child's dialog within this even when a watch misses it. */
export const DIALOG_SCAN_MS = 100;

export class DialogDesk {
  private readonly entries = new Map<string, Entry>();
  private readonly line = new DialogLine<Entry>();
  private readonly questions = new Map<string, Entry>();
  private readonly clock: Clock;
  private timer: TimerHandle | undefined;
  private scanning: Promise<void> | undefined;
  /** A folder changed during the scan under way: one more scan right after it. */
  private rescan = false;
  private recordFailed = false;
  private readonly watch: DialogWatch | undefined;

  constructor(private readonly options: DialogDeskOptions) {
    this.clock = options.clock ?? systemClock;
    if (options.watch) this.watch = new DialogWatch(() => this.folderChanged(), options.watch);
  }

  /** Looks at the running turns' dialogs/ folders on each change and every DIALOG_SCAN_MS (neither holds pi open). */
  start(): void {
    if (this.timer === undefined) this.timer = this.clock.setInterval(() => void this.scan(), DIALOG_SCAN_MS);
  }

  /** Stops looking; dialogs shown are closed, and their asks stay for the next process (or their time-out). */
  stop(): void {
    if (this.timer !== undefined) this.clock.clearInterval(this.timer);
    this.timer = undefined;
    this.watch?.close();
    for (const entry of this.entries.values()) entry.abort?.abort();
  }

  /** Dialogs waiting for the person here, the one shown included. */
  get waitingForPerson(): number {
    return this.line.count;
  }

  /** The questions this agent's model has not answered yet, oldest first. */
  openQuestions(): string[] {
    return [...this.questions.keys()];
  }

  /** One look at every running turn's dialogs/ folder: new asks routed, asks answered elsewhere let go. */
  scan(): Promise<void> {
    this.scanning ??= this.scanOnce().finally(() => {
      this.scanning = undefined;
      if (!this.rescan) return;
      this.rescan = false;
      void this.scan();
    });
    return this.scanning;
  }

  private folderChanged(): void {
    if (this.timer === undefined) return;
    if (this.scanning) this.rescan = true;
    else void this.scan();
  }

  private async scanOnce(): Promise<void> {
    // A run whose result.json exists has ended (interrupted, out of time…) even while its turn
    // still looks live here, before this process has read the result: its waiting dialogs have
    // nobody left to answer, so they stop being shown at once.
    const all = this.options.runs();
    const ended = await Promise.all(all.map((run) => fileExists(path.join(run.runDir, RUN_FILES.result))));
    const runs = all.filter((_run, i) => !ended[i]);
    const live = new Set(runs.map((run) => run.runDir));
    // Watched before they are read: an ask written from here on is seen at once.
    this.watch?.follow([...live]);
    // A turn that ended took its dialogs with it: nothing is left to answer.
    for (const entry of this.entries.values()) if (!entry.done && !live.has(entry.runDir)) this.letGo(entry, undefined);
    for (const run of runs) await this.scanRun(run);
  }

  private async scanRun(run: DialogRun): Promise<void> {
    const folder = path.join(run.runDir, DIALOGS_FOLDER);
    const names = await fs.promises.readdir(folder).catch(() => [] as string[]);
    const present = new Set(names);
    const answeredElsewhere: Entry[] = [];
    const fresh: Array<{ key: string; name: string }> = [];
    for (const name of names.sort()) {
      const seq = dialogAskSeq(name);
      if (seq === undefined) continue;
      const key = `${run.runDir}#${seq}`;
      const known = this.entries.get(key);
      const answered = present.has(dialogAnswerFileName(seq));
      if (known && !known.done && answered) answeredElsewhere.push(known);
      // One answered before this process saw it (while no parent was there) has nothing to route.
      else if (!known && !answered) fresh.push({ key, name });
    }
    // All let go at once: a dialog answered elsewhere is never shown in place of another one that was.
    const answers = await Promise.all(
      answeredElsewhere.map((entry) => readAnswer(path.join(folder, dialogAnswerFileName(entry.ask.seq)))),
    );
    for (const [i, entry] of answeredElsewhere.entries()) this.letGo(entry, answers[i]);
    for (const { key, name } of fresh) {
      const ask = await readAsk(path.join(folder, name));
      if (!ask || this.entries.has(key)) continue;
      const entry: Entry = {
        key,
        agent: run.record.path,
        run: path.basename(run.runDir),
        runDir: run.runDir,
        ask,
        done: false,
      };
      this.entries.set(key, entry);
      await this.route(entry, run.record);
    }
  }

  private async route(entry: Entry, record: AgentRecordV1): Promise<void> {
    const { handling } = this.options;
    if (handling === "deny") return void (await this.answer(entry, { cancelled: true }, "deny"));
    if (handling === "present" && this.options.present) {
      const show = this.line.add(entry);
      if (show) this.show(show);
      this.options.changed?.();
      return;
    }
    entry.questionId = questionId(entry.agent, entry.run, entry.ask.seq);
    this.questions.set(entry.questionId, entry);
    this.options.question(questionNotice(entry, record));
  }

  private show(entry: Entry): void {
    const present = this.options.present;
    if (!present) return;
    const abort = new AbortController();
    entry.abort = abort;
    void present(entry.ask, headedTitle(entry.agent, entry.ask.title), abort.signal)
      .then((result) =>
        entry.done ? undefined : this.answer(entry, presentedContent(entry.ask.method, result), "person"),
      )
      .catch((err) => this.options.report(`a dialog of ${entry.agent} could not be shown: ${errorText(err)}`))
      .finally(() => {
        const next = this.line.done(entry.key);
        if (next) this.show(next);
        this.options.changed?.();
      });
  }

  /**
   * The parent model's answer (send_message `answer`) to a question of `agent`'s. Throws one
   * line when no such question waits (answered, timed out, or its turn ended) or the answer
   * does not fit it.
   */
  async answerQuestion(agent: string, answer: ModelAnswer): Promise<{ answered: string; answered_by: DialogAnswerer }> {
    const entry = this.questions.get(answer.question_id);
    if (!entry || entry.agent !== agent)
      throw new Error(
        `no question ${JSON.stringify(answer.question_id)} of ${agent} is waiting: it was answered, timed out or its turn ended${this.questions.size > 0 ? ` (waiting: ${[...this.questions.keys()].join(", ")})` : ""}`,
      );
    const content = modelAnswerContent(entry.ask, answer);
    const by = await this.answer(entry, content, "parent");
    if (by !== "parent")
      throw new Error(`question ${answer.question_id} was answered first (${by}); your answer was not used`);
    return { answered: answer.question_id, answered_by: by };
  }

  /** Writes the answer file unless one is there; records whichever answer won. Returns who that was. */
  private async answer(entry: Entry, content: AnswerContent, by: DialogAnswerer): Promise<DialogAnswerer> {
    const file = path.join(entry.runDir, DIALOGS_FOLDER, dialogAnswerFileName(entry.ask.seq));
    const answer: DialogAnswerV1 = {
      version: 1,
      id: entry.ask.id,
      ...content,
      answeredBy: by,
      answeredAt: new Date(this.clock.now()).toISOString(),
    };
    let written: boolean;
    try {
      written = createComplete(file, `${JSON.stringify(answer)}\n`, 0o644);
    } catch (err) {
      this.options.report(`the answer to a dialog of ${entry.agent} could not be written: ${errorText(err)}`);
      this.letGo(entry, undefined);
      return by;
    }
    if (written) {
      this.finish(entry, answer);
      return by;
    }
    const first = await readAnswer(file);
    this.letGo(entry, first);
    return first?.answeredBy ?? by;
  }

  /** A dialog answered elsewhere (or whose turn ended): out of the line and the questions, recorded when known. */
  private letGo(entry: Entry, answer: DialogAnswerV1 | undefined): void {
    if (entry.done) return;
    if (this.line.drop(entry.key)) entry.abort?.abort();
    if (answer) this.finish(entry, answer);
    else this.close(entry);
  }

  private finish(entry: Entry, answer: DialogAnswerV1): void {
    this.close(entry);
    const content: AnswerContent =
      answer.value !== undefined
        ? { value: answer.value }
        : answer.confirmed !== undefined
          ? { confirmed: answer.confirmed }
          : { cancelled: true };
    const line = dialogRecord(entry.agent, entry.run, entry.ask, {
      ...content,
      answeredBy: answer.answeredBy,
      answeredAt: answer.answeredAt,
    });
    try {
      fs.appendFileSync(this.options.recordPath, `${JSON.stringify(line)}\n`, { flag: "a" });
    } catch (err) {
      if (!this.recordFailed) this.options.report(`dialogs.jsonl could not be written: ${errorText(err)}`);
      this.recordFailed = true;
    }
  }

  private close(entry: Entry): void {
    entry.done = true;
    if (entry.questionId) this.questions.delete(entry.questionId);
    this.options.changed?.();
  }
}

/** The notice a parent model gets for a child's dialog: what it asks, and how to answer. */
export function questionNotice(entry: Pick<Entry, "agent" | "ask" | "questionId">, record: AgentRecordV1): Notice {
  const { ask } = entry;
  const id = entry.questionId ?? "";
  const how =
    ask.method === "confirm"
      ? `"confirmed": true or false`
      : ask.method === "select"
        ? `"value": one of the options`
        : `"value": your text`;
  const text = [
    `${entry.agent} asks (${ask.method}): ${ask.title}`,
    ...(ask.message ? [ask.message] : []),
    ...(ask.options ? [`Options: ${ask.options.map((option) => JSON.stringify(option)).join(", ")}`] : []),
    `Answer with send_message {"target": "${entry.agent}", "answer": {"question_id": "${id}", ${how}}}; no value cancels. Unanswered by ${ask.expiresAt}, it is cancelled.`,
  ].join("\n");
  return {
    ...messageNotice(entry.agent, record, text),
    type: "question",
    question_id: id,
    method: ask.method,
    title: ask.title,
    ...(ask.options && { options: ask.options }),
  };
}

async function readJson(file: string): Promise<Record<string, unknown> | undefined> {
  try {
    const value: unknown = JSON.parse(await fs.promises.readFile(file, "utf8"));
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

const METHODS = new Set(["select", "confirm", "input", "editor"]);

async function readAsk(file: string): Promise<DialogAskV1 | undefined> {
  const raw = await readJson(file);
  if (!raw || typeof raw.id !== "string" || typeof raw.title !== "string" || !METHODS.has(raw.method as string))
    return undefined;
  if (typeof raw.seq !== "number") return undefined;
  return raw as unknown as DialogAskV1;
}

async function readAnswer(file: string): Promise<DialogAnswerV1 | undefined> {
  const raw = await readJson(file);
  if (!raw || typeof raw.answeredBy !== "string") return undefined;
  return raw as unknown as DialogAnswerV1;
}
