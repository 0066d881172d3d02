/**
 * Seeing a run's result.json the moment its wrapper renames it into place, rather than when
 * the wrapper exits: the wrapper writes the result only once the run is over (pi exited, the
 * processes it left ended), then still releases its orphan guard, exports its trace and exits,
 * which the parent need not wait for. A watch on the run folder sees the rename; a poll looks
 * as well, for a file system whose watch misses it. None of the handles holds pi's event loop.
 */
import fs from "node:fs";
import { RUN_FILES } from "../../../contracts/layout.js";
import { type Clock, systemClock } from "../../../lib/clock.js";
import { type RunRead, readRunResult } from "./run-reads.js";

/** How often a run's result is looked for when no watch event comes. */
export const RESULT_POLL_MS = 500;

/**
 * Calls `look` whenever the run's result.json may have appeared (a watch event for it, and
 * every `pollMs` on `clock`). Returns what stops watching.
 */
export function watchResultFile(
  runDir: string,
  look: () => void,
  clock: Clock = systemClock,
  pollMs = RESULT_POLL_MS,
): () => void {
  let watcher: fs.FSWatcher | undefined;
  try {
    watcher = fs.watch(runDir, { persistent: false }, (_event, name) => {
      if (name === null || String(name) === RUN_FILES.result) look();
    });
    watcher.on("error", () => undefined);
  } catch {
    // no watch here (a folder gone, a file system without one): the poll sees the end
  }
  // The clock's interval never holds pi's event loop on its own.
  const poll = clock.setInterval(look, pollMs);
  return () => {
    watcher?.close();
    clock.clearInterval(poll);
  };
}

/**
 * Resolves with the run's result once a whole one is in place (its writer renames it there,
 * so one read that parses is final). A result.json that is there but cannot be used is left
 * to the caller's other end (the wrapper's exit), which says why. `stop()` ends the watch.
 */
export function resultInPlace(
  runDir: string,
  clock: Clock = systemClock,
  pollMs = RESULT_POLL_MS,
): { found: Promise<RunRead>; stop(): void } {
  let stopWatch: () => void = () => undefined;
  let over = false;
  let reading = false;
  const found = new Promise<RunRead>((resolve) => {
    const look = () => {
      if (reading || over) return;
      reading = true;
      void readRunResult(runDir)
        .then((read) => {
          if (!read.result || over) return;
          over = true;
          stopWatch();
          resolve(read);
        })
        .catch(() => undefined)
        .finally(() => {
          reading = false;
        });
    };
    stopWatch = watchResultFile(runDir, look, clock, pollMs);
    look();
  });
  return {
    found,
    stop: () => {
      over = true;
      stopWatch();
    },
  };
}
