/**
 * What a runner child coordinates on this machine besides the protocol: the local checkout a
 * new isolated worktree is still writing (meta.json `cwdReadyPath`), and the run's inbox of
 * live messages. Plain functions over files, so remote-child.ts keeps only the conversation.
 */
import fs from "node:fs";
import path from "node:path";
import { ENV } from "../../contracts/env.js";
import { type InboxMessageV1, isInboxMessageName, parseInboxMessage } from "../../contracts/inbox.js";
import { cwdStartedPath } from "../../contracts/meta.js";
import { type Clock, sleep, systemClock } from "../../lib/clock.js";
import { folderNames } from "../../lib/folder-names.js";
import { readRegularFileSync } from "../../lib/regular-file.js";

/** After a stop, how long a turn's landing waits for a checkout that never says ready (its root died mid-checkout). */
export const CHECKOUT_AFTER_STOP_MS = 30_000;
const CHECKOUT_POLL_MS = 50;

/** CHECKOUT_AFTER_STOP_MS, or the shorter wait a test sets (ENV.checkoutAfterStopMs). */
export function checkoutAfterStopMs(env: NodeJS.ProcessEnv = process.env): number {
  const set = Number(env[ENV.checkoutAfterStopMs]);
  return Number.isInteger(set) && set > 0 ? set : CHECKOUT_AFTER_STOP_MS;
}

/**
 * Lets the checkout behind `ready` go on (its `.started` file): it waits while the far side's
 * pi starts, so the two do not share the CPU.
 */
export function letCheckoutGo(ready: string): void {
  try {
    fs.writeFileSync(cwdStartedPath(ready), "");
  } catch {
    // the tree folder is gone: the checkout's own wait ends it
  }
}

/**
 * Waits for `ready` to say `ready`; throws what it says otherwise. Once `stopped()` is true it
 * waits at most `afterStopMs` more, then returns (the turn ends by its own limits).
 */
export async function checkoutDone(
  ready: string,
  stopped: () => boolean,
  afterStopMs: number = checkoutAfterStopMs(),
  clock: Clock = systemClock,
): Promise<void> {
  let stoppedAt: number | undefined;
  for (;;) {
    const read = readRegularFileSync(ready);
    const text = "text" in read ? read.text.trim() : "problem" in read ? read.problem : undefined;
    if (text === "ready") return;
    if (text !== undefined) throw new Error(`the working directory is not ready: ${text}`);
    if (stopped()) stoppedAt ??= clock.now();
    if (stoppedAt !== undefined && clock.now() - stoppedAt > afterStopMs) return;
    await sleep(clock, CHECKOUT_POLL_MS);
  }
}

/**
 * The complete message files of inbox `dir` not in `sent`, in name (send) order; each one
 * returned is added to `sent`, so it goes over once. A missing folder has none; a file still
 * being written is left for the next look.
 */
export function unsentInboxMessages(dir: string, sent: Set<string>): Array<InboxMessageV1 & { name: string }> {
  // A folder not made yet (or gone) holds no message.
  const names = folderNames(dir).filter(isInboxMessageName).sort();
  const out: Array<InboxMessageV1 & { name: string }> = [];
  for (const name of names) {
    if (sent.has(name)) continue;
    const read = readRegularFileSync(path.join(dir, name));
    const message = "text" in read ? parseInboxMessage(read.text) : undefined;
    if (!message) continue;
    sent.add(name);
    out.push({ ...message, name });
  }
  return out;
}
