/**
 * Nothing run twice for nothing: a check command's result is kept (meta.json
 * `verify.statePath`, in the agent's folder) with a fingerprint of the workspace's content,
 * and reused while the content and the command are the same. The fingerprint is of content,
 * not of commits: the map path → git blob id of what the files hold now (tracked and
 * untracked, not ignored), so the same files before and after the turn's commit (an isolated
 * child's) are the same workspace. One git call reads it — the index and what differs from it
 * (`ls-files -s -m -d -o`) — and only the files that differ are hashed here.
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

/**
 * The fingerprint of `cwd`'s workspace content, or undefined when it is not in a git
 * repository (then nothing is reused: the content cannot be told cheaply). One git call lists
 * it all, tagged (the fingerprint is on every check's path, and a process is what costs):
 * every index entry with its blob id, then what differs from the index — changed (`C`),
 * deleted (`R`), untracked and not ignored (`?`) — whose current ids are taken here from the
 * files themselves. The index's lines, with those put in as a commit would, are the content
 * (`<mode> <object> <stage>\t<path>`: the mode counts, an executable bit is content to a check).
 */
export async function workspaceFingerprint(cwd: string): Promise<string | undefined> {
  try {
    const [listing, top] = await Promise.all([
      git(["ls-files", "-z", "--full-name", "-t", "-s", "-m", "-d", "-o", "--exclude-standard", ":/"], { cwd }),
      repositoryTop(cwd),
    ]);
    const lines: string[] = [];
    /** Changed paths and their line (the index's entry for a path comes just before its `C`/`R`). */
    const changed = new Map<string, number>();
    const untracked: string[] = [];
    for (const entry of listing.split("\0")) {
      if (entry[0] === "?") {
        untracked.push(entry.slice(2));
        continue;
      }
      const tab = entry.indexOf("\t");
      if (tab === -1) continue;
      if (entry[0] === "C" || entry[0] === "R") {
        const file = entry.slice(tab + 1);
        if (!changed.has(file)) changed.set(file, lineOf(lines, file));
      } else lines.push(entry.slice(2));
    }
    const fresh: string[] = [];
    await Promise.all([
      ...[...changed].map(async ([file, at]) => {
        const line = await currentLine(top, file);
        if (line !== "keep" && at !== -1) lines[at] = line ?? "";
      }),
      ...untracked.map(async (file) => {
        const line = await currentLine(top, file);
        if (line && line !== "keep") fresh.push(line);
      }),
    ]);
    const content = fresh.length > 0 ? [...inIndexOrder(lines, fresh)] : lines;
    return createHash("sha256")
      .update(content.filter((line) => line !== "").join("\0"))
      .digest("hex");
  } catch {
    return undefined;
  }
}

/** The line of `file` among the index's lines: the last one, as a rule. */
function lineOf(lines: string[], file: string): number {
  const last = lines.length - 1;
  if (last >= 0 && lines[last]!.endsWith(`\t${file}`)) return last;
  return lines.findIndex((line) => line.slice(line.indexOf("\t") + 1) === file);
}

/** The index line `file` would have now: undefined when it is gone, `keep` for a folder (a submodule keeps its entry). */
async function currentLine(top: string, file: string): Promise<string | undefined | "keep"> {
  const full = path.join(top, file);
  const stat = await fs.lstat(full).catch(() => undefined);
  if (!stat) return undefined;
  if (stat.isSymbolicLink()) return `120000 ${blobId(Buffer.from(await fs.readlink(full)))} 0\t${file}`;
  if (!stat.isFile()) return "keep";
  const mode = stat.mode & 0o111 ? "100755" : "100644";
  return `${mode} ${blobId(await fs.readFile(full))} 0\t${file}`;
}

/**
 * The index's lines (in its order) with the `fresh` ones (new files) merged in where they
 * belong: sorting only the few new ones keeps a 10 000-file workspace cheap. Paths compare
 * as UTF-16 code units, which is the index's byte order for every path without characters
 * beyond U+FFFF (there it may differ, and a result is not reused: never wrongly).
 */
function* inIndexOrder(lines: string[], fresh: string[]): Generator<string> {
  const pathOf = (line: string) => line.slice(line.indexOf("\t") + 1);
  const next = fresh.map((line) => ({ line, file: pathOf(line) })).sort((a, b) => (a.file < b.file ? -1 : 1));
  let at = 0;
  for (const line of lines) {
    if (at < next.length && line !== "") {
      const file = pathOf(line);
      while (at < next.length && next[at]!.file < file) yield next[at++]!.line;
    }
    yield line;
  }
  while (at < next.length) yield next[at++]!.line;
}

/**
 * The repository's top above `cwd`: the nearest folder holding `.git` (a folder, or a
 * worktree's file), as git finds it (git.ts drops the variables that would point elsewhere).
 */
async function repositoryTop(cwd: string): Promise<string> {
  let at = path.resolve(cwd);
  for (;;) {
    if (
      await fs.lstat(path.join(at, ".git")).then(
        () => true,
        () => false,
      )
    )
      return at;
    const up = path.dirname(at);
    if (up === at) return (await git(["rev-parse", "--show-toplevel"], { cwd })).trim();
    at = up;
  }
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
  // Whole but not synced to disk: a cache, whose loss (a crash) only runs a check once more.
  await writeJsonAtomic(statePath, { version: 1, commands: Object.fromEntries(kept) }, { durable: false });
}
