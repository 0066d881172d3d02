/**
 * What stops a run from outside: a signal to the wrapper, or the parent that started it going
 * away. Each calls the run's `interrupt` with the reason, which result.json then carries.
 */
import { ENV } from "../contracts/env.js";
import type { Clock } from "../lib/clock.js";

/** How often the parent named in PI_SUBAGENTS_PARENT_PID is looked for. */
export const PARENT_CHECK_MS = 1000;

const STOP_SIGNALS = ["SIGTERM", "SIGINT", "SIGHUP"] as const;

/** Handles SIGTERM, SIGINT and SIGHUP to the wrapper; the returned function removes the handlers. */
export function onStopSignals(interrupt: (reason: string) => void): () => void {
  const handlers = STOP_SIGNALS.map((signal) => {
    const handler = () => interrupt(`subagent-wrapper received ${signal}`);
    process.on(signal, handler);
    return () => process.off(signal, handler);
  });
  return () => {
    for (const remove of handlers) remove();
  };
}

/**
 * Looks for the parent named in PI_SUBAGENTS_PARENT_PID every PARENT_CHECK_MS and interrupts
 * the run once it is gone. Undefined when the environment names no parent; otherwise the
 * function that stops the watch.
 */
export function watchParent(
  env: NodeJS.ProcessEnv,
  clock: Clock,
  canSignal: (pid: number) => boolean,
  interrupt: (reason: string) => void,
): (() => void) | undefined {
  const parentPid = Number(env[ENV.parentPid]);
  if (!Number.isInteger(parentPid) || parentPid <= 1) return undefined;
  const timer = clock.setInterval(() => {
    if (canSignal(parentPid)) return;
    clock.clearInterval(timer);
    interrupt(`parent process ${parentPid} is gone`);
  }, PARENT_CHECK_MS);
  return () => clock.clearInterval(timer);
}
