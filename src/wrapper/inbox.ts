/**
 * The wrapper's half of a run's live-message inbox (meta.json `inboxPath`, see
 * contracts/inbox.ts): it confirms deliveries. The task extension inside the child hands each
 * message to pi; only pi's own stream says whether it reached the conversation (a message
 * pi accepted at the very end of a run can be dropped), so a message counts as delivered
 * when pi shows a user message with exactly its text — never because a file was written or
 * handed over. A confirmed message is recorded (`message_delivered`) and moved to `delivered/`.
 */
import fs from "node:fs";
import path from "node:path";
import type { MessageDeliveredRecord } from "../contracts/events.js";
import { INBOX_DELIVERED, type InboxMessageV1, isInboxMessageName, parseInboxMessage } from "../contracts/inbox.js";
import { folderNames } from "../lib/folder-names.js";
import { readRegularFileSync } from "../lib/regular-file.js";
import { errorText, isRecord } from "../lib/values.js";
import type { PiEvent } from "./normalize.js";

/** How the ledger reaches the folder (the real file system by default; tests pass a map). */
export interface InboxFiles {
  /** Creates the folder (one level) when missing; throws when it cannot be used. */
  prepare(dir: string): void;
  /** The names in the folder (any order); [] when it cannot be read. */
  list(dir: string): string[];
  /** A file's text, or undefined when it cannot be read (gone, half there). */
  read(file: string): string | undefined;
  /** Moves a delivered message into `delivered/`; never throws (the record is what counts). */
  markDelivered(dir: string, name: string): void;
}

export const nodeInboxFiles: InboxFiles = {
  prepare(dir) {
    try {
      // One level, never recursive: the sender makes the folder it writes into; this only
      // spares a script the mkdir (and a recursive mkdir never returns under /proc).
      fs.mkdirSync(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    if (!fs.statSync(dir).isDirectory()) throw new Error("it is not a folder");
  },
  list: folderNames,
  read(file) {
    // Never a blocking read: a FIFO in the inbox must not stop the run's timers.
    const read = readRegularFileSync(file);
    return "text" in read ? read.text : undefined;
  },
  markDelivered(dir, name) {
    try {
      fs.mkdirSync(path.join(dir, INBOX_DELIVERED), { recursive: false });
    } catch {
      // there already, or the move below fails the same way
    }
    try {
      fs.renameSync(path.join(dir, name), path.join(dir, INBOX_DELIVERED, name));
    } catch {
      // the events.jsonl record is the confirmation; the move only tidies the folder
    }
  },
};

/** The text of a user message pi put in the conversation (`message_end`, role `user`), else undefined. */
export function userMessageText(event: PiEvent): string | undefined {
  if (event.type !== "message_end" || !isRecord(event.message) || event.message.role !== "user") return undefined;
  const content = event.message.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return undefined;
  return content
    .filter(
      (block): block is { type: string; text: string } =>
        isRecord(block) && block.type === "text" && typeof block.text === "string",
    )
    .map((block) => block.text)
    .join("\n");
}

/** Confirms the deliveries of one run's inbox from the child's event stream. */
export class DeliveryLedger {
  /** The run's first user message is its task, never a live message. */
  private sawTask = false;
  private readonly messages = new Map<string, InboxMessageV1>();
  private readonly delivered = new Set<string>();

  constructor(
    readonly dir: string,
    private readonly files: InboxFiles = nodeInboxFiles,
  ) {}

  /** Makes the folder usable; the problem in words when it is not (the run goes on without live messages). */
  prepare(): string | undefined {
    try {
      this.files.prepare(this.dir);
      return undefined;
    } catch (err) {
      return `inbox ${this.dir} cannot be used: ${errorText(err)}`;
    }
  }

  /** The records an event confirms: a user message whose text is that of the oldest undelivered message. */
  observe(event: PiEvent): MessageDeliveredRecord[] {
    const text = userMessageText(event);
    if (text === undefined) return [];
    if (!this.sawTask) {
      this.sawTask = true;
      return [];
    }
    const name = this.find(text);
    if (name === undefined) return [];
    const message = this.messages.get(name) as InboxMessageV1;
    this.delivered.add(name);
    this.files.markDelivered(this.dir, name);
    return [{ type: "message_delivered", id: message.id, text: message.text }];
  }

  /** The first undelivered message in name (send) order with exactly this text. */
  private find(text: string): string | undefined {
    const names = this.files
      .list(this.dir)
      .filter((name) => isInboxMessageName(name) && !this.delivered.has(name))
      .sort();
    for (const name of names) {
      let message = this.messages.get(name);
      if (!message) {
        const raw = this.files.read(path.join(this.dir, name));
        message = raw === undefined ? undefined : parseInboxMessage(raw);
        if (!message) continue;
        this.messages.set(name, message);
      }
      if (message.text === text) return name;
    }
    return undefined;
  }
}
