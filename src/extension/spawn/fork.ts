/**
 * A child's starting history from its parent's conversation (spawn_agent's `fork_turns`).
 *
 * The input is the parent's current branch as pi's `SessionManager.getBranch()` returns it
 * (root first). Kept: the `user`, `assistant` and `toolResult` messages of `message` entries,
 * which every provider understands. Left out: `bashExecution` messages (the user's own `!`
 * commands in the parent's terminal), `custom` messages (extension notices meant for the
 * parent), pi 1.x's `system` messages (its prompt, which the child builds for itself),
 * assistant messages that failed or were aborted (pi never sends them to a provider again),
 * and every non-message entry (model/thinking changes, labels, extension records), except two
 * that pi honours when it builds its own context: the latest compaction (its summary becomes
 * the first user message and what it summarised is left out, so a fork is never larger than
 * the parent's context) and pi 1.x's `context_edit` (it hides an entry, e.g. a retried failed
 * attempt, or replaces its content).
 */
import { randomBytes, randomUUID } from "node:crypto";
import { writeFileAtomic } from "../../lib/atomic-file.js";
import { systemClock } from "../../lib/clock.js";
import { isRecord } from "../../lib/values.js";
import { capText, dropThinking, stripSignatures } from "../turns/delivery/bounds.js";

/** How much of the parent's conversation a child starts with (`fork_turns`: `none`, `all` or N recent turns). */
export type ForkSpec = { kind: "none" } | { kind: "all" } | { kind: "recent"; turns: number };

type Json = Record<string, unknown>;

const KEPT_ROLES = new Set(["user", "assistant", "toolResult"]);
/** pi's own wording for a compaction summary (messages.js, COMPACTION_SUMMARY_PREFIX/SUFFIX). */
const COMPACTION_PREFIX =
  "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
const COMPACTION_SUFFIX = "\n</summary>";
const TRANSCRIPT_TOOL_CHARS = 2000;

function roleOf(message: unknown): string | undefined {
  return isRecord(message) && typeof message.role === "string" ? message.role : undefined;
}

function blocksOf(message: unknown): Json[] {
  return isRecord(message) && Array.isArray(message.content) ? message.content.filter(isRecord) : [];
}

function toolCallIds(message: unknown): string[] {
  return blocksOf(message)
    .filter((block) => block.type === "toolCall" && typeof block.id === "string")
    .map((block) => block.id as string);
}

/** The messages pi would put in the parent's context, in order, as far as a child can use them. */
function collectMessages(entries: readonly unknown[], now: number): unknown[] {
  const { start, summary } = latestCompaction(entries);
  const messages: unknown[] = [];
  if (summary && typeof summary.summary === "string") messages.push(summaryMessage(summary, summary.summary, now));
  const kept = entries.slice(start);
  const edits = contextEdits(kept);
  for (const entry of kept) {
    const message = keptMessage(entry, edits);
    if (message !== undefined) messages.push(message);
  }
  return messages;
}

/**
 * The latest compaction entry, and where the entries it did not summarise start (every
 * entry when there is none).
 */
function latestCompaction(entries: readonly unknown[]): { start: number; summary?: Json } {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i];
    if (isRecord(entry) && entry.type === "compaction") {
      const firstKept = entries.findIndex((e) => isRecord(e) && e.id === entry.firstKeptEntryId);
      // Kept entries sit before the compaction entry, and the rest follows it.
      return { start: firstKept >= 0 && firstKept < i ? firstKept : i + 1, summary: entry };
    }
  }
  return { start: 0 };
}

/** A compaction's summary as pi hands it to the model: the first user message. */
function summaryMessage(compaction: Json, summary: string, now: number): Json {
  const timestamp = typeof compaction.timestamp === "string" ? Date.parse(compaction.timestamp) : now;
  return {
    role: "user",
    content: [{ type: "text", text: COMPACTION_PREFIX + summary + COMPACTION_SUFFIX }],
    timestamp: Number.isFinite(timestamp) ? timestamp : now,
  };
}

/** The message an entry contributes, as its latest `context_edit` leaves it; undefined for none. */
function keptMessage(entry: unknown, edits: Map<string, Json>): unknown {
  if (!isRecord(entry) || entry.type !== "message") return undefined;
  const role = roleOf(entry.message);
  if (!role || !KEPT_ROLES.has(role) || isFailedAttempt(entry.message)) return undefined;
  const edit = typeof entry.id === "string" ? edits.get(entry.id) : undefined;
  if (!edit) return entry.message;
  // A null replacement hides the entry (pi 1.x: a retried failed attempt).
  return isRecord(edit.replacement) ? replaceContent(entry.message as Json, edit.replacement) : undefined;
}

/** pi 1.x's `context_edit` entries by the entry they change; the latest one wins, as in pi's own projection. */
function contextEdits(entries: readonly unknown[]): Map<string, Json> {
  const edits = new Map<string, Json>();
  for (const entry of entries) {
    if (isRecord(entry) && entry.type === "context_edit" && typeof entry.targetId === "string")
      edits.set(entry.targetId, entry);
  }
  return edits;
}

/** An assistant message that failed or was aborted: no provider is sent it again (pi skips it on both lines). */
function isFailedAttempt(message: unknown): boolean {
  return (
    roleOf(message) === "assistant" &&
    isRecord(message) &&
    (message.stopReason === "error" || message.stopReason === "aborted")
  );
}

/** pi's replacement of an entry's content; a string stands for one text block in assistant and tool results. */
function replaceContent(message: Json, replacement: Json): Json {
  const content = replacement.content;
  const asBlocks = (message.role === "assistant" || message.role === "toolResult") && typeof content === "string";
  return { ...message, content: asBlocks ? [{ type: "text", text: content }] : content };
}

