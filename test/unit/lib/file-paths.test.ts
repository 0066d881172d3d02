/**
 * The non-blocking path checks (src/lib/file-paths.ts) and the atomic write built on them,
 * on real temp folders: pseudo-filesystems refused, folders made one level at a time, FIFOs
 * never opened, identities compared through symlinked folders and hard links.
 */
import { execFileSync } from "node:child_process";
import { link, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { writeFileAtomic } from "../../../src/lib/atomic-file.js";
import {
  ensureFolder,
  fileIdentity,
  identityClash,
  pseudoFilesystem,
  targetKind,
} from "../../../src/lib/file-paths.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "psa-paths-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const linux = process.platform === "linux";

describe("ensureFolder", () => {
  it("makes a missing chain, one level at a time", async () => {
    await ensureFolder(path.join(dir, "a/b/c"));
    expect((await stat(path.join(dir, "a/b/c"))).isDirectory()).toBe(true);
    await ensureFolder(path.join(dir, "a/b/c")); // and again: nothing to do
  });

  it("goes through a symlinked folder", async () => {
    await mkdir(path.join(dir, "real"));
    await symlink(path.join(dir, "real"), path.join(dir, "link"));
    await ensureFolder(path.join(dir, "link/x"));
    expect((await stat(path.join(dir, "real/x"))).isDirectory()).toBe(true);
  });

  it("refuses a chain below a regular file", async () => {
    await writeFile(path.join(dir, "file"), "");
    await expect(ensureFolder(path.join(dir, "file/x/y"))).rejects.toThrow(`${path.join(dir, "file")} is not a folder`);
  });

  it.skipIf(!linux)(
    "refuses /proc and /sys at once (Node's recursive mkdir would loop under /proc forever)",
    async () => {
      await expect(ensureFolder("/proc/no-such-pid/deep/er")).rejects.toThrow(
        "it is on the proc pseudo-filesystem (/proc)",
      );
      await expect(ensureFolder("/proc/self/fd/new")).rejects.toThrow(/on the proc pseudo-filesystem/);
      await expect(ensureFolder("/sys/kernel/new")).rejects.toThrow(/on the sysfs pseudo-filesystem/);
      expect(await pseudoFilesystem(dir)).toBeUndefined();
    },
  );
});

describe("targetKind: what is there, without opening it", () => {
  it("tells absent, file, symlink and other (a FIFO, which an open would block on)", async () => {
    await writeFile(path.join(dir, "f"), "");
    await symlink(path.join(dir, "f"), path.join(dir, "l"));
    execFileSync("mkfifo", [path.join(dir, "p")]);
    expect(await targetKind(path.join(dir, "none"))).toBe("absent");
    expect(await targetKind(path.join(dir, "f/below"))).toBe("absent");
    expect(await targetKind(path.join(dir, "f"))).toBe("file");
    expect(await targetKind(path.join(dir, "l"))).toBe("symlink");
    expect(await targetKind(path.join(dir, "p"))).toBe("other");
    expect(await targetKind(dir)).toBe("other");
  });
});

describe("fileIdentity and identityClash", () => {
  it("two spellings of one file through a symlinked folder are the same file, also before it exists", async () => {
    await mkdir(path.join(dir, "real"));
    await symlink(path.join(dir, "real"), path.join(dir, "link"));
    const [a, b] = await Promise.all([
      fileIdentity(path.join(dir, "real/events.jsonl")),
      fileIdentity(path.join(dir, "link/events.jsonl")),
    ]);
    expect(identityClash(a, b)).toBe("same");
    const [c, d] = await Promise.all([
      fileIdentity(path.join(dir, "real/new/x.log")),
      fileIdentity(path.join(dir, "link/new/x.log")),
    ]);
    expect(identityClash(c, d)).toBe("same");
  });

  it("a hard link and a symlink to a file are that file", async () => {
    await writeFile(path.join(dir, "events.jsonl"), "");
    await link(path.join(dir, "events.jsonl"), path.join(dir, "hard.log"));
    await symlink(path.join(dir, "events.jsonl"), path.join(dir, "soft.log"));
    const [events, hard, soft] = await Promise.all(
      ["events.jsonl", "hard.log", "soft.log"].map((name) => fileIdentity(path.join(dir, name))),
    );
    expect(identityClash(events!, hard!)).toBe("same");
    expect(identityClash(events!, soft!)).toBe("same");
  });

  it("a file inside the other's path is nested; two files side by side are apart", async () => {
    await mkdir(path.join(dir, "real"));
    await symlink(path.join(dir, "real"), path.join(dir, "link"));
    const [folder, inside, beside] = await Promise.all([
      fileIdentity(path.join(dir, "link/out")),
      fileIdentity(path.join(dir, "real/out/events.jsonl")),
      fileIdentity(path.join(dir, "real/stdout.log")),
    ]);
    expect(identityClash(folder!, inside!)).toBe("nested");
    expect(identityClash(inside!, beside!)).toBeUndefined();
  });
});

describe("writeFileAtomic", () => {
  it("replaces a symlink at the target with the file, never writing through it", async () => {
    await writeFile(path.join(dir, "victim"), "keep me");
    await symlink(path.join(dir, "victim"), path.join(dir, "result.json"));
    await writeFileAtomic(path.join(dir, "result.json"), "new");
    expect(await readFile(path.join(dir, "victim"), "utf8")).toBe("keep me");
    expect(await targetKind(path.join(dir, "result.json"))).toBe("file");
    expect(await readFile(path.join(dir, "result.json"), "utf8")).toBe("new");
  });

  it("refuses a FIFO at the target without opening it", async () => {
    execFileSync("mkfifo", [path.join(dir, "p")]);
    await expect(writeFileAtomic(path.join(dir, "p"), "x")).rejects.toThrow("exists and is not a regular file");
    expect(await targetKind(path.join(dir, "p"))).toBe("other");
  });

  it.skipIf(!linux)("refuses a target under /proc at once", async () => {
    await expect(writeFileAtomic("/proc/no-such-pid/x/result.json", "x")).rejects.toThrow(/proc pseudo-filesystem/);
  });

  it("with and without fsync, the same bytes", async () => {
    await writeFileAtomic(path.join(dir, "a/durable.json"), "one");
    await writeFileAtomic(path.join(dir, "a/quick.json"), "two", { durable: false });
    expect(await readFile(path.join(dir, "a/durable.json"), "utf8")).toBe("one");
    expect(await readFile(path.join(dir, "a/quick.json"), "utf8")).toBe("two");
  });
});
