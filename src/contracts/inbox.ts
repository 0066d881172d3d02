/**
 * A run's live-message inbox (meta.json `inboxPath`): a folder of messages to hand to the
 * running child, one JSON file per message, `{"id": "...", "text": "..."}`.
 *
 * - Whoever sends writes each file whole (temp file + rename into place; the temp file's name
 *   starts with `.` or does not end in `.json`, so it is never read half-written), with a
 *   name that sorts in send order (`inboxFileName`).
 * - The child's task extension hands each message to pi as a steering message, in name
 *   order, once per process.
 * - The wrapper marks a message delivered only when pi shows it in the child's conversation
 *   (a user message with exactly its text): it records `message_delivered` in events.jsonl
 *   and moves the file into `delivered/`. A file still in the folder when the run ends was
 *   not delivered: the sender gives it again some other way (the tree: the next turn).
 */

/** One message file. */
export interface InboxMessageV1 {
  /** The sender's id for it (events.jsonl's `message_delivered` names it). */
  id: string;
  /** What the child receives, verbatim. */
  text: string;
}

/**
 * The wrapper's wrap-up message (a per-turn limit reached): it sorts after the numbered
 * messages, so what the parent sent first is read first. Unlike a parent's message it is
 * handed to pi only while the model request under way has ended in a tool call: then pi asks
 * the model again and the wrap-up is in that request. Handed at any other moment it could
 * arrive after the child's final answer and start one more model request of its own.
 */
export const WRAP_UP_FILE = "limit-wrap-up.json";

/** The subfolder delivered messages are moved to. */
export const INBOX_DELIVERED = "delivered";

/** A message file name: `00000001.json`, `00000002.json`, … (sorts in send order up to 10⁸ messages). */
export function inboxFileName(seq: number): string {
  return `${String(seq).padStart(8, "0")}.json`;
}

/** Whether a name in the folder is a message (not a temp file, not `delivered/`). */
export function isInboxMessageName(name: string): boolean {
  return name.endsWith(".json") && !name.startsWith(".");
}

/** A parsed message file, or undefined when it is not one (a message needs a non-empty id and a string text). */
export function parseInboxMessage(text: string): InboxMessageV1 | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const { id, text: body } = value as Record<string, unknown>;
  if (typeof id !== "string" || id === "" || typeof body !== "string") return undefined;
  return { id, text: body };
}
