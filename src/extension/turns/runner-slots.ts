/**
 * A runner's capacity across the whole tree: the turn slots of a runner are leases
 * in the tree directory, `runners/<name>/slot.<n>.<generation>` (lib/slot-lease.ts), shared by
 * the root and every nested agent's process, so a child that spawns children on its parent's
 * runner counts against the same capacity.
 *
 * Who holds a slot: the extension takes it just before a turn's wrapper starts (so a full runner
 * keeps the turn queued, visibly), then hands it over to that wrapper (handOver): the wrapper
 * lives exactly as long as the turn, outlives a root that detaches (durable children) and is
 * what a re-attaching root finds still at work — the slot stays taken through all of it, and
 * frees itself when the wrapper ends, however it ends. The extension writes the release at the
 * turn's end so that waiting processes hear of it at once (a folder watch); a slot whose
 * holder died without one is found by the poll.
 */
import fs from "node:fs";
import path from "node:path";
import { TREE_FILES } from "../../contracts/layout.js";
import type { Clock, TimerHandle } from "../../lib/clock.js";
import { processIdentity } from "../../lib/process.js";
import { type SlotDeps, type SlotLease, slotHolders, takeSlot } from "../../lib/slot-lease.js";
import { errorText } from "../../lib/values.js";

/** A pool of slots other than the local one: a runner's (`name` unique, `limit` its capacity). */
export interface SlotPool {
  name: string;
  limit: number;
}

/** A slot of a runner this process took for a turn. */
export interface HeldSlot {
  /** The turn's wrapper started as `pid`: it holds the slot from now on. */
  handOver(pid: number): void;
  release(): void;
}

/** The runners' tree-wide slots, as TurnSlots uses them. */
export interface RunnerGate {
  /** A free slot of the runner, taken; undefined when the runner is full across the tree. */
  take(pool: SlotPool): HeldSlot | undefined;
  /** How many of the runner's slots live processes hold now. */
  inUse(pool: SlotPool): number;
  /** Calls `changed` when the runner's slots may have changed (a release, a holder gone); returns the stop. */
  watch(pool: SlotPool, changed: () => void): () => void;
}

/** How often a watched runner's slots are read again: a holder killed outright writes no release. */
export const SLOT_POLL_MS = 1000;

export interface TreeGateOptions {
  clock: Clock;
  /** One line for the user (a tree directory whose slots cannot be written). */
  report?: (line: string) => void;
  deps?: SlotDeps;
  /** Watches a folder (default fs.watch); tests pass none and move the clock. */
  watchDir?: (dir: string, changed: () => void) => (() => void) | undefined;
}

function watchFolder(dir: string, changed: () => void): (() => void) | undefined {
  try {
    const watcher = fs.watch(dir, { persistent: false }, () => changed());
    watcher.on("error", () => watcher.close());
    return () => watcher.close();
  } catch {
    // No watch here (a file system without one): the poll alone.
    return undefined;
  }
}

/** The gate over `<treeDir>/runners/<name>/`. */
export function treeRunnerGate(treeDir: string, options: TreeGateOptions): RunnerGate {
  const dirOf = (pool: SlotPool) => path.join(treeDir, TREE_FILES.runners, pool.name);
  const watchDir = options.watchDir ?? watchFolder;
  let reported = false;
  return {
    take(pool) {
      let lease: SlotLease | undefined;
      try {
        lease = takeSlot(dirOf(pool), pool.limit, options.deps);
      } catch (err) {
        // The tree directory cannot be written: the turn runs, counted in this process only.
        if (!reported) options.report?.(`runner ${pool.name}'s slots cannot be taken: ${errorText(err)}`);
        reported = true;
        return { handOver: () => undefined, release: () => undefined };
      }
      if (!lease) return undefined;
      const taken = lease;
      return {
        handOver: (pid) => {
          try {
            taken.handOver(processIdentity(pid));
          } catch (err) {
            options.report?.(`runner ${pool.name}'s slot could not be handed to its wrapper: ${errorText(err)}`);
          }
        },
        release: () => {
          try {
            taken.release();
          } catch {
            // the tree directory went away: nothing to give back
          }
        },
      };
    },
    inUse(pool) {
      try {
        return slotHolders(dirOf(pool), options.deps).size;
      } catch {
        // unreadable just now: the count is for display only
        return pool.limit;
      }
    },
    watch(pool, changed) {
      const dir = dirOf(pool);
      // Many events for one release (its temp file, the rename): one look for all of them.
      let pending = false;
      const look = () => {
        if (pending) return;
        pending = true;
        queueMicrotask(() => {
          pending = false;
          changed();
        });
      };
      try {
        fs.mkdirSync(dir, { recursive: true });
      } catch {
        // no folder to watch: the poll alone
      }
      const stopWatch = watchDir(dir, look);
      const timer: TimerHandle = options.clock.setInterval(look, SLOT_POLL_MS);
      return () => {
        stopWatch?.();
        options.clock.clearInterval(timer);
      };
    },
  };
}
