/** A parent's mailbox: notices in arrival order, each consumed once, waiters woken. */
import type { Notice } from "../../contracts/tree.js";
import { type Clock, systemClock } from "../../lib/clock.js";

export class Mailbox {
  private readonly notices: Notice[] = [];
  private readonly waiters = new Set<() => void>();
  /** How many notices have ever arrived: a waiter names the count it has seen, and sleeps until a later one. */
  private arrived = 0;

  /** Records of notices taken, not yet known to be on disk (see `settled`). */
  private taking: Array<Promise<void>> = [];

  /**
   * `clock` times the waits (tests move a fake one). `ledger` hears every notice taken, so a
   * restarted parent never gets it again (deliveries.ts); `settled` waits for it.
   */
  constructor(
    private readonly clock: Clock = systemClock,
    private readonly ledger?: (notices: Notice[]) => Promise<void>,
  ) {}

  private track(notices: Notice[]): Notice[] {
    if (this.ledger && notices.length > 0) {
      const recorded = this.ledger(notices);
      // Whoever hands the notices on awaits `settled`; a take nobody settles raises nothing.
      recorded.catch(() => undefined);
      this.taking.push(recorded);
    }
    return notices;
  }

  /**
   * Resolves once every notice taken so far is recorded as taken: what takes notices (wait_agent,
   * a wake) awaits it before it hands them on. Rejects when the ledger did (an injected fault).
   */
  async settled(): Promise<void> {
    const taking = this.taking;
    this.taking = [];
    await Promise.all(taking);
  }

  push(notice: Notice): void {
    this.notices.push(notice);
    this.arrived++;
    for (const wake of [...this.waiters]) wake();
  }

  /** Notices arrived so far (taken or not); only grows. */
  get arrivals(): number {
    return this.arrived;
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
    return this.track(this.notices.splice(0, max));
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
    return this.track(taken);
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
