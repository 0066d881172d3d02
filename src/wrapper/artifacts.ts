import { once } from "node:events";
import fs from "node:fs";
import path from "node:path";
import ndjson from "ndjson";
import type { EventRecord } from "../contracts/events.js";
import type { ResultV1 } from "../contracts/result.js";

import { writeFileAtomic } from "../lib/atomic-file.js";
import { errorText } from "../lib/values.js";

/**
 * One artifact file written as a stream. Opening and writing never throw: a failure is kept
 * in `error` so the run can report it and still reach result.json.
 */
export class ArtifactFile {
  private constructor(
    readonly label: string,
    readonly filePath: string,
    private stream: fs.WriteStream | undefined,
    public error: string | undefined,
  ) {
    stream?.on("error", (err) => {
      this.error ??= `${label} ${filePath} could not be written: ${errorText(err)}`;
      this.stream = undefined;
    });
  }

  static async open(label: string, filePath: string): Promise<ArtifactFile> {
    try {
      await fs.promises.mkdir(path.dirname(filePath), { recursive: true });
      const handle = await fs.promises.open(filePath, "w");
      return new ArtifactFile(label, filePath, handle.createWriteStream(), undefined);
    } catch (err) {
      return new ArtifactFile(label, filePath, undefined, `${label} ${filePath} could not be written: ${errorText(err)}`);
    }
  }

  get writable(): fs.WriteStream | undefined {
    return this.error === undefined ? this.stream : undefined;
  }

  write(data: string | Buffer): void {
    this.writable?.write(data);
  }

  async close(): Promise<void> {
    const stream = this.stream;
    if (!stream || stream.closed) return;
    const closed = once(stream, "close").catch(() => undefined);
    stream.end();
    await closed;
  }
}

/** events.jsonl: records stamped with `seq` and `ts`, one JSON object a line. */
export class EventsWriter {
  private seq = 0;
  private readonly encoder = ndjson.stringify();

  constructor(readonly file: ArtifactFile) {
    const target = file.writable;
    if (target) this.encoder.pipe(target, { end: false });
  }

  append(record: Omit<EventRecord, "seq" | "ts">, now = Date.now()): EventRecord {
    const stamped = { ...record, seq: ++this.seq, ts: now } as EventRecord;
    if (this.file.writable) this.encoder.write(stamped);
    return stamped;
  }

  async close(): Promise<void> {
    if (this.file.writable) {
      const flushed = once(this.encoder, "end");
      this.encoder.end();
      await flushed;
      this.encoder.unpipe();
    }
    await this.file.close();
  }
}

/** Bytes of raw stdout kept before bulky (delta/snapshot) lines start being dropped. */
export const RAW_LOG_BULKY_CAP = 64 * 1024 * 1024;

/**
 * The child's stdout as it came. Past the cap, bulky lines (message deltas and repeated
 * snapshots) are dropped after one notice; every other line, non-JSON ones included, is kept.
 */
export class RawLog {
  private written = 0;
  private capped = false;

  constructor(
    readonly file: ArtifactFile,
    private readonly cap = RAW_LOG_BULKY_CAP,
  ) {}

  write(bytes: Buffer, bulky: boolean): void {
    if (bulky && this.written >= this.cap) {
      if (!this.capped) {
        this.capped = true;
        this.file.write(`\n[subagent-wrapper: raw log reached ${this.cap} bytes; message deltas and snapshots are omitted from here on]\n`);
      }
      return;
    }
    this.written += bytes.length;
    this.file.write(bytes);
  }
}

/**
 * Write result.json atomically: a temp file beside it, then a rename, so a reader never
 * sees half a result. Throws on failure (the caller reports it).
 */
export async function writeResultAtomic(resultPath: string, result: ResultV1): Promise<void> {
  await writeFileAtomic(resultPath, `${JSON.stringify(result, null, 2)}\n`);
}

/** Whether result.json can be created at this path (its folder can be made and written). */
export async function checkResultPathWritable(resultPath: string): Promise<string | undefined> {
  try {
    const stat = await fs.promises.stat(resultPath).catch(() => undefined);
    if (stat?.isDirectory()) return `resultPath ${resultPath} is a directory`;
    if (stat && !stat.isFile()) return `resultPath ${resultPath} exists and is not a regular file`;
    const dir = path.dirname(resultPath);
    await fs.promises.mkdir(dir, { recursive: true });
    await fs.promises.access(dir, fs.constants.W_OK);
    return undefined;
  } catch (err) {
    return `resultPath ${resultPath} cannot be written: ${errorText(err)}`;
  }
}