/**
 * Drops a trailing assistant message whose tool calls are not all answered, with the tool
 * results after it: the parent's own pending `spawn_agent` call, or any call a child could
 * never answer. pi cannot continue a session that ends that way.
 */
function dropUnansweredTail(messages: unknown[]): unknown[] {
  const out = [...messages];
  for (;;) {
    let last = out.length - 1;
    while (last >= 0 && roleOf(out[last]) === "toolResult") last--;
    if (last < 0 || roleOf(out[last]) !== "assistant") return out;
    const answered = new Set(out.slice(last + 1).map((m) => (isRecord(m) ? m.toolCallId : undefined)));
    const calls = toolCallIds(out[last]);
    if (calls.length === 0 || calls.every((id) => answered.has(id))) return out;
    out.length = last;
  }
}

/** Turns: each starts at a user message; anything before the first user message joins turn one. */
export function splitTurns(messages: readonly unknown[]): unknown[][] {
  const turns: unknown[][] = [];
  for (const message of messages) {
    const current = turns[turns.length - 1];
    if (roleOf(message) === "user" || !current) turns.push([message]);
    else current.push(message);
  }
  return turns;
}

function adaptForChild(message: unknown, childProvider: string): unknown | undefined {
  let copy = stripSignatures(message);
  if (roleOf(copy) !== "assistant") return copy;
  const provider = isRecord(copy) ? copy.provider : undefined;
  if (provider !== childProvider) copy = dropThinking(copy);
  // A message that held only thinking is empty now, and providers refuse empty turns.
  return isRecord(copy) && Array.isArray(copy.content) && copy.content.length === 0 ? undefined : copy;
}

/** `opts.now`: the time a compaction summary without its own takes (default: now on the system clock). */
export function forkMessages(
  entries: readonly unknown[],
  fork: ForkSpec,
  opts: { childProvider: string; now?: number },
): unknown[] {
  if (fork.kind === "none") return [];
  const turns = splitTurns(dropUnansweredTail(collectMessages(entries, opts.now ?? systemClock.now())));
  const chosen = fork.kind === "all" ? turns : turns.slice(Math.max(0, turns.length - Math.max(0, fork.turns)));
  const adapted = chosen.flat().flatMap((message) => {
    const copy = adaptForChild(message, opts.childProvider);
    return copy === undefined ? [] : [copy];
  });
  return dropUnansweredTail(adapted);
}

export function hasAssistant(messages: readonly unknown[]): boolean {
  return messages.some((message) => roleOf(message) === "assistant");
}

function newEntryId(taken: Set<string>): string {
  for (;;) {
    const id = randomBytes(4).toString("hex");
    if (!taken.has(id)) {
      taken.add(id);
      return id;
    }
  }
}

/**
 * Writes a pi session file (format version 3) holding `messages`, so `pi --session <file>`
 * continues that conversation. It must hold an assistant message: pi treats a session without
 * one as never written and, on its first save, appends the header and all entries again.
 */
export async function writeForkSession(
  file: string,
  messages: unknown[],
  opts: { cwd: string; parentSession?: string | undefined; now?: number },
): Promise<void> {
  if (!hasAssistant(messages)) {
    throw new Error("a fork session needs an assistant message; deliver the history with renderForkTranscript instead");
  }
  const now = new Date(opts.now ?? systemClock.now()).toISOString();
  const header: Json = { type: "session", version: 3, id: randomUUID(), timestamp: now, cwd: opts.cwd };
  if (opts.parentSession !== undefined) header.parentSession = opts.parentSession;
  const lines = [JSON.stringify(header)];
  const taken = new Set<string>();
  let parentId: string | null = null;
  for (const message of messages) {
    const id = newEntryId(taken);
    lines.push(JSON.stringify({ type: "message", id, parentId, timestamp: now, message }));
    parentId = id;
  }
  await writeFileAtomic(file, `${lines.join("\n")}\n`);
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter(isRecord)
    .map((block) =>
      block.type === "text" && typeof block.text === "string" ? block.text : block.type === "image" ? "[image]" : "",
    )
    .filter((text) => text !== "")
    .join("\n");
}

/**
 * The forked messages as plain text, for a child whose history pi cannot continue (no
 * assistant message): it goes at the head of the child's first prompt. Thinking is left out;
 * tool calls and results are capped so a big file read does not crowd out the task.
 */
export function renderForkTranscript(messages: readonly unknown[]): string {
  // A tool result follows its call directly; a new speaker gets a blank line before it.
  const parts: string[] = [];
  const add = (text: string, sep: string): void => {
    parts.push(parts.length === 0 ? text : sep + text);
  };
  for (const message of messages) {
    if (!isRecord(message)) continue;
    if (message.role === "user") {
      add(`[user]\n${textOf(message.content)}`, "\n\n");
    } else if (message.role === "assistant") {
      const lines = ["[assistant]"];
      for (const block of blocksOf(message)) {
        if (block.type === "text" && typeof block.text === "string") lines.push(block.text);
        else if (block.type === "toolCall") {
          const args = capText(JSON.stringify(block.arguments ?? {}), TRANSCRIPT_TOOL_CHARS);
          lines.push(`[tool call ${String(block.name)}] ${args}`);
        }
      }
      add(lines.join("\n"), "\n\n");
    } else if (message.role === "toolResult") {
      const label = message.isError === true ? "tool error" : "tool result";
      add(`[${label} ${String(message.toolName)}] ${capText(textOf(message.content), TRANSCRIPT_TOOL_CHARS)}`, "\n");
    }
  }
  return parts.join("");
}
