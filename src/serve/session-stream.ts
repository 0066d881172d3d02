/**
 * The far side's session stream (protocol 2 with `session_stream`): what pi appends to its
 * session file during the turn goes to the local side as `session_append` frames, so a
 * connection lost mid-turn leaves the local session file with the conversation so far. pi
 * appends whole JSON lines; the stream sends up to the last line's end it sees, in pieces of
 * at most SESSION_APPEND_BYTES (a longer line in several pieces), counted from the session the
 * turn started with. It wakes on fs.watch of the run folder and on a short poll (a watch can
 * miss events or be unavailable), reads at most STREAM_TICK_BYTES a wake and none while the
 * output has not drained what went before (a slow connection holds no growing backlog of
 * session pieces: they wait in the file), and stops for good
 * when the file is rewritten (shorter, or the bytes before its position changed) or passes the
 * session bound: the whole `session` blob at the end of the turn then carries it, as it always does.
 */
import fs from "node:fs";
import path from "node:path";
import { MAX_BLOB_BYTES, SESSION_APPEND_BYTES, type SessionAppend } from "../contracts/serve-protocol.js";

export const STREAM_POLL_MS = 250;
/** The most bytes one wake sends (the rest on the next). */
export const STREAM_TICK_BYTES = 16 * SESSION_APPEND_BYTES;
/** Bytes before the stream's position compared at each wake: a rewrite of the file stops the stream. */
const TAIL_BYTES = 64;

export class SessionStream {
  /** Bytes of the file sent (from the file's start: the session the turn started with counts as sent). */
  private position: number;
  private readonly startBytes: number;
  private tail: Buffer;
  private watcher: fs.FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  /** `start`: the session the turn started with, as written into `file` (empty for a new one). */
  constructor(
    private readonly file: string,
    start: Buffer,
    private readonly send: (frame: SessionAppend) => void,
    /** False while the output is full: the wake sends nothing, the next one catches up. */
    private readonly ready: () => boolean = () => true,
    private readonly pollMs = STREAM_POLL_MS,
  ) {
    this.position = start.length;
    this.startBytes = start.length;
    this.tail = Buffer.from(start.subarray(Math.max(0, start.length - TAIL_BYTES)));
  }

  begin(): void {
    try {
      this.watcher = fs.watch(path.dirname(this.file), (_event, name) => {
        if (name === null || name === path.basename(this.file)) this.tick();
      });
      this.watcher.on("error", () => this.unwatch());
    } catch {
      // no watch here: the poll alone
    }
    this.timer = setInterval(() => this.tick(), this.pollMs);
    this.timer.unref();
  }

  /** Sends what is new; returns how many bytes went. */
  tick(): number {
    if (this.stopped || !this.ready()) return 0;
    let fd: number | undefined;
    try {
      fd = fs.openSync(this.file, "r");
      return this.sendFrom(fd);
    } catch {
      return 0; // not written yet (a new session), or gone
    } finally {
      if (fd !== undefined) fs.closeSync(fd);
    }
  }

  private sendFrom(fd: number): number {
    const size = fs.fstatSync(fd).size;
    if (size < this.position || !this.tailHolds(fd)) {
      this.stop(); // rewritten: the end-of-turn blob carries it
      return 0;
    }
    let sent = 0;
    while (sent < STREAM_TICK_BYTES && this.position < size) {
      const piece = Buffer.alloc(Math.min(SESSION_APPEND_BYTES, size - this.position));
      const read = fs.readSync(fd, piece, 0, piece.length, this.position);
      const lineEnd = piece.lastIndexOf(10, read - 1);
      // A whole piece without a line's end is part of a long line; a short one is a line still being written.
      const length = lineEnd >= 0 ? lineEnd + 1 : read === SESSION_APPEND_BYTES ? read : 0;
      if (length === 0) break;
      if (this.position + length - this.startBytes > MAX_BLOB_BYTES.session) {
        this.stop();
        break;
      }
      const data = piece.subarray(0, length);
      this.send({ t: "session_append", at: this.position - this.startBytes, data: data.toString("base64") });
      this.position += length;
      this.tail = Buffer.from(Buffer.concat([this.tail, data]).subarray(-TAIL_BYTES));
      sent += length;
    }
    return sent;
  }

  private tailHolds(fd: number): boolean {
    if (this.tail.length === 0) return true;
    const now = Buffer.alloc(this.tail.length);
    const read = fs.readSync(fd, now, 0, now.length, this.position - this.tail.length);
    return read === now.length && now.equals(this.tail);
  }

  private unwatch(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }

  /** No more frames (pi is gone and the whole session goes next, or the run is over). */
  stop(): void {
    this.stopped = true;
    this.unwatch();
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
