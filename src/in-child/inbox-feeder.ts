/**
 * The task extension's half of a run's live-message inbox (contracts/inbox.ts): it watches
 * the folder and hands each new message to pi as a steering message, in name (send) order,
 * once per process. Whether a message then reached the conversation is the wrapper's to
 * confirm from pi's stream (inbox.ts); this side only decides *when* handing one over can work:
 * - only while pi is in a run: a message sent while pi is idle would start a run of its own
 *   (and from session_start makes pi fail), so the feeder opens at agent_start/turn_start;
 * - not once the run is ending: pi looks at its steering queue right after a turn that
 *   called no tool and ends the run otherwise; pi 0.73.1 drops a message handed to it after
 *   that (it never goes on after agent_end). So what is in the folder then is handed at that
 *   turn's end, and nothing after it until pi works again (a continuation's turn_start, a
 *   retry's agent_start). A message that missed the run stays in the folder, undelivered;
 * - the wrapper's wrap-up (a limit reached) only while the model request under way has ended
 *   in a tool call, up to that turn's end: pi reads its steering queue right after it and asks
 *   the model again, so the wrap-up is in that request. A steering message handed while the
 *   model is still answering waits in pi's queue until the turn's end, and if that turn was
 *   the final answer it would start one more request of its own: the wrap-up waits in the
 *   folder for a request that calls a tool, and the wrapper removes it once the child answered;
 * - never after session_shutdown: pi's context is stale by then and touching it throws (an
 *   uncaught throw there crashes pi). Every timer and the watch are unref'd, so they never
 *   hold pi open.
 */
import fs from "node:fs";
import path from "node:path";
import { isInboxMessageName, parseInboxMessage, WRAP_UP_FILE } from "../contracts/inbox.js";

/** How often the folder is read when the watch misses a change (or cannot be set up). */
export const INBOX_POLL_MS = 250;

/**
 * What the feeder needs of the world (tests pass a map and a fake clock). Its timer is `every`
 * rather than the package's Clock: code inside the child imports only the contracts.
 */
export interface FeederOperations {
  list(dir: string): string[];
  /** A file's text, or undefined when it cannot be read now. */
  read(file: string): string | undefined;
  /** Calls `changed` when the folder changes; undefined when it cannot watch. Never holds the process open. */
  watch(dir: string, changed: () => void): { close(): void } | undefined;
  /** A repeating timer that never holds the process open. */
  every(ms: number, fn: () => void): { cancel(): void };
}

export const nodeFeederOperations: FeederOperations = {
  list: (dir) => {
    try {
      return fs.readdirSync(dir);
    } catch {
      return [];
    }
  },
  read: (file) => {
    try {
      return fs.readFileSync(file, "utf8");
    } catch {
      return undefined;
    }
  },
  watch: (dir, changed) => {
    try {
      const watcher = fs.watch(dir, { persistent: false }, () => changed());
      // An error (the folder removed) ends the watch; the poll carries on.
      watcher.on("error", () => watcher.close());
      return watcher;
    } catch {
      return undefined;
    }
  },
  every: (ms, fn) => {
    const timer = setInterval(fn, ms);
    timer.unref();
    return { cancel: () => clearInterval(timer) };
  },
};

/** Hands a message's text to pi (`pi.sendUserMessage(text, {deliverAs: "steer"})`); may throw once pi's context is stale. */
export type SteerMessage = (text: string) => void;

export class InboxFeeder {
  /** Names handed to pi (or found not to be messages): never looked at again by this process. */
  private readonly done = new Set<string>();
  private accepting = false;
  /** The request under way ended in a tool call and its turn has not ended yet: the wrap-up can go in. */
  private toolTurn = false;
  private stopped = false;
  private watcher: { close(): void } | undefined;
  private poll: { cancel(): void } | undefined;

  constructor(
    private readonly dir: string,
    private readonly steer: SteerMessage,
    private readonly ops: FeederOperations = nodeFeederOperations,
    private readonly pollMs = INBOX_POLL_MS,
  ) {}

  /** Starts watching (messages are handed over only once pi works: `resume`). */
  start(): void {
    if (this.stopped || this.poll) return;
    this.watcher = this.ops.watch(this.dir, () => this.feed());
    this.poll = this.ops.every(this.pollMs, () => this.feed());
  }

  /** pi is working (agent_start, turn_start): it can take steering messages now. */
  resume(): void {
    if (this.stopped) return;
    this.accepting = true;
    this.toolTurn = false;
    this.feed();
  }

  /** The model's reply under way called a tool (its message_end): pi asks the model again after this turn. */
  toolsCalled(): void {
    if (this.stopped) return;
    this.toolTurn = true;
    this.feed();
  }

  /** A turn that called tools ended: what is there now goes into the next request. */
  toolTurnEnds(): void {
    this.feed();
    this.toolTurn = false;
  }

  /** pi finished a turn that called no tool: what is there now still makes this run; nothing after it does. */
  lastChance(): void {
    this.toolTurn = false;
    this.feed();
    this.pause();
  }

  /** pi is ending the run (or a turn ended in an error pi does not go on after): nothing is handed until it works again. */
  pause(): void {
    this.accepting = false;
    this.toolTurn = false;
  }

  /** session_shutdown: nothing more, ever; the watch and the timer are gone. */
  stop(): void {
    this.stopped = true;
    this.accepting = false;
    this.watcher?.close();
    this.poll?.cancel();
    this.watcher = undefined;
    this.poll = undefined;
  }

  /** Whether a message is handed over now (for tests and the wiring's guards). */
  get accepts(): boolean {
    return this.accepting && !this.stopped;
  }

  /**
   * Hands every message not handed yet, in name order; stops at one it cannot read yet, so
   * none overtakes it. The wrap-up (it sorts last) waits for a turn that called a tool.
   */
  feed(): void {
    if (!this.accepts) return;
    const names = this.ops
      .list(this.dir)
      .filter((name) => isInboxMessageName(name) && !this.done.has(name))
      .filter((name) => name !== WRAP_UP_FILE || this.toolTurn)
      .sort();
    for (const name of names) {
      const raw = this.ops.read(path.join(this.dir, name));
      // Gone (the wrapper moved it to delivered/) or not readable yet: try again later.
      if (raw === undefined) return;
      const message = parseInboxMessage(raw);
      this.done.add(name);
      // A file that is not a message (written whole, so it never will be) is passed over.
      if (!message) continue;
      try {
        this.steer(message.text);
      } catch {
        // pi refused (its context went stale at shutdown): the message stays undelivered.
        this.done.delete(name);
        this.pause();
        return;
      }
    }
  }
}
