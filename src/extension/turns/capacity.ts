/**
 * Turn slots: at most `limit` turns of one agent's direct children run here at once (the
 * per-parent limit of 3.2), and each runner other than local has a pool of its own with its
 * capacity (SPEC 5.5: the per-parent limit governs local turns only). The rest wait in order;
 * a queued turn starts as soon as its own pool has room, so a full runner never holds up a
 * local turn. Hand-rolled rather than p-limit because a queued turn must be removable
 * (interrupt_agent on a queued turn) and its position visible (queue_position); p-limit can
 * only clear its whole queue and exposes counts, not positions.
 */
import { runnerCapacity } from "../../contracts/runners.js";
import type { AgentRecordV1 } from "../../contracts/tree.js";

/** A pool of slots other than the local one: a runner's (`name` unique, `limit` its capacity). */
export interface SlotPool {
  name: string;
  limit: number;
}

/** A runner's own pool of turn slots (its capacity); none for a local agent. */
export const runnerPool = (record: Pick<AgentRecordV1, "runner">): SlotPool | undefined =>
  record.runner && { name: record.runner.name, limit: runnerCapacity(record.runner) };

const LOCAL_POOL = "local";

export class TurnSlots {
  /** Active keys → their pool's name. */
  private readonly active = new Map<string, string>();
  private readonly waiting: Array<{ key: string; start: () => void; pool: string }> = [];
  private readonly limits = new Map<string, number>();

  /** `onQueueChange` hears the queued keys, in order, after every change to the queue. */
  constructor(
    private readonly limit: number,
    private readonly onQueueChange: (queued: string[]) => void = () => undefined,
  ) {
    this.limits.set(LOCAL_POOL, limit);
  }

  private activeIn(pool: string): number {
    let count = 0;
    for (const name of this.active.values()) if (name === pool) count += 1;
    return count;
  }

  private hasRoom(pool: string): boolean {
    return this.activeIn(pool) < (this.limits.get(pool) ?? this.limit);
  }

  /** Runs `start` now if a slot of its pool (default: the local one) is free (true), else queues it (false). */
  request(key: string, start: () => void, pool?: SlotPool): boolean {
    const name = pool ? `runner:${pool.name}` : LOCAL_POOL;
    if (pool) this.limits.set(name, pool.limit);
    if (this.hasRoom(name) && !this.active.has(key)) {
      this.active.set(key, name);
      start();
      return true;
    }
    this.waiting.push({ key, start, pool: name });
    this.onQueueChange(this.queuedKeys());
    return false;
  }

  /**
   * Holds a slot for a turn that already runs (a re-attached one): counted like any active
   * turn, even past the limit, since its wrapper is at work whatever the count.
   */
  occupy(key: string, pool?: SlotPool): void {
    const name = pool ? `runner:${pool.name}` : LOCAL_POOL;
    if (pool) this.limits.set(name, pool.limit);
    this.active.set(key, name);
  }

  /** 1 = next to start; undefined when `key` is not queued. */
  position(key: string): number | undefined {
    const index = this.waiting.findIndex((entry) => entry.key === key);
    return index === -1 ? undefined : index + 1;
  }

  isActive(key: string): boolean {
    return this.active.has(key);
  }

  /** Takes a queued turn out of the queue; true when it was queued. */
  dequeue(key: string): boolean {
    const index = this.waiting.findIndex((entry) => entry.key === key);
    if (index === -1) return false;
    this.waiting.splice(index, 1);
    this.onQueueChange(this.queuedKeys());
    return true;
  }

  /** Frees `key`'s slot at once and starts the queued turns that now have room, in order. */
  release(key: string): void {
    if (!this.active.delete(key)) return;
    const queued = this.waiting.length;
    for (let index = 0; index < this.waiting.length; ) {
      const next = this.waiting[index]!;
      if (this.hasRoom(next.pool) && !this.active.has(next.key)) {
        this.waiting.splice(index, 1);
        this.active.set(next.key, next.pool);
        next.start();
      } else index += 1;
    }
    if (this.waiting.length !== queued) this.onQueueChange(this.queuedKeys());
  }

  get activeCount(): number {
    return this.active.size;
  }

  get queuedCount(): number {
    return this.waiting.length;
  }

  queuedKeys(): string[] {
    return this.waiting.map((entry) => entry.key);
  }
}
