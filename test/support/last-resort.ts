/**
 * A last resort for what a test helper made outside the test's own processes (a network
 * namespace, a user, daemons, folders): if the test process exits without the helper's
 * stop() (a test run interrupted, a hook that never ran), each registered teardown runs,
 * synchronously, on the process's `exit` or SIGTERM. stop() unregisters its own. Nothing here
 * runs on SIGKILL: that is what the unique names are for (a leftover is recognisable as a
 * test's).
 */
/** What to end at once (processes), and what to remove after every helper's processes are ended. */
export interface LastResort {
  kill: () => void;
  clean: () => void;
  /** What takes long (userdel 0.3 s, removing a folder of a few hundred files up to 1.4 s on a busy disk), after every helper's clean. */
  slow?: () => void;
}
const pending = new Map<string, LastResort>();
let hooked = false;

export function registerLastResort(id: string, teardown: LastResort): void {
  pending.set(id, teardown);
  if (hooked) return;
  hooked = true;
  process.once("exit", runPending);
  // vitest ends a test file's worker with SIGTERM (SIGKILL 500 ms later): tear down, then let
  // the signal do what it would have done.
  process.once("SIGTERM", () => {
    runPending();
    process.kill(process.pid, "SIGTERM");
  });
}

/** Every helper's processes first (the worker has 500 ms), then its folders and namespaces, then users. */
function runPending(): void {
  const all = [...pending.values()];
  pending.clear();
  const slow = all.flatMap((t) => (t.slow ? [t.slow] : []));
  for (const step of [...all.map((t) => t.kill), ...all.map((t) => t.clean), ...slow]) {
    try {
      step();
    } catch {
      // best effort: the next one still runs
    }
  }
}

export function unregisterLastResort(id: string): void {
  pending.delete(id);
}

/** Sends SIGKILL to each pid (and, with `groups`, to its process group first), ignoring the gone. */
export function killNow(pids: readonly number[], groups = false): void {
  for (const pid of pids) {
    for (const target of groups ? [-pid, pid] : [pid]) {
      try {
        process.kill(target, "SIGKILL");
      } catch {
        // gone already
      }
    }
  }
}
