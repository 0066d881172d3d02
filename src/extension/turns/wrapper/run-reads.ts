/**
 * Reading back what a turn's run left in its run directory: result.json, the wrapper's pid
 * (is it still running?), and which live messages its child read. A restarted parent waits
 * here for wrappers that outlived the previous process.
 */
import fs from "node:fs";
import path from "node:path";
import { isInboxMessageName, parseInboxMessage } from "../../../contracts/inbox.js";
import { RUN_FILES } from "../../../contracts/layout.js";
import type { MetaV1 } from "../../../contracts/meta.js";
import { checkResult, type ResultV1 } from "../../../contracts/result.js";
import { type Clock, sleep, systemClock } from "../../../lib/clock.js";
import { type ProcessIdentity, processRunning, readIdentityFile, sameProcessAlive } from "../../../lib/process.js";
import { readJsonFile, readRegularFile } from "../../../lib/regular-file.js";

/** A run's result.json as read back: the result, none (`{}`), or a damaged one (why). */
export interface RunRead {
  result?: ResultV1;
  damaged?: string;
}

/** A run's result.json, checked against the result contract. */
export async function readRunResult(runDir: string): Promise<RunRead> {
  const read = await readJsonFile(path.join(runDir, RUN_FILES.result));
  if (!read.ok) return read.absent ? {} : { damaged: `${RUN_FILES.result} ${read.problem}` };
  const checked = checkResult(read.value);
  return checked.ok ? { result: checked.record } : { damaged: `${RUN_FILES.result} is damaged: ${checked.problem}` };
}

/** The wrapper recorded in a run directory (wrapper.pid, lib/process-identity.ts). */
export async function readWrapperPid(runDir: string): Promise<ProcessIdentity | undefined> {
  const read = await readIdentityFile(path.join(runDir, RUN_FILES.wrapperPid));
  return "identity" in read ? read.identity : undefined;
}

/**
 * Whether the wrapper of a run is still running: lib/process.ts's one rule (the same pid,
 * start time and boot, not exited). After a reboot or once pids wrap, the pid may belong to
 * anything; a file of an older version that holds only the pid proves nothing, so its run is
 * read as it stands. The run directory is not needed for that: the identity says it all.
 */
export function wrapperRunning(wrapper: ProcessIdentity, _runDir?: string): boolean {
  return sameProcessAlive(wrapper);
}

/**
 * A wrapper whose parent went away notices within a second, stops pi (SIGKILL 3 s after
 * SIGTERM) and drains its output (at most 2 s) before it writes result.json.
 */
export const ORPHAN_WRAPPER_WAIT_MS = 10_000;
/** How often a restore looks again at the wrappers it waits for. */
const RESTORE_POLL_MS = 100;

/**
 * The results of runs a previous process started. A run whose wrapper is still running (the
 * parent was killed and restarted at once) is waited for, so a restore reports what the run
 * really did instead of guessing; all of them at once, until one deadline `waitMs` away.
 */
export async function settledRunResults(
  runDirs: readonly string[],
  waitMs = ORPHAN_WRAPPER_WAIT_MS,
  clock: Clock = systemClock,
  running: (wrapper: ProcessIdentity, runDir: string) => boolean = wrapperRunning,
): Promise<Map<string, RunRead>> {
  const reads = new Map<string, RunRead>();
  let waiting: Array<{ runDir: string; wrapper: ProcessIdentity }> = [];
  for (const runDir of runDirs) {
    const read = await readRunResult(runDir);
    const wrapper = read.result || read.damaged ? undefined : await readWrapperPid(runDir);
    if (wrapper && running(wrapper, runDir)) waiting.push({ runDir, wrapper });
    else reads.set(runDir, read);
  }
  const deadline = clock.now() + waitMs;
  while (waiting.length > 0 && clock.now() < deadline) {
    await sleep(clock, Math.min(RESTORE_POLL_MS, deadline - clock.now()));
    const still: typeof waiting = [];
    for (const entry of waiting) {
      const read = await readRunResult(entry.runDir);
      if (read.result || read.damaged) reads.set(entry.runDir, read);
      // Read once more: it may have written its result just before it exited.
      else if (!running(entry.wrapper, entry.runDir)) reads.set(entry.runDir, await readRunResult(entry.runDir));
      else still.push(entry);
    }
    waiting = still;
  }
  for (const { runDir } of waiting) reads.set(runDir, await readRunResult(runDir));
  return reads;
}

