/**
 * The runner protocol's lines (contracts/serve-protocol.ts): a byte stream split into frame
 * lines, each bounded. Pure: both sides share it.
 */

/** The longest line either side accepts (a 1 MiB blob chunk is ~1.4 MB of base64). */
export const MAX_FRAME_BYTES = 4 * 1024 * 1024;

/**
 * Splits a byte stream into frame lines, never holding more than MAX_FRAME_BYTES of one line:
 * a longer line is an error at once (not after reading it all). `end()` with a partial line
 * left is a truncated frame.
 */
export class FrameSplitter {
  private parts: Buffer[] = [];
  private size = 0;
  private failed = false;

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly onError: (message: string) => void,
    private readonly maxBytes = MAX_FRAME_BYTES,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    while (!this.failed && start < chunk.length) {
      const newline = chunk.indexOf(10, start);
      const end = newline === -1 ? chunk.length : newline;
      this.size += end - start;
      if (this.size > this.maxBytes) {
        this.fail(`frame longer than ${this.maxBytes} bytes`);
        return;
      }
      this.parts.push(chunk.subarray(start, end));
      if (newline === -1) return;
      const line = Buffer.concat(this.parts).toString("utf8");
      this.parts = [];
      this.size = 0;
      start = newline + 1;
      if (line.trim() !== "") this.onLine(line);
    }
  }

  end(): void {
    if (!this.failed && this.size > 0) this.fail("truncated frame at the end of the stream");
  }

  private fail(message: string): void {
    this.failed = true;
    this.parts = [];
    this.onError(message);
  }
}
