/**
 * An interactive root that is idle when a child's turn ends (or a child writes to it) is
 * woken with the notice: the notices go to its model in one message that starts a turn, so
 * the model reads them and goes on, as if its wait_agent had returned them. They are taken
 * out of the mailbox as they are sent, so no wait_agent returns them again, and at most
 * LIMITS.noticesPerWait go in one message (the next idle moment sends the rest). They count
 * as read only once pi holds the message (notice-hold.ts): a message pi refused, or whose
 * turn never started while the root stayed idle, gives its notices back to the mailbox, and
 * they are offered again.
 *
 * Only notices that end or change a child's work wake the root; `interrupted` and
 * `shutdown` follow an order of the root's own (its model or the person), so they wait for
 * the next wait_agent. With PI_SUBAGENTS_WAKE=0 nothing wakes: notices are only shown.
 * The clock is injected (tests move a fake one) and its timers never hold pi's event loop.
 */
import { ENV } from "../../contracts/env.js";
import type { Notice } from "../../contracts/notice.js";
import { LIMITS } from "../../contracts/tree.js";
import { type Clock, systemClock, type TimerHandle } from "../../lib/clock.js";
import type { Mailbox } from "../turns/delivery/mailbox.js";

/** Notices that arrive together (three children ending in one second) wake the root once. */
export const WAKE_BATCH_MS = 250;
/** A wake whose turn has not started after this long is given up on, so the next one can go. */
const TURN_START_WAIT_MS = 5000;

export const WAKE_MESSAGE_TYPE = "pi-subagents-notices";

/** PI_SUBAGENTS_WAKE: on unless set to `0`, `false`, `no` or `off`. */
export function wakeEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  const value = env[ENV.wake]?.trim().toLowerCase();
  return !(value === "0" || value === "false" || value === "no" || value === "off");
}

/** Whether a notice wakes an idle root: a turn that ended by itself, a child's message, or its question (it waits for an answer). */
export function wakesTheRoot(notice: Pick<Notice, "type">): boolean {
  return ["completed", "errored", "aborted", "message", "question"].includes(notice.type);
}

/** What the woken model reads: the notices as wait_agent would return them. */
export function wakeText(notices: Notice[], pending: number): string {
  return [
    "While you were idle, your child agents sent these notices (the objects wait_agent returns; it will not return them again):",
    JSON.stringify({ notices, pending }),
  ].join("\n");
}

export interface WakeDeps {
  mailbox: Pick<Mailbox, "holds" | "take" | "pending" | "putBack">;
  isIdle(): boolean;
  /** Starts the root's turn with these notices (pi.sendMessage with triggerTurn); false when pi refused it. */
  send(notices: Notice[], pending: number): boolean;
  /** Whether a message carrying this notice reached pi (notice-hold.ts). */
  reachedPi(notice: Notice): boolean;
  /** Times the batching and the wait for a woken turn; the system's clock when not given. */
  clock?: Clock;
}

export class IdleWake {
  private readonly waiting = new Set<Notice>();
  private readonly clock: Clock;
  /** The batch timer, while notices that arrived together wait for it. */
  private batch: TimerHandle | undefined;
  /** When the last wake was sent, until its turn is seen to start. */
  private sentAt: number | undefined;
  /** The notices of the last wake, until its turn is seen to start. */
  private sent: Notice[] = [];

  constructor(private readonly deps: WakeDeps) {
    this.clock = deps.clock ?? systemClock;
  }

  /** Every notice that reaches the mailbox comes here. */
  offer(notice: Notice): void {
    if (!wakesTheRoot(notice)) return;
    this.waiting.add(notice);
    if (this.batch !== undefined) return;
    this.batch = this.clock.setTimeout(
      () => {
        this.batch = undefined;
        this.tick();
      },
      WAKE_BATCH_MS,
      { unref: true },
    );
  }

  /** Sends a wake when the root is idle and a waking notice is still in the mailbox. */
  tick(): void {
    // A wait_agent may have taken them meanwhile: those need no wake.
    for (const notice of this.waiting) if (!this.deps.mailbox.holds(notice)) this.waiting.delete(notice);
    if (this.sentAt !== undefined) {
      if (!this.deps.isIdle()) this.sentAt = undefined;
      else if (this.clock.now() - this.sentAt >= TURN_START_WAIT_MS) {
        this.sentAt = undefined;
        // Idle all along and pi never took the message: its delivery failed.
        this.giveBack(this.sent.filter((notice) => !this.deps.reachedPi(notice)));
      }
      if (this.sentAt === undefined) this.sent = [];
      return;
    }
    if (this.waiting.size === 0 || !this.deps.isIdle()) return;
    const notices = this.deps.mailbox.take(LIMITS.noticesPerWait);
    for (const notice of notices) this.waiting.delete(notice);
    if (!this.deps.send(notices, this.deps.mailbox.pending)) {
      this.giveBack(notices);
      return;
    }
    this.sentAt = this.clock.now();
    this.sent = notices;
  }

  /** Notices whose wake failed: back in the mailbox, first, and offered again. */
  private giveBack(notices: Notice[]): void {
    if (notices.length === 0) return;
    this.deps.mailbox.putBack(notices);
    for (const notice of notices) this.offer(notice);
  }

  stop(): void {
    if (this.batch !== undefined) this.clock.clearTimeout(this.batch);
    this.batch = undefined;
    this.waiting.clear();
    this.sent = [];
  }
}
