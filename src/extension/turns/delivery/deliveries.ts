/**
 * The delivery record: which turn-end notices a parent was given and which of them its model
 * took, in the parent's folder of the tree directory (TREE_FILES.deliveries), written
 * atomically and fsynced like every shared file. It makes each notice reach the mailbox
 * exactly once across any number of restarts of the parent:
 *
 * 1. a turn's end is recorded in the child's record (its `notifiedRun` not yet set);
 * 2. the notice is written here as `given` (the one durable step that gives it);
 * 3. it is pushed to the in-memory mailbox (and shown, or wakes the root);
 * 4. the record's `notifiedRun` says so;
 * 5. wait_agent or a wake hands it to pi, its delivery key in the message's details
 *    (`delivery_keys`, never shown to the model);
 * 6. once pi holds it durably (its session has the tool result or the wake message) it is
 *    written here as `taken`.
 *
 * A parent killed before 2 finds the turn's end unnoticed at restore and gives it then; after
 * 2 it finds the notice here, still pending, and puts it back in the mailbox (not given anew)
 * unless its session already holds it (killed between 6's two halves: recorded taken then);
 * after 6 the notice is never returned again. A notice is identified by its agent and run
 * (`/root/a#0002-followup`); notices of no run (a turn that never started, messages) are not
 * recorded here.
 *
 * A damaged record (not JSON, empty, a FIFO where the file belongs) is named once, moved
 * aside and started anew: the records' `notifiedRun` still keeps a notice from being given
 * twice, and nothing waits on it.
 */
import fs from "node:fs";
import path from "node:path";
import type { Notice } from "../../../contracts/notice.js";
import { writeJsonAtomic } from "../../../lib/atomic-file.js";
import { readJsonFile } from "../../../lib/regular-file.js";
import { errorText } from "../../../lib/values.js";
import { DELIVERY_KEYS_FIELD } from "./delivery-keys.js";

/** One notice the parent was given: `notice` is kept until it is taken. */
export interface DeliveryEntry {
  key: string;
  taken: boolean;
  notice?: Notice;
}

export interface DeliveryFileV1 {
  version: 1;
  given: DeliveryEntry[];
}

/**
 * The delivery keys a session's entries hold (any message whose details name them): those
 * notices reached pi durably, whatever the delivery record says.
 */
export function heldDeliveryKeys(entries: readonly unknown[]): Set<string> {
  const held = new Set<string>();
  for (const entry of entries) {
    const e = entry as { message?: { details?: unknown }; details?: unknown } | null;
    if (typeof e !== "object" || e === null) continue;
    // A tool result is a `message` entry; a wake is a `custom_message` entry with details of its own.
    for (const details of [e.message?.details, e.details]) {
      const keys = (details as Record<string, unknown> | null | undefined)?.[DELIVERY_KEYS_FIELD];
      if (Array.isArray(keys)) for (const key of keys) if (typeof key === "string") held.add(key);
    }
  }
  return held;
}

/** The steps of a delivery, for fault injection: a hook that throws at one stops the process there. */
export type DeliveryStep = "end_recorded" | "given" | "pushed" | "taking" | "taken";

/** The I/O of the record (tests inject failures). */
export interface DeliveryFiles {
  read(file: string): ReturnType<typeof readJsonFile>;
  write(file: string, value: DeliveryFileV1): Promise<void>;
  /** Moves a damaged record aside. */
  setAside(file: string): Promise<void>;
}

export const deliveryFiles: DeliveryFiles = {
  read: (file) => readJsonFile(file),
  write: (file, value) => writeJsonAtomic(file, value),
  setAside: (file) => fs.promises.rename(file, `${file}.damaged-${Date.now()}`),
};

/** The key of a turn's notice. */
export function deliveryKey(agentPath: string, runName: string): string {
  return `${agentPath}#${runName}`;
}

function checkEntries(value: unknown): DeliveryEntry[] | undefined {
  const file = value as Partial<DeliveryFileV1> | null;
  if (typeof file !== "object" || file === null || file.version !== 1 || !Array.isArray(file.given)) return undefined;
  const entries: DeliveryEntry[] = [];
  for (const raw of file.given as unknown[]) {
    const entry = raw as Partial<DeliveryEntry> | null;
    if (typeof entry !== "object" || entry === null || typeof entry.key !== "string") return undefined;
    if (typeof entry.taken !== "boolean") return undefined;
    if (!entry.taken && (typeof entry.notice !== "object" || entry.notice === null)) return undefined;
    entries.push(entry as DeliveryEntry);
  }
  return entries;
}

