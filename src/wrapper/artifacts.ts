import { once } from "node:events";
import fs from "node:fs";
import path from "node:path";
import { ENV } from "../contracts/env.js";
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

/**
 * events.jsonl: records stamped with `seq` and `ts`, one JSON object a line. Each record goes
 * to the file stream as it is made (no batching), so a reader tailing the file sees it within
 * one write. Hand-rolled rather than ndjson.stringify: importing ndjson (through2, split2,
 * readable-stream) cost ~10 ms of every wrapper start for what is `JSON.stringify(x) + "\n"`
 * (docs/performance.md).
 */
export class EventsWriter {
  private seq = 0;

  constructor(readonly file: ArtifactFile) {}

  append(record: Omit<EventRecord, "seq" | "ts">, now = Date.now()): EventRecord {
    const stamped = { ...record, seq: ++this.seq, ts: now } as EventRecord;
    this.file.write(`${JSON.stringify(stamped)}\n`);
    return stamped;
  }

  close(): Promise<void> {
    return this.file.close();
  }
}

/** Default cap of each raw log (stdout.log, stderr.log). */
export const DEFAULT_LOG_MAX_BYTES = 8 * 1024 * 1024;
/** Share of the cap that bulky lines (message deltas and snapshots) may fill. */
const BULKY_SHARE = 8;

export interface LogCaps {
  /** Bytes of the log after which bulky pieces are dropped. */
  bulkyBytes: number;
  /** Bytes of the log after which everything is dropped. */
  maxBytes: number;
}

export const UNCAPPED: LogCaps = { bulkyBytes: Number.POSITIVE_INFINITY, maxBytes: Number.POSITIVE_INFINITY };

/**
 * The raw log caps from the environment: `PI_SUBAGENTS_LOG_MAX_BYTES=N` caps each log at N
 * bytes, bulky lines at N/8; `0` or `unlimited` lifts the cap. Returns an error text for a
 * value that is neither (the default then applies).
 */
export function logCapsFromEnv(env: NodeJS.ProcessEnv): { caps: LogCaps; error?: string } {
  const raw = env[ENV.logMaxBytes]?.trim();
  const capsOf = (max: number): LogCaps => ({ bulkyBytes: Math.floor(max / BULKY_SHARE), maxBytes: max });
  if (raw === undefined || raw === "") return { caps: capsOf(DEFAULT_LOG_MAX_BYTES) };
  if (raw === "0" || raw.toLowerCase() === "unlimited") return { caps: UNCAPPED };
  const value = Number(raw);
  if (Number.isSafeInteger(value) && value > 0) return { caps: capsOf(value) };
  return {
    caps: capsOf(DEFAULT_LOG_MAX_BYTES),
    error: `${ENV.logMaxBytes}=${raw} is not a byte count, 0 or "unlimited"; using ${DEFAULT_LOG_MAX_BYTES}`,
  };
}

/**
 * The child's stdout (or stderr) as it came, within caps. Past `bulkyBytes`, bulky lines
 * (message deltas and repeated snapshots) are dropped after one marker line; every other
 * line, non-JSON ones included, is kept until `maxBytes`, where the log ends with a second
 * marker line. The markers are the only bytes over the cap.
 */
export class RawLog {
  private written = 0;
  private bulkyDropped = false;
  private full = false;

  constructor(
    readonly file: ArtifactFile,
    private readonly caps: LogCaps = logCapsFromEnv({}).caps,
  ) {}

  write(bytes: Buffer, bulky = false): void {
    if (this.full) return;
    if (bulky && this.written >= this.caps.bulkyBytes) {
      if (!this.bulkyDropped) {
        this.bulkyDropped = true;
        this.file.write(
          `\n[subagent-wrapper: raw log reached ${this.caps.bulkyBytes} bytes; message deltas and snapshots are omitted from here on (${ENV.logMaxBytes} raises the cap)]\n`,
        );
      }
      return;
    }
    const room = this.caps.maxBytes - this.written;
    if (bytes.length > room) {
      this.full = true;
      if (room > 0) this.file.write(bytes.subarray(0, room));
      this.written += Math.max(0, room);
      this.file.write(
        `\n[subagent-wrapper: raw log reached its cap of ${this.caps.maxBytes} bytes; the rest is omitted (${ENV.logMaxBytes}=unlimited lifts the cap)]\n`,
      );
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
