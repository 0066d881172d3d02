/**
 * File-system checks for paths a process is about to write, made of calls that cannot block:
 * lstat, stat, statfs, realpath and single-level mkdir. A path is never opened to find out
 * what it is (opening a FIFO for writing waits for a reader), a folder chain is made one level
 * at a time (Node's recursive mkdir never returns under /proc), and kernel pseudo-filesystems
 * are refused before anything is tried there.
 */
import fs from "node:fs";
import path from "node:path";

/** statfs magic numbers of kernel pseudo-filesystems: nothing a run writes belongs there. */
const PSEUDO_FILESYSTEMS = new Map<number, string>([
  [0x9fa0, "proc"],
  [0x62656572, "sysfs"],
  [0x1cd1, "devpts"],
  [0x64626720, "debugfs"],
  [0x74726163, "tracefs"],
  [0x73636673, "securityfs"],
  [0x27e0eb, "cgroup"],
  [0x63677270, "cgroup2"],
  [0xcafe4a11, "bpf"],
  [0x62656570, "configfs"],
  [0x6165676c, "pstore"],
  [0xf97cff8c, "selinuxfs"],
  [0x65735543, "fusectl"],
  [0xde5e81e4, "efivarfs"],
  [0x42494e4d, "binfmt_misc"],
  [0x19800202, "mqueue"],
]);
/** Where Linux mounts proc and sysfs, for a system whose statfs says nothing useful. */
const PSEUDO_PREFIXES = ["/proc", "/sys"];

/** A path that cannot take the file: `message` says why, in words, without the path. */
export class PathRefusal extends Error {}

const code = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | undefined)?.code;

/** lstat that answers `undefined` for a path that does not exist (or runs through a non-folder). */
async function lstatOrNone(file: string): Promise<fs.Stats | undefined> {
  try {
    return await fs.promises.lstat(file);
  } catch (err) {
    if (code(err) === "ENOENT" || code(err) === "ENOTDIR") return undefined;
    throw err;
  }
}

/** The nearest existing ancestor of `dir` (itself included) and the names still to be made below it. */
async function existingAncestor(dir: string): Promise<{ existing: string; stat: fs.Stats; missing: string[] }> {
  const missing: string[] = [];
  let current = path.resolve(dir);
  for (;;) {
    const stat = await lstatOrNone(current);
    if (stat) return { existing: current, stat, missing };
    const parent = path.dirname(current);
    if (parent === current) throw new PathRefusal(`its root ${current} does not exist`);
    missing.unshift(path.basename(current));
    current = parent;
  }
}

/** The pseudo-filesystem `dir` is on, if it is on one. */
export async function pseudoFilesystem(dir: string): Promise<string | undefined> {
  try {
    const { type } = await fs.promises.statfs(dir);
    return PSEUDO_FILESYSTEMS.get(type >>> 0);
  } catch {
    // statfs unavailable: the prefixes below still catch the usual mounts
  }
  if (process.platform !== "linux") return undefined;
  const real = await fs.promises.realpath(dir).catch(() => dir);
  const prefix = PSEUDO_PREFIXES.find((p) => real === p || real.startsWith(`${p}/`));
  return prefix ? prefix.slice(1) : undefined;
}

/**
 * Makes `dir` and its missing parents, one level at a time, after checking the nearest
 * existing one: a folder (a symlink to one is fine), not on a pseudo-filesystem. Throws
 * PathRefusal (or the file system's own error) with the reason.
 */
export async function ensureFolder(dir: string): Promise<void> {
  const { existing, stat, missing } = await existingAncestor(dir);
  const isFolder =
    stat.isDirectory() ||
    (stat.isSymbolicLink() && (await fs.promises.stat(existing).catch(() => undefined))?.isDirectory());
  if (!isFolder) throw new PathRefusal(`${existing} is not a folder`);
  const pseudo = await pseudoFilesystem(existing);
  if (pseudo) throw new PathRefusal(`it is on the ${pseudo} pseudo-filesystem (${existing})`);
  let current = existing;
  for (const name of missing) {
    current = path.join(current, name);
    try {
      await fs.promises.mkdir(current);
    } catch (err) {
      // Made meanwhile by someone else: fine if it is a folder.
      if (code(err) !== "EEXIST" || !(await fs.promises.stat(current)).isDirectory()) throw err;
    }
  }
}

/**
 * ensureFolder, once per folder for the caller's lifetime (a run opens several artifacts and
 * its reserve in one folder): each folder is checked and made once, its answer shared.
 */
export function folderMaker(): (dir: string) => Promise<void> {
  const folders = new Map<string, Promise<void>>();
  return (dir) => {
    const key = path.resolve(dir);
    let made = folders.get(key);
    if (!made) {
      made = ensureFolder(key);
      // Shared by every caller; each one that awaits it hears the refusal.
      made.catch(() => undefined);
      folders.set(key, made);
    }
    return made;
  };
}

export type TargetKind = "absent" | "file" | "symlink" | "other";

/** What is at `file` now, without following a symlink or opening anything. */
export async function targetKind(file: string): Promise<TargetKind> {
  const stat = await lstatOrNone(file);
  if (!stat) return "absent";
  if (stat.isSymbolicLink()) return "symlink";
  return stat.isFile() ? "file" : "other";
}

/**
 * Who a path really is, so two paths that name one file are told apart from two files:
 * the real path (symlinked folders resolved; the parts that do not exist yet appended as
 * written) and, for a file that exists, its device and inode (hard links, symlinks to it).
 */
export interface FileIdentity {
  real: string;
  inode?: string;
}

export async function fileIdentity(file: string): Promise<FileIdentity> {
  const absolute = path.resolve(file);
  const { existing, missing } = await existingAncestor(absolute).catch(() => ({
    existing: absolute,
    missing: [] as string[],
  }));
  const realBase = await fs.promises.realpath(existing).catch(() => existing);
  const real = path.join(realBase, ...missing);
  const stat = await fs.promises.stat(absolute).catch(() => undefined);
  return stat ? { real, inode: `${stat.dev}:${stat.ino}` } : { real };
}

/** Whether two identities name one file, or one lies inside the other's path. */
export function identityClash(a: FileIdentity, b: FileIdentity): "same" | "nested" | undefined {
  if (a.real === b.real || (a.inode !== undefined && a.inode === b.inode)) return "same";
  if (a.real.startsWith(`${b.real}${path.sep}`) || b.real.startsWith(`${a.real}${path.sep}`)) return "nested";
  return undefined;
}
