import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { ensureFolder, targetKind } from "./file-paths.js";

export interface AtomicWriteOptions {
  /**
   * fsync the file before the rename and its folder after it (default true), so the new
   * content survives a power loss and not only a crash. It costs one or two milliseconds
   * a write on a journalling disk (bench/startup.bench.mjs measures it).
   */
  durable?: boolean;
  /** The file's permission bits (default: 0o666 less the umask, as any new file). */
  mode?: number;
}

/** fsync a folder, so a rename in it is on disk. Not every platform can: then it is skipped. */
export async function syncFolder(dir: string): Promise<void> {
  const handle = await fs.promises.open(dir, "r").catch(() => undefined);
  if (!handle) return;
  try {
    await handle.sync();
  } catch {
    // a folder that cannot be fsynced (some file systems, other platforms): best effort
  } finally {
    await handle.close();
  }
}

/**
 * Write a file so a reader (another process of the tree, a script polling for result.json)
 * never sees half of it: a temp file beside it, then a rename. The folder is created, one
 * level at a time and never on a pseudo-filesystem (see file-paths.ts).
 */
/**
 * Where the hidden files a process keeps beside `file` start: `.<name>.<pid>.` — its atomic
 * write's temp files (`<prefix><random>.tmp`) and, for result.json, the wrapper's reserve. One
 * prefix, so whoever cleans up after a killed process (the wrapper's orphan guard) finds them all.
 */
export function hiddenSiblingPrefix(file: string, pid: number = process.pid): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.${pid}.`);
}

export async function writeFileAtomic(
  file: string,
  text: string | Uint8Array,
  options: AtomicWriteOptions = {},
): Promise<void> {
  const dir = path.dirname(file);
  const durable = options.durable ?? true;
  await ensureFolder(dir);
  // The rename would replace whatever is there: never a device, socket, FIFO or folder (a
  // resultPath of /dev/null, run as root, would otherwise delete /dev/null). A symlink is
  // replaced by the file, never written through.
  if ((await targetKind(file)) === "other") throw new Error(`${file} exists and is not a regular file`);
  const temp = `${hiddenSiblingPrefix(file)}${randomBytes(4).toString("hex")}.tmp`;
  try {
    // "wx": a name planted in the folder meanwhile (a symlink included) is never followed.
    const handle = await fs.promises.open(temp, "wx");
    try {
      await handle.writeFile(text, typeof text === "string" ? "utf8" : undefined);
      if (options.mode !== undefined) await handle.chmod(options.mode);
      if (durable) await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.promises.rename(temp, file);
  } catch (err) {
    await fs.promises.rm(temp, { force: true }).catch(() => undefined);
    throw err;
  }
  if (durable) await syncFolder(dir);
}

/** writeFileAtomic of `value` as indented JSON and a final newline. */
export async function writeJsonAtomic(file: string, value: unknown, options: AtomicWriteOptions = {}): Promise<void> {
  await writeFileAtomic(file, `${JSON.stringify(value, null, 2)}\n`, options);
}

/**
 * Creates `file` with `text` only if it does not exist, and never half-written: a complete
 * temp file beside it is linked (link(2) fails on an existing name, so of racing creators
 * exactly one wins). False when `file` was there; other errors throw.
 */
export function createComplete(file: string, text: string, mode = 0o600): boolean {
  const temp = path.join(
    path.dirname(file),
    `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`,
  );
  fs.writeFileSync(temp, text, { mode, flag: "wx" });
  try {
    fs.linkSync(temp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  } finally {
    fs.rmSync(temp, { force: true });
  }
}
