/**
 * What a parent asks of a direct child between turns: a follow-up (followup_task) and a
 * message (send_message). Both are in the child's record before anything else happens, so a
 * crash of either process loses neither.
 */
import type { PendingPart } from "../../../contracts/tree.js";
import { type Clock, isoNow } from "../../../lib/clock.js";
import { type ChildState, type FollowupResult, runningTurn } from "../child-state.js";
import { followupWaits, type TurnKind } from "../lifecycle.js";
import type { TurnOperations } from "../wrapper/launcher.js";
import { partEnvelope } from "./envelope.js";
import { type MessageDelivery, nextMessageId, pendingMessageCount, queuedPartCount } from "./live-messages.js";

/** What these requests need of the runtime (TreeRuntime is one). */
export interface RequestContext {
  readonly self: string;
  readonly turns: TurnOperations;
  readonly clock: Clock;
  persist(state: ChildState): Promise<void>;
  requestTurn(state: ChildState, kind: TurnKind): Promise<void>;
  queuePosition(agentPath: string): number | undefined;
}

/**
 * followup_task: a new turn in the child's own conversation. Behind a running or queued
 * turn it waits for that turn's end; else it starts now (or queues for a slot). `admit`
 * runs once the child is known to take follow-ups, before anything changes, and refuses by
 * throwing (the tree's budget).
 */
export async function followupChild(
  ctx: RequestContext,
  state: ChildState,
  text: string,
  admit?: () => Promise<void>,
): Promise<FollowupResult> {
  const { record } = state;
  if (record.status === "shutdown") throw new Error(`${record.path} is shut down; it takes no follow-up`);
  await admit?.();
  record.inbox.push({ kind: "FOLLOWUP_TASK", from: ctx.self, text, sentAt: isoNow(ctx.clock) });
  const busy = followupWaits(state.phase);
  if (busy) record.followupQueued = true;
  await ctx.persist(state);
  if (!busy) await ctx.requestTurn(state, "followup");
  const queuePosition = ctx.queuePosition(record.path);
  return {
    status: record.status,
    queuedBehindRunningTurn: busy,
    ...(queuePosition !== undefined && { queuePosition }),
  };
}

/**
 * send_message to a child: live into a running turn's inbox, else queued for the next turn.
 * It is in the record first and leaves it only once the child's conversation has it
 * (finishTurn, restore), so a crash of either process loses nothing (live-messages.ts).
 */
export async function messageChild(ctx: RequestContext, state: ChildState, text: string): Promise<MessageDelivery> {
  const { record } = state;
  if (record.status === "shutdown") throw new Error(`${record.path} is shut down; it takes no messages`);
  const { id, seq } = nextMessageId(record);
  // A turn being stopped reads nothing more: the message waits for the next one.
  const running = state.phase.name === "running" ? state.phase.turn : undefined;
  const part: PendingPart = {
    kind: "MESSAGE",
    from: ctx.self,
    text,
    sentAt: isoNow(ctx.clock),
    id,
    ...(running && { liveRun: running.runName }),
  };
  record.inbox.push(part);
  await ctx.persist(state);
  let delivered: MessageDelivery["delivered"] = "queued";
  if (running) {
    try {
      await ctx.turns.postLive(running.runDir, seq, { id, text: partEnvelope(part, record.taskName) });
      delivered = "live";
    } catch {
      // The run's inbox cannot be written: the message waits for the next turn instead.
      delete part.liveRun;
      await ctx.persist(state);
    }
  }
  return {
    delivered,
    messageId: id,
    pendingMessages: pendingMessageCount(record),
    queuedMessages: queuedPartCount(record, runningTurn(state)?.runName),
    status: record.status,
  };
}
