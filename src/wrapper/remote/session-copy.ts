/**
 * The local copy of the far side's session during a turn (protocol 2 with `session_stream`):
 * `session_append` pieces are appended to meta.json `sessionPath` in order, whole lines only
 * (a line that came in several pieces is written once its end arrived), so the file is always
 * a session pi can read — the one the turn started with plus the lines pi wrote since. A piece
 * out of order (a gap) or past the session bound stops the copy: what is written stays, and
 * the whole `session` blob at the end of the turn, the authority, replaces the file when it comes.
 * A new session's header (an agent's first turn) names the local working folder, not the far
 * side's scratch workspace, as the end-of-turn copy does (remote-child.ts), so that the file
 * works here too; a follow-up's header was written before the turn and stays as it was.
 */
import fs from "node:fs";
import { MAX_BLOB_BYTES, type SessionAppend, sessionHere } from "../../contracts/serve-protocol.js";

export class SessionCopy {
  /** Bytes of the stream taken (the `at` the next piece must carry). */
  private received = 0;
  /** The end of a line still coming. */
  private pending: Buffer[] = [];
  private broken: string | undefined;
  /** The file holds no session yet: the first line written is pi's header. */
  private fresh: boolean;

  constructor(
    private readonly file: string,
    private readonly cwd: string,
  ) {
    this.fresh = !fs.existsSync(file) || fs.statSync(file).size === 0;
  }

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
    let whole: Buffer = Buffer.concat([...this.pending, data.subarray(0, lineEnd + 1)]);
    if (this.fresh) whole = sessionHere(whole, this.cwd);
    this.fresh = false;
    this.pending = lineEnd + 1 < data.length ? [data.subarray(lineEnd + 1)] : [];
    try {
      fs.appendFileSync(this.file, whole, { mode: 0o600 });
    } catch (err) {
      this.broken = `cannot write the session: ${(err as Error).message}`;
    }
  }
}
