/**
 * The root's spare pi (contracts/spare.ts): one spare wrapper while the tree is active, started
 * for the shape of the latest turn (its meta.json), taken by the next turn that fits it, ended
 * once no turn has run for SPARE_IDLE_MS, and at session shutdown. Pure bookkeeping around an
 * injected launcher and clock (spare-launch.ts starts the real one).
 */
import type { MetaV1 } from "../../../contracts/meta.js";
import { spareRefusal } from "../../../contracts/spare.js";
import { type Clock, systemClock, type TimerHandle } from "../../../lib/clock.js";

/** How long a tree with no running turn keeps its spare: a follow-up within it starts at once, then the memory is given back. */
export const SPARE_IDLE_MS = 30_000;
/**
 * How long the session's end waits for the spare it ended (its pi ending, its temp files
 * removed) before it kills the spare's process group: a root that has exited leaves nothing of
 * its tree running, however slowly the spare's pi ends.
 */
export const SPARE_END_WAIT_MS = 3_000;

/** One spare wrapper as the root sees it. */
export interface SpareProcess<Handle = unknown> {
  readonly pid: number | undefined;
  /** The wrapper's process, which runs the turn it is handed (the launcher watches it as any turn's). */
  readonly handle: Handle;
  /** Whether it still runs, waiting for a turn. */
  alive(): boolean;
  /** Hands it the turn whose meta.json is at `metaPath`; false when it could not be told (it is gone). */
  take(metaPath: string): boolean;
  /** Ends it (its stdin closed: it ends its pi and exits). */
  end(): void;
  /** Resolves once its process has exited (or could not start). */
  readonly exited: Promise<void>;
  /** Kills its process group (it did not end in time). */
  kill(): void;
}

/** Starts a spare wrapper for `template` (throws when it cannot). */
export type SpareLauncher<Handle = unknown> = (template: MetaV1) => SpareProcess<Handle>;

export class SpareKeeper<Handle = unknown> {
  private spare: { template: MetaV1; process: SpareProcess<Handle> } | undefined;
  private running = 0;
  private idleTimer: TimerHandle | undefined;
  private closed = false;
  /** Spares started, handed a turn, and ended unused (the tests and the bench read them). */
  readonly counts = { started: 0, taken: 0, ended: 0 };

  constructor(
    private readonly launch: SpareLauncher<Handle>,
    private readonly clock: Clock = systemClock,
    private readonly idleMs = SPARE_IDLE_MS,
  ) {}

  /** The spare wrapper, handed the turn `meta` (written at `metaPath`), or undefined: none, or one it does not fit. */
  handTo(meta: MetaV1, metaPath: string): SpareProcess<Handle> | undefined {
    const current = this.spare;
    if (!current?.process.alive() || spareRefusal(current.template, meta) !== undefined) return undefined;
    this.spare = undefined;
    if (!current.process.take(metaPath)) {
      this.endProcess(current.process);
      return undefined;
    }
    this.counts.taken += 1;
    return current.process;
  }

  /** A turn started (from its spare or not): the tree is active, and a spare for its shape is ready for the next. */
  turnStarted(meta: MetaV1): void {
    this.running += 1;
    this.cancelIdle();
    if (this.closed) return;
    const current = this.spare;
    if (current?.process.alive() && spareRefusal(current.template, meta) === undefined) return;
    // A turn no spare could take (another runner, a checkout being written) leaves the spare as it is.
    if (spareRefusal(meta, meta) !== undefined) return;
    this.endSpare();
    try {
      this.spare = { template: meta, process: this.launch(meta) };
      this.counts.started += 1;
    } catch {
      // No spare: the next turn starts its own pi, as without one.
    }
  }

  /** A turn ended: with none left running, the spare goes after SPARE_IDLE_MS. */
  turnEnded(): void {
    this.running = Math.max(0, this.running - 1);
    if (this.running > 0 || this.closed || !this.spare) return;
    this.cancelIdle();
    this.idleTimer = this.clock.setTimeout(
      () => {
        this.idleTimer = undefined;
        if (this.running === 0) this.endSpare();
      },
      this.idleMs,
      { unref: true },
    );
  }

  /** Whether a spare waits now. */
  get waiting(): boolean {
    return this.spare?.process.alive() === true;
  }

  /**
   * Session shutdown: the spare ends, and none starts again. Resolves once it has exited, or
   * SPARE_END_WAIT_MS later with its process group killed.
   */
  close(): Promise<void> {
    this.closed = true;
    this.cancelIdle();
    const current = this.spare;
    this.spare = undefined;
    if (!current) return Promise.resolve();
    this.endProcess(current.process);
    const { process } = current;
    return new Promise((resolve) => {
      // Not unref'd: the spare's process and pipe are (they never keep pi running), so without
      // this timer Node would find nothing left to wait for and exit with the spare still there.
      const timer = this.clock.setTimeout(() => {
        process.kill();
        resolve();
      }, SPARE_END_WAIT_MS);
      void process.exited.then(() => {
        this.clock.clearTimeout(timer);
        resolve();
      });
    });
  }

  private endSpare(): void {
    const current = this.spare;
    this.spare = undefined;
    if (current) this.endProcess(current.process);
  }

  private endProcess(process: SpareProcess<Handle>): void {
    this.counts.ended += 1;
    process.end();
  }

  private cancelIdle(): void {
    if (this.idleTimer === undefined) return;
    this.clock.clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }
}
