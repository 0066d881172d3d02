/**
 * Waits for `settled`, at most `ms` (no wait when there is nothing to wait for). The timer is
 * a held one (not unref'd), so the process has something to wait for meanwhile; it is
 * cleared as soon as `settled` resolves.
 */
export async function settledWithin(settled: Promise<unknown> | undefined, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([settled, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
