/**
 * Turn slots: at most `limit` turns of one agent's direct children run here at once (the
 * per-parent limit), and each runner other than local has a pool of its own with its
 * capacity (the per-parent limit governs local turns only). A runner's capacity holds
 * across the whole tree: besides this process's own count, a runner turn starts only once it has
 * taken one of the runner's slots in the tree directory (runner-slots.ts, the RunnerGate), which
 * every process of the tree shares. The rest wait in order; a queued turn starts as soon as its
 * own pool has room, so a full runner never holds up a local turn. Hand-rolled rather than
 * p-limit because a queued turn must be removable (interrupt_agent on a queued turn) and its
 * position visible (queue_position); p-limit can only clear its whole queue and exposes counts,
 * not positions.
 */
import { runnerCapacity } from "../../contracts/runners.js";
import type { AgentRecordV1 } from "../../contracts/tree.js";
import type { HeldSlot, RunnerGate, SlotPool } from "./runner-slots.js";

export type { SlotPool };

/** A runner's own pool of turn slots (its capacity); none for a local agent. */
export const runnerPool = (record: Pick<AgentRecordV1, "runner">): SlotPool | undefined =>
  record.runner && { name: record.runner.name, limit: runnerCapacity(record.runner) };

/** Why a queued runner turn waits: its runner is full across the tree. */
export interface RunnerWait {
  runner: string;
  inUse: number;
  capacity: number;
}

const LOCAL_POOL = "local";

interface Waiting {
  key: string;
  start: () => void;
  pool: string;
  runner?: SlotPool;
}

export class TurnSlots {
  /** Active keys → their pool's name. */
  private readonly active = new Map<string, string>();
  private readonly waiting: Waiting[] = [];
  private readonly limits = new Map<string, number>();
  /** The tree-wide runner slots active turns took (released with the turn). */
  private readonly held = new Map<string, HeldSlot>();
  /** Runners whose last take found them full across the tree. */
  private readonly full = new Set<string>();
  /** Runners watched while turns of theirs wait → the watch's stop. */
  private readonly watching = new Map<string, () => void>();
  private closed = false;

  /**
   * `onQueueChange` hears the queued keys, in order, after every change to the queue. `gate`:
   * the runners' tree-wide slots (none: each runner counted in this process only).
   */
  constructor(
    private readonly limit: number,
    private readonly onQueueChange: (queued: string[]) => void = () => undefined,
    private readonly gate?: RunnerGate,
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

  /** Takes the runner's tree-wide slot for `key` (always true for a local turn or without a gate). */
  private takeTreeSlot(key: string, runner: SlotPool | undefined): boolean {
    if (!runner || !this.gate) return true;
    const slot = this.gate.take(runner);
    if (!slot) {
      this.full.add(runner.name);
      return false;
    }
    this.full.delete(runner.name);
    this.held.set(key, slot);
    return true;
  }

  /** Runs `start` now if a slot of its pool (default: the local one) is free (true), else queues it (false). */
  request(key: string, start: () => void, pool?: SlotPool): boolean {
    const name = pool ? `runner:${pool.name}` : LOCAL_POOL;
    if (pool) this.limits.set(name, pool.limit);
    // Turns of its pool that wait for their runner go first: a slot that has just freed is theirs.
    const behind = this.waiting.some((entry) => entry.pool === name);
    if (!behind && this.hasRoom(name) && !this.active.has(key) && this.takeTreeSlot(key, pool)) {
      this.active.set(key, name);
      start();
      return true;
    }
    this.waiting.push({ key, start, pool: name, ...(pool && { runner: pool }) });
    this.onQueueChange(this.queuedKeys());
    if (behind) this.startWaiting();
    else this.updateWatches();
    return !this.waiting.some((entry) => entry.key === key) && this.active.has(key);
  }

  /**
   * Holds a slot for a turn that already runs (a re-attached one): counted like any active
   * turn, even past the limit, since its wrapper is at work whatever the count. Its runner's
   * tree-wide slot needs no taking: its wrapper has held it all along.
   */
  occupy(key: string, pool?: SlotPool): void {
    const name = pool ? `runner:${pool.name}` : LOCAL_POOL;
    if (pool) this.limits.set(name, pool.limit);
    this.active.set(key, name);
  }

  /** The turn's wrapper runs as `pid`: its runner slot is the wrapper's from now on. */
  handOver(key: string, pid: number): void {
    this.held.get(key)?.handOver(pid);
  }

  /** 1 = next to start; undefined when `key` is not queued. */
  position(key: string): number | undefined {
    const index = this.waiting.findIndex((entry) => entry.key === key);
    return index === -1 ? undefined : index + 1;
  }

  /** When `key` is queued because its runner is full across the tree: the runner and its slots in use. */
  runnerWait(key: string): RunnerWait | undefined {
    const entry = this.waiting.find((waiting) => waiting.key === key);
    const runner = entry?.runner;
    if (!runner || !this.gate || !this.full.has(runner.name)) return undefined;
    return { runner: runner.name, inUse: this.gate.inUse(runner), capacity: runner.limit };
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
    this.updateWatches();
    return true;
  }

  /** Frees `key`'s slot at once and starts the queued turns that now have room, in order. */
  release(key: string): void {
    if (!this.active.delete(key)) return;
    this.held.get(key)?.release();
    this.held.delete(key);
    this.startWaiting();
  }

  /** Starts the queued turns that have room now (a runner's slots may have freed elsewhere in the tree). */
  retry(): void {
    this.startWaiting();
  }

  private startWaiting(): void {
    const queued = this.waiting.length;
    // One full runner is read once per pass: the turns behind the first that found it full wait too.
    const fullNow = new Set<string>();
    for (let index = 0; index < this.waiting.length; ) {
      const next = this.waiting[index]!;
      const blocked = next.runner && fullNow.has(next.runner.name);
      if (
        !blocked &&
        this.hasRoom(next.pool) &&
        !this.active.has(next.key) &&
        this.takeTreeSlot(next.key, next.runner)
      ) {
        this.waiting.splice(index, 1);
        this.active.set(next.key, next.pool);
        next.start();
      } else {
        if (next.runner && this.full.has(next.runner.name)) fullNow.add(next.runner.name);
        index += 1;
      }
    }
    if (this.waiting.length !== queued) this.onQueueChange(this.queuedKeys());
    this.updateWatches();
  }

  /** Watches each runner that turns wait for, and no other. */
  private updateWatches(): void {
    if (!this.gate || this.closed) return;
    const wanted = new Map<string, SlotPool>();
    for (const entry of this.waiting) if (entry.runner) wanted.set(entry.runner.name, entry.runner);
    for (const [name, stop] of this.watching)
      if (!wanted.has(name)) {
        stop();
        this.watching.delete(name);
      }
    for (const [name, runner] of wanted)
      if (!this.watching.has(name))
        this.watching.set(
          name,
          this.gate.watch(runner, () => this.retry()),
        );
  }

  /** Stops watching runners (the process leaves the tree): queued turns stay queued. */
  close(): void {
    for (const stop of this.watching.values()) stop();
    this.watching.clear();
    this.closed = true;
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
