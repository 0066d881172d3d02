/**
 * A disk that fills up, for the reliability script and the tests that need one: a small tmpfs
 * of its own (Linux, as root), and a filler file that takes its last byte. One home for both,
 * so the script's figures and the tests exercise the same full disk.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/**
 * Mounts a tmpfs of `size` (e.g. "16m") on a new temp folder, with at most `inodes` files and
 * folders when given. `{ skip }` says why it could not (not root, no tmpfs); `unmount()`
 * detaches it lazily when a process still holds it.
 * @param {string} size
 * @param {number} [inodes]
 * @returns {{ dir: string, unmount(): void } | { skip: string }}
 */
export function mountTmpfs(size, inodes) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "psa-tmpfs-"));
  const options = inodes === undefined ? `size=${size}` : `size=${size},nr_inodes=${inodes}`;
  const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", options, "tmpfs", dir], { encoding: "utf8" });
  if (mounted.status !== 0) {
    fs.rmdirSync(dir);
    return {
      skip: `no tmpfs could be mounted here (${(mounted.stderr || mounted.error?.message || "").trim().split("\n")[0]})`,
    };
  }
  return {
    dir,
    unmount() {
      // Still busy (a process of a failed run): detach it now, it goes once they are gone.
      if (spawnSync("umount", [dir]).status !== 0) spawnSync("umount", ["-l", dir]);
      fs.rmdirSync(dir);
    },
  };
}

/** File systems with at most this many free inodes have them all taken by fillDisk too. */
const FILLABLE_INODES = 100_000;
/** Big chunks, then smaller, made once: a refill every millisecond must cost next to nothing. */
const FILL_CHUNKS = [1 << 20, 1 << 12, 1].map((size) => Buffer.alloc(size));
/** The next filler file's number, per folder (so a refill tries one name, not thousands). */
const nextFiller = new Map();

/**
 * Fills the file system holding `dir` to its last byte (big chunks, then smaller), through
 * one file named `filler` there, and — on a file system with few inodes (mountTmpfs's
 * `inodes`) — to its last inode, with empty files in `fillers/`. Both: a process that frees
 * some bytes (truncating a file it wrote) still cannot create a file, and one that frees an
 * inode still cannot write into it, so a write slips through only when a whole file is
 * deleted before the next call. Idempotent: call it again to take back what was freed.
 * @param {string} dir
 */
export function fillDisk(dir) {
  const fd = fs.openSync(path.join(dir, "filler"), "a");
  try {
    for (const chunk of FILL_CHUNKS) {
      for (;;) {
        try {
          fs.writeSync(fd, chunk);
        } catch {
          break;
        }
      }
    }
  } finally {
    fs.closeSync(fd);
  }
  if (fs.statfsSync(dir).ffree > FILLABLE_INODES) return;
  const fillers = path.join(dir, "fillers");
  try {
    fs.mkdirSync(fillers);
  } catch (err) {
    if (/** @type {NodeJS.ErrnoException} */ (err).code !== "EEXIST") return;
  }
  for (let n = nextFiller.get(fillers) ?? 0; ; n++) {
    try {
      fs.closeSync(fs.openSync(path.join(fillers, String(n)), "wx"));
    } catch (err) {
      if (/** @type {NodeJS.ErrnoException} */ (err).code === "EEXIST") continue;
      nextFiller.set(fillers, n);
      return;
    }
  }
}
