/**
 * Pure bookkeeping of send_message to a child, live or queued. The agent's record is the
 * source of truth: every message stays in `inbox`, in send order, until the child's
 * conversation has it — a queued one until a turn's prompt carries it, a live one (written
 * into the running turn's inbox, `liveRun`) until that run confirms it (launcher.ts
 * `deliveredMessageIds`: its events.jsonl's `message_delivered`, or the child's session). A live message the run ended without reading is simply still there,
 * in its place, and goes with the next turn like a queued one: never lost, never twice. A
 * message sent while the turn is ending is still written to it (`live`): whether the run read
 * it is known once its wrapper has exited, and if not, the next turn carries it.
 */
import type { AgentRecordV1, AgentStatus, PendingPart } from "../../../contracts/tree.js";

/** What send_message tells the model about a message to a child. */
export interface MessageDelivery {
  /**
   * `live`: written to the running turn, which reads it before its next model request (or,
   * if that turn ends first, the next turn starts with it); `queued`: it goes with the next turn.
   */
  delivered: "live" | "queued";
  /** The id its envelope shows. */
  messageId: string;
  /** Messages sent to the child that are not in its conversation yet, this one included. */
  pendingMessages: number;
  /** Messages and follow-ups waiting for the child's next turn. */
  queuedMessages: number;
  status: AgentStatus;
}

/** The next message id of an agent (`msg-1`, `msg-2`, …), counted in its record. */
export function nextMessageId(record: AgentRecordV1): { id: string; seq: number } {
  const seq = (record.messageSeq ?? 0) + 1;
  record.messageSeq = seq;
  return { id: `msg-${seq}`, seq };
}

const isMessage = (part: PendingPart): boolean => part.kind === "MESSAGE";

/** Messages sent to the agent that are not in its conversation yet (queued, live, or left by an interrupted turn). */
export function pendingMessageCount(record: AgentRecordV1): number {
  return record.inbox.filter(isMessage).length + record.undelivered.filter(isMessage).length;
}

/** Parts waiting for the agent's next turn: everything in `inbox` except what is live in `runningRun`. */
export function queuedPartCount(record: AgentRecordV1, runningRun: string | undefined): number {
  return record.inbox.filter((part) => !(runningRun !== undefined && part.liveRun === runningRun)).length;
}

/** The runs that hold live messages the record still waits on. */
export function liveRuns(record: AgentRecordV1): string[] {
  return [
    ...new Set(
      record.inbox.flatMap((part) => (part.liveRun !== undefined && part.id !== undefined ? [part.liveRun] : [])),
    ),
  ];
}

/**
 * Drops from `inbox` the live messages `run` confirmed (`delivered`: ids from its
 * events.jsonl). Returns how many it dropped. The rest of that run's live messages stay,
 * in order, for the next turn.
 */
export function dropConfirmed(record: AgentRecordV1, run: string, delivered: ReadonlySet<string>): number {
  const before = record.inbox.length;
  record.inbox = record.inbox.filter(
    (part) => !(part.liveRun === run && part.id !== undefined && delivered.has(part.id)),
  );
  return before - record.inbox.length;
}
