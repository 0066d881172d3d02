import type { PiEvent } from "./normalize.js";

/**
 * Events whose lines the wrapper never parses. `message_update` and `tool_execution_update`
 * repeat the whole partial message (streams grow quadratically); `message_start` and
 * `turn_end` repeat what `message_end` carries. pi writes `JSON.stringify(event)`, so the
 * type is always the first key and a prefix test is enough; a producer that formats
 * differently is still parsed correctly, only slower.
 */
const SKIPPED_PREFIXES = [
  '{"type":"message_update"',
  '{"type":"tool_execution_update"',
  '{"type":"message_start"',
  '{"type":"turn_end"',
].map((prefix) => Buffer.from(prefix, "latin1"));

/** `agent_end` repeats every message of the run; only its `willRetry` flag matters. */
const SKIMMED_PREFIX = Buffer.from('{"type":"agent_end"', "latin1");
const WILL_RETRY = /"willRetry"\s*:\s*true/;
const SKIM_EDGE_BYTES = 256;

const PROBE_BYTES = 40;
const EMPTY = Buffer.alloc(0);

/** Longest line the wrapper buffers to parse; longer ones are dropped as garbage. */
export const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024;

export interface LineSink {
  /** A parsed event the wrapper may act on. */
  event(event: PiEvent): void;
  /** A line that is not a JSON object with a string `type`, or one over the size limit. */
  garbage(preview: string, bytes: number): void;
  /**
   * Bytes of the child's stdout, in order, each piece flagged `bulky` when it belongs to a
   * skipped or skimmed line (the raw log may drop those once it is over its cap).
   */
  raw(bytes: Buffer, bulky: boolean): void;
}

type Mode = "probe" | "buffer" | "skip" | "skim" | "oversize";

/** Splits the child's stdout into lines and routes each as cheaply as its type allows. */
export class PiLineReader {
  private mode: Mode = "probe";
  private parts: Buffer[] = [];
  private length = 0;
  private skimHead = "";
  private skimTail = EMPTY;

  constructor(
    private readonly sink: LineSink,
    private readonly maxLineBytes = DEFAULT_MAX_LINE_BYTES,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(0x0a, start);
      const end = newline === -1 ? chunk.length : newline + 1;
      this.feed(chunk.subarray(start, end), newline !== -1);
      start = end;
    }
  }

  /** The stream ended: a last line without a newline still counts. */
  end(): void {
    if (this.mode !== "probe" || this.length > 0) this.feed(EMPTY, true);
  }

  private feed(piece: Buffer, complete: boolean): void {
    if (this.mode === "probe" || this.mode === "buffer") {
      this.parts.push(piece);
      this.length += piece.length;
      if (this.mode === "probe" && (this.length >= PROBE_BYTES || complete)) this.classify();
      if (this.mode === "buffer" && this.length > this.maxLineBytes) this.mode = "oversize";
      if (this.mode === "buffer") {
        if (complete) this.finishBufferedLine();
        return;
      }
      if (this.mode === "probe") return;
      // classify() or the size check switched to a streaming mode: hand over what we hold.
      const held = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.length);
      this.parts = [];
      this.streamPiece(held);
    } else {
      this.length += piece.length;
      this.streamPiece(piece);
    }
    if (complete) this.finishStreamedLine();
  }

  private classify(): void {
    const head = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.length);
    const startsWith = (prefix: Buffer) => head.subarray(0, prefix.length).equals(prefix);
    if (SKIPPED_PREFIXES.some(startsWith)) this.mode = "skip";
    else if (startsWith(SKIMMED_PREFIX)) this.mode = "skim";
    else this.mode = "buffer";
  }

  private streamPiece(piece: Buffer): void {
    if (piece.length === 0) return;
    if (this.mode === "skim") {
      if (this.skimHead.length < SKIM_EDGE_BYTES) {
        this.skimHead += piece.subarray(0, SKIM_EDGE_BYTES - this.skimHead.length).toString("latin1");
      }
      const joined = Buffer.concat([this.skimTail, piece]);
      this.skimTail = joined.subarray(Math.max(0, joined.length - SKIM_EDGE_BYTES));
    }
    this.sink.raw(piece, this.mode === "skip" || this.mode === "skim");
  }

  private finishStreamedLine(): void {
    if (this.mode === "skim") {
      const edges = this.skimHead + this.skimTail.toString("latin1");
      this.sink.event({ type: "agent_end", willRetry: WILL_RETRY.test(edges) });
    } else if (this.mode === "oversize") {
      this.sink.garbage(`(line of ${this.length} bytes, over the ${this.maxLineBytes}-byte limit)`, this.length);
    }
    this.reset();
  }

  private finishBufferedLine(): void {
    const bytes = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.length);
    this.sink.raw(bytes, false);
    const length = this.length;
    this.reset();
    const text = bytes.toString("utf8").trim();
    if (text === "") return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      this.sink.garbage(text.slice(0, 200), length);
      return;
    }
    if (typeof parsed === "object" && parsed !== null && typeof (parsed as PiEvent).type === "string") {
      this.sink.event(parsed as PiEvent);
    } else {
      this.sink.garbage(text.slice(0, 200), length);
    }
  }

  private reset(): void {
    this.mode = "probe";
    this.parts = [];
    this.length = 0;
    this.skimHead = "";
    this.skimTail = EMPTY;
  }
}
