/**
 * Nothing run twice for nothing: a check command's result is kept (meta.json
 * `verify.statePath`, in the agent's folder) with a fingerprint of the workspace's content,
 * and reused while the content and the command are the same. The fingerprint is of content,
 * not of commits: the map path → git blob id of what the files hold now (tracked and
 * untracked, not ignored), so the same files before and after the turn's commit (an isolated
 * child's) are the same workspace. Two git calls read it — the index (`ls-files -s`) and what
 * differs from it (`status`) — and only the files that differ are hashed here.
 */
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { writeJsonAtomic } from "../lib/atomic-file.js";
import { git } from "../lib/git.js";
import { isRecord } from "../lib/values.js";

/** One command's last result, with the workspace it ran on. */
export interface KeptCheck {
  fingerprint: string;
  exitCode: number;
  output: string;
}

/** Git's id of a blob holding `content`: a changed file and an unchanged one hash alike. */
function blobId(content: Buffer): string {
  return createHash("sha1").update(`blob ${content.length}\0`).update(content).digest("hex");
}

/** What a path holds now in the worktree: its blob id, or undefined when it is gone (or a folder: a submodule keeps its index entry). */
async function currentId(top: string, file: string): Promise<string | undefined | "keep"> {
  const full = path.join(top, file);
  const stat = await fs.lstat(full).catch(() => undefined);
  if (!stat) return undefined;
  if (stat.isSymbolicLink()) return blobId(Buffer.from(await fs.readlink(full)));
  if (!stat.isFile()) return "keep";
  return blobId(await fs.readFile(full));
}

/**
 * The fingerprint of `cwd`'s workspace content, or undefined when it is not in a git
 * repository (then nothing is reused: the content cannot be told cheaply).
 */
export async function workspaceFingerprint(cwd: string): Promise<string | undefined> {
  try {
    // All three at once (the fingerprint is on every check's path): paths relative to the top.
    const [topLine, index, status] = await Promise.all([
      git(["rev-parse", "--show-toplevel"], { cwd }),
      git(["ls-files", "-s", "-z", "--full-name", ":/"], { cwd }),
      git(["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=none"], {
        cwd,
      }),
    ]);
    const top = topLine.trim();
    const files = new Map<string, string>();
    for (const entry of index.split("\0")) {
      const tab = entry.indexOf("\t");
      if (tab === -1) continue;
      // `<mode> <object> <stage>\t<path>`: the mode counts (an executable bit is content to a check).
      const [mode, object] = entry.slice(0, tab).split(" ");
      files.set(entry.slice(tab + 1), `${mode} ${object}`);
    }
    const changed = status
      .split("\0")
      .filter((entry) => entry.length > 3)
      .map((entry) => entry.slice(3));
    await Promise.all(
      changed.map(async (file) => {
        const id = await currentId(top, file);
        if (id === "keep") return;
        if (id === undefined) files.delete(file);
        else files.set(file, `${await modeOf(path.join(top, file))} ${id}`);
      }),
    );
    const hash = createHash("sha256");
    for (const file of [...files.keys()].sort()) hash.update(`${file}\0${files.get(file)}\0`);
    return hash.digest("hex");
  } catch {
    return undefined;
  }
}

async function modeOf(full: string): Promise<string> {
  const stat = await fs.lstat(full);
  if (stat.isSymbolicLink()) return "120000";
  return stat.mode & 0o111 ? "100755" : "100644";
}

/** The results kept for an agent, by command. */
export async function readKeptChecks(statePath: string): Promise<Map<string, KeptCheck>> {
  const kept = new Map<string, KeptCheck>();
  const raw = await fs.readFile(statePath, "utf8").catch(() => undefined);
  if (!raw) return kept;
  try {
    const parsed: unknown = JSON.parse(raw);
    if (!isRecord(parsed) || !isRecord(parsed.commands)) return kept;
    for (const [command, value] of Object.entries(parsed.commands)) {
      if (
        isRecord(value) &&
        typeof value.fingerprint === "string" &&
        typeof value.exitCode === "number" &&
        typeof value.output === "string"
      ) {
        kept.set(command, { fingerprint: value.fingerprint, exitCode: value.exitCode, output: value.output });
      }
    }
  } catch {
    // a damaged file: nothing is reused, and the next write replaces it
  }
  return kept;
}

/** Keeps the results (written whole: a reader never sees half a file). */
export async function writeKeptChecks(statePath: string, kept: Map<string, KeptCheck>): Promise<void> {
  await writeJsonAtomic(statePath, { version: 1, commands: Object.fromEntries(kept) });
}
