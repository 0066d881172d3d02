/**
 * The orphan guard: however the wrapper ends (SIGKILL included), what it started does not
 * outlive it. A tiny `/bin/sh` process, started before the child in a session of its own,
 * holds a pipe from the wrapper as its stdin. The wrapper tells it the child's process group
 * (`pgid N`) right after the spawn, and `done` once that group is gone. When the pipe closes
 * (the wrapper exited, however it did), the guard ends:
 * - the child's process group, unless it heard `done`;
 * - every process whose environment holds the run's token (`PI_SUBAGENT_RUN_TOKEN`, set in
 *   the child's environment and inherited by everything below it), found in /proc — this
 *   reaches what left the group (`setsid`, a daemonizing tool), and covers the moment between
 *   the child's spawn and the `pgid` line;
 * with SIGTERM, then SIGKILL a second later for whatever is still there. It also removes the
 * wrapper's result.json reserve, which a killed wrapper leaves behind.
 *
 * Not covered: a process that drops the token from its environment (`env -i`, an explicit
 * environment), one that runs as another user (its /proc environ is unreadable), systems
 * without /proc (only the group is ended there), and a guard that is itself SIGKILLed.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { ENV } from "../contracts/env.js";

/** How long the guard waits between SIGTERM and SIGKILL (whole seconds: POSIX sleep). */
export const GUARD_KILL_AFTER_S = 1;

const GUARD_SCRIPT = `
needle=$1 reserve=$2 pg=
while read -r word arg; do
  case $word in
    pgid) pg=$arg ;;
    done) pg= ;;
  esac
done
[ -n "$reserve" ] && rm -f -- "$reserve"
end() {
  hit=
  if [ -n "$pg" ] && kill -s "$1" -- "-$pg" 2>/dev/null; then hit=1; fi
  for f in $(grep -lF -e "$needle" /proc/[0-9]*/environ 2>/dev/null); do
    p=\${f#/proc/}
    kill -s "$1" "\${p%/environ}" 2>/dev/null && hit=1
  done
  [ -n "$hit" ]
}
if end TERM; then sleep ${GUARD_KILL_AFTER_S}; end KILL; fi
exit 0
`;

/** The guard as the run sees it. Every call is safe after the guard died. */
export interface OrphanGuard {
  /** The child's process group: the guard ends it if the wrapper goes first. */
  watch(pgid: number): void;
  /** The child's group is gone: the guard must not signal that (reusable) number any more. */
  groupGone(): void;
  /** Closes the pipe: the guard sweeps the run's token and exits (the wrapper's exit does the same). */
  close(): void;
}

/** The environment entry that marks every process of one run. */
export function runTokenEntry(token: string): string {
  return `${ENV.runToken}=${token}`;
}

/** The guard's executable and arguments (the bench starts the same command to measure it). */
export function guardCommand(token: string, reservePath: string): [string, string[]] {
  return ["/bin/sh", ["-c", GUARD_SCRIPT, "subagent-wrapper-guard", runTokenEntry(token), reservePath]];
}

/**
 * Starts the guard. `token` marks the run's processes; `reservePath` is the result.json
 * reserve to remove if the wrapper dies. `onError` hears why a guard could not start.
 */
export function startOrphanGuard(token: string, reservePath: string, onError: (err: Error) => void): OrphanGuard {
  // The guard must not carry a token of its own: an outer run's guard, sweeping that token,
  // would otherwise end this guard before it has done its work.
  const env = { ...process.env };
  delete env[ENV.runToken];
  let guard: ChildProcess;
  try {
    const [file, args] = guardCommand(token, reservePath);
    // Its own session: a signal to the wrapper's process group (Ctrl-C, the launcher) never reaches it.
    guard = spawn(file, args, { stdio: ["pipe", "ignore", "ignore"], detached: true, env });
  } catch (err) {
    onError(err as Error);
    return { watch: () => undefined, groupGone: () => undefined, close: () => undefined };
  }
  guard.once("error", onError);
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
    close: () => stdin.end(),
  };
}