export class DeliveryLog {
  private readonly entries = new Map<string, DeliveryEntry>();
  private readonly keys = new WeakMap<Notice, string>();
  /** Writes one after the other: the last on disk is the latest state. */
  private writing: Promise<void> = Promise.resolve();

  constructor(
    readonly file: string,
    private readonly files: DeliveryFiles = deliveryFiles,
    private readonly report: (line: string) => void = () => undefined,
  ) {}

  /** The record's folder file for a parent's folder. */
  static in(agentDir: string, name: string, files?: DeliveryFiles, report?: (line: string) => void): DeliveryLog {
    return new DeliveryLog(path.join(agentDir, name), files, report);
  }

  /** Reads the record; returns the notices given and not yet taken, oldest first. Never throws. */
  async load(): Promise<Notice[]> {
    const read = await this.files.read(this.file).catch((err: unknown) => ({
      ok: false as const,
      absent: false as const,
      problem: `cannot be read (${errorText(err)})`,
    }));
    if (!read.ok) {
      if (!read.absent) await this.damaged(read.problem);
      return [];
    }
    const entries = checkEntries(read.value);
    if (!entries) {
      await this.damaged("is not a delivery record (version 1)");
      return [];
    }
    const pending: Notice[] = [];
    for (const entry of entries) {
      this.entries.set(entry.key, entry);
      if (!entry.taken && entry.notice) {
        this.keys.set(entry.notice, entry.key);
        pending.push(entry.notice);
      }
    }
    return pending;
  }

  private async damaged(problem: string): Promise<void> {
    this.report(
      `the delivery record ${this.file} ${problem}: set aside and started anew (no notice is given twice; one not yet read may be lost)`,
    );
    await this.files.setAside(this.file).catch(() => undefined);
  }

  /** Whether the notice of this key was given (by any process of this parent). */
  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** Records `notice` as given (durably) before it reaches the mailbox; false when it was given already. */
  async give(key: string, notice: Notice): Promise<boolean> {
    if (this.entries.has(key)) return false;
    this.entries.set(key, { key, taken: false, notice });
    this.keys.set(notice, key);
    await this.save();
    return true;
  }

  /** The key this notice was given under; undefined for a notice of no run. */
  keyOf(notice: Notice): string | undefined {
    return this.keys.get(notice);
  }

  /** Records the notices of these keys as taken (durably); unknown keys are skipped. */
  async taken(keys: readonly string[]): Promise<void> {
    let changed = false;
    for (const key of keys) {
      const entry = this.entries.get(key);
      if (!entry || entry.taken) continue;
      entry.taken = true;
      delete entry.notice;
      changed = true;
    }
    if (changed) await this.save();
  }

  private save(): Promise<void> {
    const write = this.writing
      .catch(() => undefined)
      .then(() => this.files.write(this.file, { version: 1, given: [...this.entries.values()] }));
    this.writing = write;
    return write;
  }
}

/** What a delivery step needs of its process: the fault hook (tests) and where problems go. */
export interface DeliverySteps {
  fault: ((step: DeliveryStep) => void) | undefined;
  report(line: string): void;
}

/**
 * A turn's notice, given once across restarts: recorded as given before `push` puts it in the
 * mailbox; a notice of `key` given before (by any process of this agent) is not given again.
 * A record that cannot be written is reported, and the notice given all the same: better once
 * unrecorded than never.
 */
export async function deliverOnce(
  log: DeliveryLog,
  key: string,
  notice: Notice,
  steps: DeliverySteps,
  push: () => void,
): Promise<void> {
  steps.fault?.("end_recorded");
  try {
    if (!(await log.give(key, notice))) return;
  } catch (err) {
    steps.report(`could not record the notice of ${key} as given: ${errorText(err)}`);
  }
  steps.fault?.("given");
  push();
  steps.fault?.("pushed");
}

/** Notices pi holds durably, recorded as taken (a failure is reported: the session still holds them). */
export async function recordTaken(log: DeliveryLog, keys: readonly string[], steps: DeliverySteps): Promise<void> {
  steps.fault?.("taking");
  try {
    await log.taken(keys);
  } catch (err) {
    steps.report(`could not record that ${keys.length} notice(s) were read: ${errorText(err)}`);
  }
  steps.fault?.("taken");
}
