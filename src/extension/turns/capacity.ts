/**
 * The per-parent turn limit: at most `limit` turns of one agent's direct children run at
 * once; the rest wait in order. Hand-rolled rather than p-limit because a queued turn must
 * be removable (interrupt_agent on a queued turn) and its position visible (queue_position);
 * p-limit can only clear its whole queue and exposes counts, not positions.
 */
export class TurnSlots {
  private readonly active = new Set<string>();
  private readonly waiting: Array<{ key: string; start: () => void }> = [];

  /** `onQueueChange` hears the queued keys, in order, after every change to the queue. */
  constructor(
    private readonly limit: number,
    private readonly onQueueChange: (queued: string[]) => void = () => undefined,
  ) {}

  /** Runs `start` now if a slot is free (true), else queues it (false). */
  request(key: string, start: () => void): boolean {
    if (this.active.size < this.limit && !this.active.has(key)) {
      this.active.add(key);
      start();
      return true;
    }
    this.waiting.push({ key, start });
    this.onQueueChange(this.queuedKeys());
    return false;
  }

  /**
   * Holds a slot for a turn that already runs (a re-attached one): counted like any active
   * turn, even past the limit, since its wrapper is at work whatever the count.
   */
  occupy(key: string): void {
    this.active.add(key);
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

  /** Frees `key`'s slot at once and starts the next queued turn. */
  release(key: string): void {
    if (!this.active.delete(key)) return;
    const queued = this.waiting.length;
    while (this.active.size < this.limit && this.waiting.length > 0) {
      const next = this.waiting.shift()!;
      this.active.add(next.key);
      next.start();
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
