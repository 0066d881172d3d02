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
 * Mounts a tmpfs of `size` (e.g. "16m") on a new temp folder. `{ skip }` says why it could not
 * (not root, no tmpfs); `unmount()` detaches it lazily when a process still holds it.
 * @param {string} size
 * @returns {{ dir: string, unmount(): void } | { skip: string }}
 */
export function mountTmpfs(size) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "psa-tmpfs-"));
  const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir], { encoding: "utf8" });
  if (mounted.status !== 0) {
    fs.rmdirSync(dir);
    return { skip: `no tmpfs could be mounted here (${(mounted.stderr || mounted.error?.message || "").trim().split("\n")[0]})` };
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

/**
 * Fills the file system holding `dir` to its last byte (big chunks, then smaller), through
 * one file named `filler` there. Idempotent: call it again to take back what was freed.
 * @param {string} dir
 */
export function fillDisk(dir) {
  const fd = fs.openSync(path.join(dir, "filler"), "a");
  try {
    for (const size of [1 << 20, 1 << 12, 1]) {
      const chunk = Buffer.alloc(size);
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
}
