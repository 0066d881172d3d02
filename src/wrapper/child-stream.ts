/**
 * One pi process's output, from its spawn to its end: stdout read as pi's event lines
 * (PiLineReader) and kept raw, stderr kept, and — once the process exits — its group told to
 * go, its pipes drained for at most STDOUT_DRAIN_MS (a straggler that holds stdout must not
 * keep the run open), and the group waited for (stragglers.ts). run-supervision.ts decides what the
 * events mean; this module only carries them.
 */
import type { ChildHandle } from "./child.js";
import { PiLineReader } from "./line-reader.js";
import type { PiEvent } from "./normalize.js";
import { endGroup, type StragglerWatch } from "./stragglers.js";

/** After the child exited, how long its stdout and stderr may still deliver output. */
export const STDOUT_DRAIN_MS = 2000;

export interface ChildStreamHandlers {
  /** Each event line pi printed. */
  event(event: PiEvent): void;
  /** Every stdout chunk as it came (`bulky`: a line the reader would not parse whole). */
  stdout(bytes: Buffer, bulky: boolean): void;
  /** Every stderr chunk. */
  stderr(chunk: Buffer): void;
  /** Called for each stdout chunk, before it is read (pi is past its start-up). */
  output(): void;
  /** Called once the listeners are in place: a stop asked for before may now reach the child. */
  listening(): void;
  /** The child's group is gone (the orphan guard may stop watching it). */
  groupGone(): void;
}

/** Carries `child`'s output to `on` until it has exited (`exited`) and its group is gone. */
export async function streamChild(
  child: ChildHandle,
  exited: Promise<void>,
  watch: StragglerWatch,
  on: ChildStreamHandlers,
): Promise<void> {
  const reader = new PiLineReader({ event: on.event, garbage: () => undefined, raw: on.stdout });
  const stdoutDone = new Promise<void>((resolve) => {
    child.stdout.on("data", (chunk: Buffer) => {
      on.output();
      reader.push(chunk);
    });
    child.stdout.once("close", () => {
      reader.end();
      resolve();
    });
  });
  // stderr is drained like stdout: its last chunk (Node's report of a crashed start, say) may
  // arrive after the exit event and after stdout closed, and a destroyed stream drops it.
  const stderrDone = new Promise<void>((resolve) => {
    child.stderr.on("data", on.stderr);
    child.stderr.once("close", () => resolve());
  });
  on.listening();
  await exited;
  // Stragglers left in the child's process group end with it; one holding stdout would
  // otherwise keep the run open forever.
  watch.processes.signalGroup(child.pid, "SIGTERM");
  const termAt = watch.clock.now();
  await Promise.race([Promise.all([stdoutDone, stderrDone]), watch.timers.sleep(STDOUT_DRAIN_MS)]);
  child.stdout.destroy();
  child.stderr.destroy();
  // The guard hears the group is gone only once it is.
  if (child.pid && (await endGroup(watch, child.pid, termAt))) on.groupGone();
}
