import fs from "node:fs";

/**
 * The last `maxBytes` of a regular file as UTF-8 (a cut character at the start shows as
 * U+FFFD), or undefined when there is none: missing, empty, unreadable, or not a regular
 * file. Opened with O_NONBLOCK, so a FIFO where a log belongs cannot block the caller.
 */
export function readFileTail(file: string, maxBytes: number): string | undefined {
  let handle: number | undefined;
  try {
    handle = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0));
    const stat = fs.fstatSync(handle);
    if (!stat.isFile() || stat.size === 0) return undefined;
    const length = Math.min(stat.size, maxBytes);
    const buffer = Buffer.alloc(length);
    fs.readSync(handle, buffer, 0, length, stat.size - length);
    return buffer.toString("utf8");
  } catch {
    return undefined;
  } finally {
    if (handle !== undefined) fs.closeSync(handle);
  }
}
