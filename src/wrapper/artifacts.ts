import { randomBytes } from "node:crypto";
import { once } from "node:events";
import fs from "node:fs";
import path from "node:path";
import { ENV } from "../contracts/env.js";
import type { EventRecord } from "../contracts/events.js";
import type { ResultV1 } from "../contracts/result.js";
import { hiddenSiblingPrefix, syncFolder, writeFileAtomic } from "../lib/atomic-file.js";
import { ensureFolder, PathRefusal, targetKind } from "../lib/file-paths.js";
import { errorText } from "../lib/values.js";

const { O_WRONLY, O_CREAT, O_TRUNC } = fs.constants;
// Not on every platform; where they are missing the lstat checks before the open still hold.
const O_NOFOLLOW = fs.constants.O_NOFOLLOW ?? 0;
const O_NONBLOCK = fs.constants.O_NONBLOCK ?? 0;

/**
 * Opens an artifact for streaming without ever blocking or writing through a link: the folder
 * is checked and made (file-paths.ts), a symlink or a non-regular file (a FIFO, whose open
 * would wait for a reader; a device) is refused, and the open itself carries O_NOFOLLOW and
 * O_NONBLOCK in case the path changed in between (a FIFO then fails at once with ENXIO).
 */
async function openArtifact(filePath: string, ensure: (dir: string) => Promise<void>): Promise<fs.promises.FileHandle> {
  await ensure(path.dirname(filePath));
  const kind = await targetKind(filePath);
  if (kind === "symlink") throw new PathRefusal("it is a symbolic link (an artifact is never written through one)");
  if (kind === "other") throw new PathRefusal("it exists and is not a regular file");
  const handle = await fs.promises.open(filePath, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK, 0o666);
  if (!(await handle.stat()).isFile()) {
    await handle.close();
    throw new PathRefusal("it is not a regular file");
  }
  return handle;
}

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

  /** `ensure` makes the file's folder (a run shares one folderMaker among its files). */
  static async open(
    label: string,
    filePath: string,
    ensure: (dir: string) => Promise<void> = ensureFolder,
  ): Promise<ArtifactFile> {
    try {
      const handle = await openArtifact(filePath, ensure);
      return new ArtifactFile(label, filePath, handle.createWriteStream(), undefined);
    } catch (err) {
      return new ArtifactFile(
        label,
        filePath,
        undefined,
        `${label} ${filePath} could not be written: ${errorText(err)}`,
      );
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

  /** `now`: the run clock's time, the record's `ts`. */
  append(record: Omit<EventRecord, "seq" | "ts">, now: number): EventRecord {
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

const resultText = (result: ResultV1): string => `${JSON.stringify(result, null, 2)}\n`;

/**
 * Write result.json atomically: a temp file beside it, then a rename, so a reader never
 * sees half a result. Throws on failure (the caller reports it).
 */
export async function writeResultAtomic(resultPath: string, result: ResultV1): Promise<void> {
  await writeFileAtomic(resultPath, resultText(result));
}

/** Bytes kept beside result.json from before the child starts, for a result written on a full disk. */
export const RESULT_RESERVE_BYTES = 64 * 1024;

/**
 * Disk space for result.json, taken before the child starts: a hidden file beside it
 * (`.result.json.<pid>.reserve`) filled with `bytes` random bytes (random, so a compressing
 * file system still allocates them). When the ordinary write fails (the disk filled up during
 * the run), the result is written over those bytes and the file renamed into place: overwriting
 * allocated blocks needs no new ones. Not on a copy-on-write file system (btrfs, ZFS), which
 * allocates anew for every overwrite.
 */
export class ResultReserve {
  private constructor(
    readonly file: string,
    readonly bytes: number,
  ) {}

  static pathFor(resultPath: string): string {
    return `${hiddenSiblingPrefix(resultPath)}reserve`;
  }

  /** Takes the space; throws (ENOSPC when the disk is already full) when it cannot. */
  static async create(
    resultPath: string,
    bytes = RESULT_RESERVE_BYTES,
    ensure: (dir: string) => Promise<void> = ensureFolder,
  ): Promise<ResultReserve> {
    const file = ResultReserve.pathFor(resultPath);
    await ensure(path.dirname(file));
    // Never through a link planted at that name; a leftover of an earlier wrapper with this pid is reused.
    const handle = await fs.promises.open(file, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK, 0o600);
    try {
      await handle.writeFile(randomBytes(bytes));
      await handle.close();
    } catch (err) {
      await handle.close().catch(() => undefined);
      await fs.promises.rm(file, { force: true }).catch(() => undefined);
      throw err;
    }
    return new ResultReserve(file, bytes);
  }

  /** Writes `text` over the reserved bytes and renames the file to `resultPath`. */
  async commit(resultPath: string, text: string): Promise<void> {
    const data = Buffer.from(text, "utf8");
    if (data.length > this.bytes)
      throw new Error(`the result (${data.length} bytes) is larger than its reserve (${this.bytes})`);
    const handle = await fs.promises.open(this.file, "r+");
    try {
      await handle.write(data, 0, data.length, 0);
      await handle.truncate(data.length);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.promises.rename(this.file, resultPath);
    await syncFolder(path.dirname(resultPath));
  }

  /** Gives the space back (after the ordinary write succeeded). */
  release(): Promise<void> {
    return fs.promises.rm(this.file, { force: true }).catch(() => undefined);
  }
}

/**
 * The result as it fits in `bytes`: unchanged when it does, else with its finalText cut
 * (and errorMessage saying so). The outcome fields stay true.
 */
export function resultWithin(result: ResultV1, bytes: number): ResultV1 {
  let fitted = result;
  while (Buffer.byteLength(resultText(fitted)) > bytes && fitted.finalText.length > 0) {
    // Cut by bytes (JSON escapes may need more rounds); a character split in two is dropped.
    const keep = Buffer.byteLength(fitted.finalText) - (Buffer.byteLength(resultText(fitted)) - bytes) - 256;
    const finalText =
      keep <= 0 ? "" : new TextDecoder().decode(Buffer.from(fitted.finalText).subarray(0, keep)).replace(/\uFFFD$/, "");
    const note = `finalText cut from ${result.finalText.length} to ${finalText.length} characters to fit the space reserved for result.json`;
    fitted = { ...result, finalText, errorMessage: result.errorMessage ? `${result.errorMessage}; ${note}` : note };
  }
  return fitted;
}

export type ResultWrite = (resultPath: string, text: string) => Promise<void>;

/**
 * result.json, whatever the disk: the ordinary atomic write, else (it failed: the disk is
 * full, say) the reserve, with errorMessage telling why. Resolves with the result as
 * written; throws only when both ways fail. `write` is the ordinary write (a test injects a
 * failing one).
 */
export async function writeResult(
  resultPath: string,
  result: ResultV1,
  reserve: ResultReserve | undefined,
  write: ResultWrite = writeFileAtomic,
): Promise<{ written: ResultV1; fromReserve: boolean }> {
  try {
    await write(resultPath, resultText(result));
    await reserve?.release();
    return { written: result, fromReserve: false };
  } catch (err) {
    if (!reserve) throw err;
    const why = `result.json was written into the space reserved for it (${errorText(err)})`;
    const written = resultWithin(
      { ...result, errorMessage: result.errorMessage ? `${result.errorMessage}; ${why}` : why },
      reserve.bytes,
    );
    try {
      await reserve.commit(resultPath, resultText(written));
    } catch {
      await reserve.release();
      throw err;
    }
    return { written, fromReserve: true };
  }
}

/** Whether result.json can be created at this path (its folder can be made and written). */
export async function checkResultPathWritable(resultPath: string): Promise<string | undefined> {
  try {
    if ((await targetKind(resultPath)) === "other") {
      const stat = await fs.promises.stat(resultPath);
      return stat.isDirectory()
        ? `resultPath ${resultPath} is a directory`
        : `resultPath ${resultPath} exists and is not a regular file`;
    }
    const dir = path.dirname(resultPath);
    await ensureFolder(dir);
    await fs.promises.access(dir, fs.constants.W_OK);
    return undefined;
  } catch (err) {
    return `resultPath ${resultPath} cannot be written: ${errorText(err)}`;
  }
}
