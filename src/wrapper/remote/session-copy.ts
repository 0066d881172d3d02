/**
 * The local copy of the far side's session during a turn (protocol 2 with `session_stream`):
 * `session_append` pieces are appended to meta.json `sessionPath` in order, whole lines only
 * (a line that came in several pieces is written once its end arrived), so the file is always
 * a session pi can read — the one the turn started with plus the lines pi wrote since. A piece
 * out of order (a gap) or past the session bound stops the copy: what is written stays, and
 * the whole `session` blob at the end of the turn, the authority, replaces the file when it comes.
 */
import fs from "node:fs";
import { MAX_BLOB_BYTES, type SessionAppend } from "../../contracts/serve-protocol.js";

export class SessionCopy {
  /** Bytes of the stream taken (the `at` the next piece must carry). */
  private received = 0;
  /** The end of a line still coming. */
  private pending: Buffer[] = [];
  private broken: string | undefined;

  constructor(private readonly file: string) {}

  /** Why the copy stopped, if it did. */
  get problem(): string | undefined {
    return this.broken;
  }

  take(frame: SessionAppend): void {
    if (this.broken) return;
    if (frame.at !== this.received) {
      this.broken = `a session piece at ${frame.at}, expected ${this.received}`;
      return;
    }
    const data = Buffer.from(frame.data, "base64");
    this.received += data.length;
    if (this.received > MAX_BLOB_BYTES.session) {
      this.broken = `the session passed its bound of ${MAX_BLOB_BYTES.session} bytes`;
      return;
    }
    const lineEnd = data.lastIndexOf(10);
    if (lineEnd === -1) {
      this.pending.push(data);
      return;
    }
    const whole = Buffer.concat([...this.pending, data.subarray(0, lineEnd + 1)]);
    this.pending = lineEnd + 1 < data.length ? [data.subarray(lineEnd + 1)] : [];
    try {
      fs.appendFileSync(this.file, whole, { mode: 0o600 });
    } catch (err) {
      this.broken = `cannot write the session: ${(err as Error).message}`;
    }
  }
}
