/**
 * The rest of a new workspace's checkout, written once the far side's pi has said its start-up
 * is over (the task extension's `.started` file: the two do not share the CPU), then told in the
 * ready file (whole: temp file + rename), which pi's tool calls wait for.
 */
import fs from "node:fs";
import { cwdStartedPath } from "../contracts/meta.js";
import type { Scratch } from "./workspace.js";

/** How long the rest of the checkout waits for pi to say its start-up is over (then it goes on anyway). */
const CHECKOUT_AFTER_START_MS = 10_000;
const STARTED_POLL_MS = 20;

/** Writes the rest of the checkout after pi's start-up (or once `waiting()` turns false), then the ready file. */
export async function lateCheckout(scratch: Scratch, readyFile: string, waiting: () => boolean): Promise<void> {
  let word = "ready";
  try {
    await piStarted(readyFile, waiting);
    await scratch.finishCheckout();
  } catch (err) {
    word = `the workspace could not be checked out: ${(err as Error).message}`;
  }
  const temp = scratch.writeRunFile("cwd-ready.tmp", word);
  fs.renameSync(temp, readyFile);
}

/** Resolves once pi says its start-up is over, `waiting()` is false (pi gone, the run ending), or CHECKOUT_AFTER_START_MS passed. */
function piStarted(readyFile: string, waiting: () => boolean): Promise<void> {
  const started = cwdStartedPath(readyFile);
  const until = Date.now() + CHECKOUT_AFTER_START_MS;
  return new Promise((resolve) => {
    const poll = setInterval(() => {
      if (fs.existsSync(started) || !waiting() || Date.now() > until) {
        clearInterval(poll);
        resolve();
      }
    }, STARTED_POLL_MS);
  });
}
