/**
 * One at a time per key inside this process: a promise chain per key, for work whose steps
 * must not interleave with another run of itself (git commands on one repository, the drain of
 * one inbox, where two runs would read the same file before either removed it).
 */

const queues = new Map<string, Promise<void>>();

/**
 * Runs `task` after every earlier task of the same `key` has settled (a per-key promise
 * chain). The map entry goes once its chain is idle, so nothing accumulates.
 */
export function serialized<T>(key: string, task: () => Promise<T>): Promise<T> {
  const previous = queues.get(key) ?? Promise.resolve();
  const run = previous.then(task);
  const settled = run.then(
    () => undefined,
    () => undefined,
  );
  queues.set(key, settled);
  void settled.then(() => {
    if (queues.get(key) === settled) queues.delete(key);
  });
  return run;
}
