/** A parent's mailbox: notices in arrival order, each consumed once, waiters woken. */
import type { Notice } from "../../../contracts/notice.js";
import { type Clock, systemClock } from "../../../lib/clock.js";

export class Mailbox {
  private readonly notices: Notice[] = [];
  private readonly waiters = new Set<() => void>();
  /** How many notices have ever arrived: a waiter names the count it has seen, and sleeps until a later one. */
  private arrived = 0;

  /**
   * `clock` times the waits (tests move a fake one). A notice taken here is not yet read: it
   * is recorded as taken once pi holds the message that carries it (deliveries.ts).
   */
  constructor(private readonly clock: Clock = systemClock) {}

  push(notice: Notice): void {
    this.notices.push(notice);
    this.arrived++;
    for (const wake of [...this.waiters]) wake();
  }

  /** Notices arrived so far (taken or not); only grows. */
  get arrivals(): number {
    return this.arrived;
  }

  /**
   * Notices taken whose hand-over failed: first again, in their order. They count as arrivals,
   * so a wait that had already looked past them sees them again.
   */
  putBack(notices: readonly Notice[]): void {
    this.notices.unshift(...notices);
    this.arrived += notices.length;
    for (const wake of [...this.waiters]) wake();
  }

  get pending(): number {
    return this.notices.length;
  }

  /** The notices waiting to be taken, oldest first (a copy). */
  list(): Notice[] {
    return [...this.notices];
  }

  /** Whether this notice is still waiting to be taken. */
  holds(notice: Notice): boolean {
    return this.notices.includes(notice);
  }

  /** Takes up to `max` notices, oldest first. */
  take(max: number): Notice[] {
    return this.notices.splice(0, max);
  }

  /** The agents whose notices wait to be taken. */
  senders(): Set<string> {
    return new Set(this.notices.map((notice) => notice.agent_name));
  }

  /**
   * Takes up to `max` notices of these agents, oldest first; the notices of other agents stay,
   * in their order, for a later wait.
   */
  takeFrom(agents: ReadonlySet<string>, max: number): Notice[] {
    const taken: Notice[] = [];
    for (let i = 0; i < this.notices.length && taken.length < max; ) {
      if (agents.has(this.notices[i]!.agent_name)) taken.push(...this.notices.splice(i, 1));
      else i++;
    }
    return taken;
  }

  /**
   * Resolves when a notice arrives, `ms` pass, or `signal` aborts; never holds the process open after.
   * With `seenArrivals` (the `arrivals` the caller has already looked at), notices that were
   * pending then do not count: a wait that leaves some notices pending on purpose (an all-wait
   * whose group is not done) sleeps until a new one instead of waking at once, over and over.
   * Without it, any pending notice resolves it at once.
   */
  waitForNotice(ms: number, signal?: AbortSignal, seenArrivals?: number): Promise<void> {
    const unseen = seenArrivals === undefined ? this.notices.length > 0 : this.arrived > seenArrivals;
    if (unseen || ms <= 0 || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.clock.clearTimeout(timer);
        this.waiters.delete(done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = this.clock.setTimeout(done, ms);
      this.waiters.add(done);
      signal?.addEventListener("abort", done, { once: true });
    });
  }

  /** Wakes every waiter: at shutdown (nothing may keep pi alive), and when what they wait on changed. */
  wakeAll(): void {
    for (const wake of [...this.waiters]) wake();
  }
}
