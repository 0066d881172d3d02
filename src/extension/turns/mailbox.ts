/** A parent's mailbox: notices in arrival order, each consumed once, waiters woken. */
import type { Notice } from "../../contracts/tree.js";
import { type Clock, systemClock } from "../../lib/clock.js";

export class Mailbox {
  private readonly notices: Notice[] = [];
  private readonly waiters = new Set<() => void>();

  /**
   * `clock` times the waits (tests move a fake one). A notice taken here is not yet read: it
   * is recorded as taken once pi holds the message that carries it (deliveries.ts).
   */
  constructor(private readonly clock: Clock = systemClock) {}

  push(notice: Notice): void {
    this.notices.push(notice);
    for (const wake of [...this.waiters]) wake();
  }

  /** Notices taken whose hand-over failed: first again, in their order. */
  putBack(notices: readonly Notice[]): void {
    this.notices.unshift(...notices);
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

  /** Resolves when a notice arrives, `ms` pass, or `signal` aborts; never holds the process open after. */
  waitForNotice(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.notices.length > 0 || ms <= 0 || signal?.aborted) return Promise.resolve();
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

  /** Wakes every waiter (shutdown: nothing may keep pi alive). */
  wakeAll(): void {
    for (const wake of [...this.waiters]) wake();
  }
}
