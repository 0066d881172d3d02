/**
 * Follows a JSON Lines file another process is appending to (a run's events.jsonl), reading
 * only the bytes added since the last read. Parsing is the caller's: `tail` reports a damaged
 * line, the extension's progress skips it.
 */
import fs from "node:fs";

/** One whole, non-blank line: its 1-based number in the file and its text (without the newline). */
export interface NumberedLine {
  line: number;
  text: string;
}

export interface FollowedLines {
  /** The whole lines appended since the last read, in order; blank lines are counted but left out. */
  lines: NumberedLine[];
  /** The file shrank, was replaced or went away since the last read: this read started again from its first byte. */
  restarted: boolean;
}

const NOTHING: FollowedLines = { lines: [], restarted: false };

export class JsonlFollower {
  private offset = 0;
  /** Bytes after the last newline: the start of a line still being written, kept undecoded so a character split between two reads stays whole. */
  private pending: Buffer = Buffer.alloc(0);
  private nextLine = 1;
  private identity: { dev: number; ino: number } | undefined;
  private vanished = false;

  /** `maxReadBytes` bounds one read, so a huge file cannot stall a caller that polls often; the rest comes on the next reads. */
  constructor(
    readonly file: string,
    private readonly maxReadBytes = Number.POSITIVE_INFINITY,
  ) {}

  /** The lines appended since the last call; none while the file does not exist. */
  async read(): Promise<FollowedLines> {
    let handle: fs.promises.FileHandle;
    try {
      // O_NONBLOCK: a FIFO in the file's place must not hold the read (and a libuv thread) forever.
      handle = await fs.promises.open(this.file, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0));
    } catch {
      // Gone (or not there yet): whatever appears under the name next is read from its start.
      // Its inode may be the old one's, reused, so it could not be told apart later.
      this.vanished ||= this.identity !== undefined;
      return NOTHING;
    }
    try {
      const stat = await handle.stat();
      if (!stat.isFile()) return NOTHING;
      const replaced =
        this.identity !== undefined && (stat.ino !== this.identity.ino || stat.dev !== this.identity.dev);
      this.identity = { dev: stat.dev, ino: stat.ino };
      const restarted = this.vanished || replaced || stat.size < this.offset;
      this.vanished = false;
      if (restarted) this.restart();
      const length = Math.min(stat.size - this.offset, this.maxReadBytes);
      if (length <= 0) return restarted ? { lines: [], restarted } : NOTHING;
      const chunk = Buffer.alloc(length);
      const { bytesRead } = await handle.read(chunk, 0, length, this.offset);
      this.offset += bytesRead;
      return { lines: this.split(chunk.subarray(0, bytesRead)), restarted };
    } finally {
      await handle.close();
    }
  }

  private split(chunk: Buffer): NumberedLine[] {
    const bytes = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    const end = bytes.lastIndexOf(0x0a) + 1;
    // Copied: a view would keep the whole chunk alive while a long line waits for its end.
    this.pending = Buffer.from(bytes.subarray(end));
    if (end === 0) return [];
    const lines: NumberedLine[] = [];
    const pieces = bytes
      .subarray(0, end - 1)
      .toString("utf8")
      .split("\n");
    for (const text of pieces) {
      if (text.trim() !== "") lines.push({ line: this.nextLine, text });
      this.nextLine += 1;
    }
    return lines;
  }

  private restart(): void {
    this.offset = 0;
    this.pending = Buffer.alloc(0);
    this.nextLine = 1;
  }
}
