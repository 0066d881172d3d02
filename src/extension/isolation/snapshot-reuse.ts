/**
 * The last working-state snapshot of a repository, kept for its next one (repository.ts,
 * `snapshotWorkingState`'s `reuse`). A fan-out snapshots the same working tree once per
 * spawn, one spawn after another: with the last one kept, a snapshot after the first asks
 * git only for HEAD, `add --all` and `write-tree` (three processes instead of six, or seven
 * for a dirty tree), and the same tree on the same HEAD is the same commit.
 *
 * Nothing the snapshot's tree depends on is assumed unchanged: each snapshot copies the real
 * index afresh and reads the whole working tree (`add --all`), as one without reuse does.
 * What is kept is what the tree does not depend on: the index's path, the committer identity
 * (read once per kept snapshot), HEAD's tree while HEAD is the same, and the folder.
 *
 * The folder goes when `idleMs` pass without a snapshot, on `release`, or when the process
 * exits.
 */
import fs from "node:fs";
import { type Clock, systemClock, type TimerHandle } from "../../lib/clock.js";

/** A snapshot's state, with the folder of its temporary index. */
export interface KeptSnapshot {
  /** The repository's top and the exclusions, as one string. */
  key: string;
  /** The `env` the snapshot's git ran with (the same object, or none). */
  env: NodeJS.ProcessEnv | undefined;
  /** The folder that holds the temporary index (`<dir>/index`). */
  dir: string;
  /** The repository's real index (copied afresh for each snapshot). */
  realIndex: string;
  head: string | undefined;
  headTree: string | undefined;
  identity: Record<string, string>;
  tree: string;
  commit: string;
}

/** Default time a kept index outlives its last snapshot. */
export const SNAPSHOT_REUSE_IDLE_MS = 5_000;

export class SnapshotReuse {
  private kept: KeptSnapshot | undefined;
  private chain: Promise<unknown> = Promise.resolve();
  private timer: TimerHandle | undefined;
  private readonly onExit = (): void => {
    if (this.kept) fs.rmSync(this.kept.dir, { recursive: true, force: true });
  };

  constructor(
    private readonly idleMs = SNAPSHOT_REUSE_IDLE_MS,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Runs snapshots one at a time (they share one temporary index). */
  serialize<T>(task: () => Promise<T>): Promise<T> {
    const run = this.chain.then(task, task);
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** The kept snapshot when it is of this repository, exclusions and env; else undefined (and the old folder goes). */
  take(key: string, env: NodeJS.ProcessEnv | undefined): KeptSnapshot | undefined {
    const kept = this.kept;
    if (kept && kept.key === key && kept.env === env) return kept;
    this.drop();
    return undefined;
  }

  /** Keeps `snapshot` (its folder replaces any other) until `idleMs` pass without another snapshot. */
  keep(snapshot: KeptSnapshot): void {
    if (this.kept && this.kept.dir !== snapshot.dir) this.drop();
    if (!this.kept) process.once("exit", this.onExit);
    this.kept = snapshot;
    this.clock.clearTimeout(this.timer);
    // Never what keeps the process alive: the exit handler removes the folder then.
    this.timer = this.clock.setTimeout(() => void this.release(), this.idleMs, { unref: true });
  }

  /** Removes the kept folder (`dir` too when it is another one a failed snapshot made). */
  drop(dir?: string): void {
    this.clock.clearTimeout(this.timer);
    const kept = this.kept;
    this.kept = undefined;
    if (kept) {
      process.removeListener("exit", this.onExit);
      fs.rmSync(kept.dir, { recursive: true, force: true });
    }
    if (dir && dir !== kept?.dir) fs.rmSync(dir, { recursive: true, force: true });
  }

  /** Removes the kept folder once no snapshot runs. */
  release(): Promise<void> {
    return this.serialize(async () => this.drop());
  }

  /** The folder kept now (for tests). */
  keptDir(): string | undefined {
    return this.kept?.dir;
  }
}
