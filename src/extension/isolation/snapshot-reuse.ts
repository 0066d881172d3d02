/**
 * What the last working-state snapshot of a repository learnt, kept for its next one
 * (repository.ts, `snapshotWorkingState`'s `reuse`). A fan-out snapshots the same working
 * tree once per spawn, one spawn after another: with the last one kept, a snapshot after the
 * first asks git only for HEAD, `add --all` and `write-tree` (three processes instead of six,
 * or seven for a dirty tree), and the same tree on the same HEAD is the same commit.
 *
 * Nothing the snapshot's tree depends on is kept: each snapshot copies the real index afresh
 * into a temporary folder of its own and reads the whole working tree (`add --all`), as one
 * without reuse does. What is kept is what the tree does not depend on: where the index is,
 * the committer identity, HEAD's tree while HEAD is the same. Only in memory, for `idleMs`
 * after the last snapshot: a snapshot later than that asks git everything again.
 */
import { type Clock, systemClock } from "../../lib/clock.js";

/** What a snapshot learnt. */
export interface KeptSnapshot {
  /** The repository's top and the exclusions, as one string. */
  key: string;
  /** The `env` the snapshot's git ran with (the same object, or none). */
  env: NodeJS.ProcessEnv | undefined;
  /** The repository's real index (copied afresh for each snapshot). */
  realIndex: string;
  /** The identity additions of the snapshot commit (`identityEnv`). */
  identity: Record<string, string>;
  head: string | undefined;
  headTree: string | undefined;
  tree: string;
  commit: string;
}

/** Default time a snapshot is kept after it was taken. */
export const SNAPSHOT_REUSE_IDLE_MS = 5_000;

export class SnapshotReuse {
  private kept: (KeptSnapshot & { at: number }) | undefined;

  constructor(
    private readonly idleMs = SNAPSHOT_REUSE_IDLE_MS,
    private readonly clock: Clock = systemClock,
  ) {}

  /** The kept snapshot when it is of this repository, exclusions and env, and recent enough; else undefined. */
  take(key: string, env: NodeJS.ProcessEnv | undefined): KeptSnapshot | undefined {
    const kept = this.kept;
    if (kept && kept.key === key && kept.env === env && this.clock.now() - kept.at <= this.idleMs) return kept;
    this.kept = undefined;
    return undefined;
  }

  /** Keeps `snapshot` (in place of any other). */
  keep(snapshot: KeptSnapshot): void {
    this.kept = { ...snapshot, at: this.clock.now() };
  }

  /** Forgets the kept snapshot. */
  drop(): void {
    this.kept = undefined;
  }
}
