/**
 * The orphan guard: however the wrapper ends (SIGKILL included), what it started does not
 * outlive it. A tiny `/bin/sh` process, started before the child in a session of its own,
 * holds a pipe from the wrapper as its stdin. The wrapper tells it the child's process group
 * (`pgid N`) right after the spawn, `done` once that group is gone, and `exit` once the run
 * has ended everything itself (the normal end: the group, then the run's token, see below) —
 * the guard then exits at once. When the pipe closes without `exit` (the wrapper died,
 * however it did), the guard ends:
 * - the child's process group, unless it heard `done`;
 * - every process whose environment holds the run's token (`PI_SUBAGENT_RUN_TOKEN`, set in
 *   the child's environment and inherited by everything below it), found in /proc — this
 *   reaches what left the group (`setsid`, a daemonizing tool, pi's detached bash tool), and
 *   covers the moment between the child's spawn and the `pgid` line;
 * with SIGTERM, then SIGKILL for whatever is still there: a second later, or as soon as
 * everything the SIGTERM reached is gone (the KILL round still looks for the token once more,
 * for a process forked meanwhile), so the guard itself is usually gone in a fraction of a
 * second and the 2 s promise holds on a loaded machine. "Gone" is read from /proc: no process
 * of the group and none the token led to is left but zombies (their parent died with the
 * wrapper, and the init that inherits them may reap them late); without /proc, the group is
 * asked with signal 0. It also removes what a killed wrapper leaves behind: its result.json
 * reserve and the temp file of a result.json write it was killed in (both start with the
 * reserve's prefix, `.<name>.<pid>.`: hiddenSiblingPrefix), and the run's own folder in the
 * temp folder with all it holds — the task file (the task's full text, when the child had not
 * read it yet), the limits' private inbox, a runner's bundles (run-temp.ts).
 *
 * The shell program itself is orphan-guard-script.ts: it runs in a process of its own, so it
 * shares nothing with this module but its arguments and the words on its stdin.
 *
 * Not covered: a process that drops the token from its environment (`env -i`, an explicit
 * environment), one that runs as another user (its /proc environ is unreadable), systems
 * without /proc (only the group is ended there), and a guard that is itself SIGKILLed.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { ENV, runTokenEntry } from "../contracts/env.js";
import { settledWithin } from "../lib/clock.js";
import { processesWithEnv } from "../lib/process.js";
import { GUARD_SCRIPT } from "./orphan-guard-script.js";

/** How long the wrapper waits for a released guard to exit. */
export const GUARD_EXIT_WAIT_MS = 1000;

/** The guard as the run sees it. Every call is safe after the guard died. */
export interface OrphanGuard {
  /** The child's process group: the guard ends it if the wrapper goes first. */
  watch(pgid: number): void;
  /** The child's group is gone: the guard must not signal that (reusable) number any more. */
  groupGone(): void;
  /** The run ended what it started: the guard exits without doing anything. Resolves once it has (bounded). */
  release(): Promise<void>;
  /** Closes the pipe without `exit`: the guard does its work (a fallback; the wrapper's death does the same). */
  close(): void;
}

/** The guard's executable and arguments (the bench starts the same command to measure it). */
export function guardCommand(token: string, reservePath: string, runTemp = ""): [string, string[]] {
  return ["/bin/sh", ["-c", GUARD_SCRIPT, "subagent-wrapper-guard", runTokenEntry(token), reservePath, runTemp]];
}

const idleGuard: OrphanGuard = {
  watch: () => undefined,
  groupGone: () => undefined,
  release: async () => undefined,
  close: () => undefined,
};

/**
 * Starts the guard. `token` marks the run's processes; `reservePath` is the result.json
 * reserve and `runTemp` the run's temp folder to remove if the wrapper dies. `onError` hears
 * why a guard could not start.
 */
export function startOrphanGuard(
  token: string,
  reservePath: string,
  onError: (err: Error) => void,
  runTemp?: string,
): OrphanGuard {
  // The guard must not carry a token of its own: an outer run's guard, sweeping that token,
  // would otherwise end this guard before it has done its work.
  const env = { ...process.env };
  delete env[ENV.runToken];
  let guard: ChildProcess;
  try {
    const [file, args] = guardCommand(token, reservePath, runTemp);
    // Its own session: a signal to the wrapper's process group (Ctrl-C, the launcher) never reaches it.
    guard = spawn(file, args, { stdio: ["pipe", "ignore", "ignore"], detached: true, env });
  } catch (err) {
    onError(err as Error);
    return idleGuard;
  }
  let failed = false;
  guard.once("error", (err) => {
    failed = true;
    onError(err);
  });
  const exited = new Promise<void>((resolve) => guard.once("close", () => resolve()));
  const stdin = guard.stdin!;
  // A guard that died already: the wrapper carries on (the write error is not news).
  stdin.on("error", () => undefined);
  // Neither the guard nor its pipe keeps the wrapper alive: its exit is what closes the pipe.
  guard.unref();
  (stdin as { unref?: () => void }).unref?.();
  const say = (line: string) => {
    if (!stdin.destroyed && stdin.writable) stdin.write(`${line}\n`);
  };
  return {
    watch: (pgid) => say(`pgid ${pgid}`),
    groupGone: () => say("done"),
    release: async () => {
      say("exit");
      stdin.end();
      if (failed) return;
      // A held timer: the run's own exit waits for the guard's, within the bound.
      await settledWithin(exited, GUARD_EXIT_WAIT_MS);
    },
    close: () => stdin.end(),
  };
}

/**
 * The live processes whose environment holds the run's token, from /proc (none without it).
 * A zombie's environ reads empty, so zombies are not counted; another user's cannot be read.
 */
export function processesWithToken(token: string): Promise<number[]> {
  return processesWithEnv(runTokenEntry(token));
}