/** Lines of a JSON Lines file that mention `needle`, parsed (a file that is not there has none). */
async function linesWith(file: string, needle: string): Promise<unknown[]> {
  // Never a plain readFile: a FIFO where a run's file belongs would block it forever.
  const read = await readRegularFile(file);
  const text = read.ok ? read.text : "";
  const out: unknown[] = [];
  for (const line of text.split("\n")) {
    // Cheap filter first: most lines are something else.
    if (!line.includes(needle)) continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      // a line its writer was writing when it died
    }
  }
  return out;
}

/** How long a run's pi may outlive its killed wrapper: its orphan check runs every second. */
export const ORPHAN_CHILD_WAIT_MS = 5000;

/** Waits (up to `waitMs`) until the pi a run started (its run_start pid) has exited. */
async function childGone(eventsPath: string, waitMs: number, clock: Clock): Promise<void> {
  const start = (await linesWith(eventsPath, '"run_start"'))[0] as { pid?: unknown } | undefined;
  const pid = typeof start?.pid === "number" ? start.pid : undefined;
  if (!pid || pid <= 1) return;
  const deadline = clock.now() + waitMs;
  while (processRunning(pid) && clock.now() < deadline) await sleep(clock, 100);
}

/** The text of a session entry that is a user message, else undefined. */
function sessionUserText(entry: unknown): string | undefined {
  const message = (entry as { type?: unknown; message?: { role?: unknown; content?: unknown } }).message;
  if ((entry as { type?: unknown }).type !== "message" || message?.role !== "user") return undefined;
  if (typeof message.content === "string") return message.content;
  if (!Array.isArray(message.content)) return undefined;
  return (message.content as Array<{ type?: unknown; text?: unknown }>)
    .filter((block) => block.type === "text" && typeof block.text === "string")
    .map((block) => block.text as string)
    .join("\n");
}

/**
 * The ids of the live messages a run's child read: those its events.jsonl records
 * (`message_delivered`), and those still in its inbox that the child's session holds as a
 * user message — pi can put a message it had queued into the conversation as it stops
 * (pi 1.x on SIGTERM, its wrapper already gone), and the session is the conversation.
 */
export async function deliveredMessageIds(runDir: string, clock: Clock = systemClock): Promise<Set<string>> {
  const ids = new Set<string>();
  const events = path.join(runDir, RUN_FILES.events);
  for (const record of await linesWith(events, '"message_delivered"')) {
    const { type, id } = record as { type?: unknown; id?: unknown };
    if (type === "message_delivered" && typeof id === "string") ids.add(id);
  }
  const inbox = path.join(runDir, RUN_FILES.inbox);
  const names = (await fs.promises.readdir(inbox).catch(() => [])).filter(isInboxMessageName);
  if (names.length === 0) return ids;
  const meta = await readJsonFile(path.join(runDir, RUN_FILES.meta));
  const sessionPath = meta.ok ? (meta.value as Partial<MetaV1> | null)?.sessionPath : undefined;
  if (!sessionPath) return ids;
  // A wrapper that died (no result.json) leaves its pi for up to a second, stopping: what
  // it writes to the session as it goes counts, so the session is read once it is gone.
  const ended = await readRunResult(runDir);
  if (!ended.result && !ended.damaged) await childGone(events, ORPHAN_CHILD_WAIT_MS, clock);
  for (const name of names) {
    const file = await readRegularFile(path.join(inbox, name));
    const message = file.ok ? parseInboxMessage(file.text) : undefined;
    if (!message || ids.has(message.id)) continue;
    const entries = await linesWith(sessionPath, message.id);
    if (entries.some((entry) => sessionUserText(entry) === message.text)) ids.add(message.id);
  }
  return ids;
}
