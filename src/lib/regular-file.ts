import fs from "node:fs";

/**
 * What reading a file that other processes (or a damaged disk) share can find. A FIFO, a
 * device or a folder where a file belongs is refused without blocking: a plain `readFile`
 * of a FIFO waits for a writer forever (and holds one of libuv's four threads while it
 * does), and one of /dev/zero never ends.
 */
export type FileRead =
  | { ok: true; text: string }
  | { ok: false; absent: true }
  | { ok: false; absent: false; problem: string };

/** Files the tree shares are small; anything larger is damage, not data to hold in memory. */
export const MAX_SHARED_FILE_BYTES = 64 * 1024 * 1024;

function describeKind(stat: fs.Stats): string {
  if (stat.isDirectory()) return "a folder";
  if (stat.isFIFO()) return "a named pipe";
  if (stat.isSocket()) return "a socket";
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return "a device";
  return "not a regular file";
}

/** Reads a regular file as UTF-8, never blocking on what is not one; symlinks are followed. */
export async function readRegularFile(file: string, maxBytes = MAX_SHARED_FILE_BYTES): Promise<FileRead> {
  let handle: fs.promises.FileHandle;
  try {
    // O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer.
    handle = await fs.promises.open(file, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { ok: false, absent: true };
    return {
      ok: false,
      absent: false,
      problem: code === "ENOTDIR" ? "a file is where a folder belongs" : `cannot be read (${code ?? String(err)})`,
    };
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return { ok: false, absent: false, problem: `is ${describeKind(stat)}, not a file` };
    if (stat.size > maxBytes)
      return { ok: false, absent: false, problem: `is ${stat.size} bytes (more than ${maxBytes})` };
    return { ok: true, text: await handle.readFile("utf8") };
  } catch (err) {
    return {
      ok: false,
      absent: false,
      problem: `cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
    };
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** A regular file's JSON: `problem` says why there is none when the file exists but holds no JSON. */
export type JsonRead =
  | { ok: true; value: unknown }
  | { ok: false; absent: true }
  | { ok: false; absent: false; problem: string };

export async function readJsonFile(file: string, maxBytes = MAX_SHARED_FILE_BYTES): Promise<JsonRead> {
  const read = await readRegularFile(file, maxBytes);
  if (!read.ok) return read;
  const text = read.text.charCodeAt(0) === 0xfeff ? read.text.slice(1) : read.text;
  if (text.trim() === "") return { ok: false, absent: false, problem: "is empty" };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, absent: false, problem: "is not valid JSON (truncated or overwritten)" };
  }
}

/**
 * A regular file's whole text, or why there is none (`absent` for a missing file). Never
 * blocks on a FIFO or reads a device: the synchronous twin of readRegularFile, for code that
 * cannot wait (the CLI, a poll, a wrapper's inbox, a lease's identity).
 */
export function readRegularFileSync(
  file: string,
  maxBytes = MAX_SHARED_FILE_BYTES,
): { text: string } | { absent: true } | { problem: string } {
  let handle: number | undefined;
  try {
    handle = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0));
    const stat = fs.fstatSync(handle);
    if (!stat.isFile()) return { problem: "is not a regular file" };
    if (stat.size > maxBytes) return { problem: `is ${stat.size} bytes (more than ${maxBytes})` };
    return { text: fs.readFileSync(handle, "utf8") };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === "ENOENT" ? { absent: true } : { problem: `cannot be read: ${(err as Error).message}` };
  } finally {
    if (handle !== undefined) fs.closeSync(handle);
  }
}
