/**
 * `subagent-wrapper bring <base> <head>`: an isolated agent's work into the working tree of
 * the repository at the cwd, whatever that tree holds — unstaged, staged or untracked changes,
 * in the files the agent changed too. Only the working tree is written: the index (what you
 * staged) and HEAD stay as they are, so `git diff` shows what came in. Each path the agent
 * changed is taken, merged or left in conflict as bring-plan.ts decides; a file is written
 * through a temp file and a rename, so it holds either yours or the result, never half.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { shortCommit } from "../contracts/bring.js";
import { writeFileAtomic } from "../lib/atomic-file.js";
import { git, runGit, stripNewline } from "../lib/git.js";
import { errorText } from "../lib/values.js";
import {
  type BringReport,
  besidePath,
  type ChangedPath,
  conflicts,
  executableAfter,
  formatBring,
  type Outcome,
  type Present,
  parseRawDiff,
  type Side,
  stepFor,
} from "./bring-plan.js";

/** Nothing was done: not a repository, or a commit it does not hold. */
export class BringUsageError extends Error {}

export interface BringOptions {
  /** A folder inside the repository's working tree (default the process's). */
  cwd?: string;
  /** The environment git starts from (default process.env). */
  env?: NodeJS.ProcessEnv;
}

/** What one bring works with: the tree's top folder, the two commits, git's environment, a scratch folder. */
interface Place {
  top: string;
  base: string;
  head: string;
  env: NodeJS.ProcessEnv | undefined;
  scratch: string;
}

const gitIn = (place: Pick<Place, "top" | "env">, args: string[]) =>
  git(args, { cwd: place.top, ...(place.env && { env: place.env }) });

async function topLevel(cwd: string, env: NodeJS.ProcessEnv | undefined): Promise<string> {
  const result = await runGit(["rev-parse", "--show-toplevel"], { cwd, ...(env && { env }) }).catch(() => undefined);
  const top = result?.code === 0 ? stripNewline(result.stdout.toString("utf8")) : "";
  if (!top) throw new BringUsageError(`not inside a git working tree: ${cwd}`);
  return top;
}

async function commitOf(top: string, env: NodeJS.ProcessEnv | undefined, name: string): Promise<string> {
  const args = ["rev-parse", "--verify", "--quiet", "--end-of-options", `${name}^{commit}`];
  const result = await runGit(args, { cwd: top, ...(env && { env }) });
  if (result.code !== 0) throw new BringUsageError(`no commit ${name} in the repository at ${top}`);
  return stripNewline(result.stdout.toString("utf8"));
}

/**
 * Whether a folder on the way to `file` is a symbolic link: git never tracks a path through
 * one, and writing there would write wherever the link points, maybe outside the repository.
 */
async function throughLink(top: string, file: string): Promise<boolean> {
  const parts = file.split("/").slice(0, -1);
  for (let i = 1; i <= parts.length; i++) {
    const stat = await fs.promises.lstat(path.join(top, ...parts.slice(0, i))).catch(() => undefined);
    if (stat?.isSymbolicLink()) return true;
    if (!stat) return false;
  }
  return false;
}

/** What the working tree holds at each path, hashed by git with the path's filters (one git call for all files). */
async function presentStates(place: Place, changes: readonly ChangedPath[]): Promise<Map<string, Present>> {
  const states = new Map<string, Present>();
  const files: Array<{ path: string; executable: boolean }> = [];
  for (const change of changes) {
    if (await throughLink(place.top, change.path)) {
      states.set(change.path, { kind: "other" });
      continue;
    }
    const stat = await fs.promises.lstat(path.join(place.top, change.path)).catch((err: NodeJS.ErrnoException) => err);
    if (stat instanceof Error) states.set(change.path, { kind: stat.code === "ENOENT" ? "absent" : "other" });
    else if (stat.isFile()) files.push({ path: change.path, executable: (stat.mode & 0o111) !== 0 });
    else if (stat.isSymbolicLink())
      states.set(change.path, { kind: "symlink", blob: await linkBlob(place, change.path) });
    else states.set(change.path, { kind: "other" });
  }
  for (let start = 0; start < files.length; start += 200) {
    const batch = files.slice(start, start + 200);
    const out = await gitIn(place, ["hash-object", "--", ...batch.map((file) => file.path)]);
    const blobs = out.split("\n");
    for (const [i, file] of batch.entries()) {
      states.set(file.path, { kind: "file", blob: blobs[i]!, executable: file.executable });
    }
  }
  return states;
}

/** A symbolic link's blob: git stores its target as the content. */
async function linkBlob(place: Place, file: string): Promise<string> {
  const target = path.join(place.scratch, "link-target");
  await fs.promises.writeFile(target, await fs.promises.readlink(path.join(place.top, file)));
  return stripNewline(await gitIn(place, ["hash-object", "--no-filters", "--", target]));
}

/** A blob as it goes into the working tree at `file` (its smudge and line-ending filters applied). */
async function checkedOut(place: Place, file: string, side: Side): Promise<Buffer> {
  if (side.kind === "absent") return Buffer.alloc(0);
  const args = ["cat-file", "--filters", `--path=${file}`, side.blob];
  const result = await runGit(args, { cwd: place.top, ...(place.env && { env: place.env }) });
  if (result.code !== 0) throw new Error(`git ${args.join(" ")} failed: ${result.stderr.trim()}`);
  return result.stdout;
}

/** Writes `side` at `target` (a file, or a symbolic link when its mode says so). */
async function writeSide(place: Place, file: string, target: string, side: Side, executable: boolean): Promise<void> {
  if (side.kind === "absent") return;
  await fs.promises.mkdir(path.dirname(target), { recursive: true });
  if (side.mode === "120000") {
    const link = (await checkedOut(place, file, side)).toString("utf8");
    await fs.promises.rm(target, { force: true });
    await fs.promises.symlink(link, target);
    return;
  }
  await writeFileAtomic(target, await checkedOut(place, file, side), {
    durable: false,
    mode: executable ? 0o755 : 0o644,
  });
}

/** Removes a file the agent deleted, then the folders it leaves empty (git keeps no empty folder). */
async function removeFile(place: Place, file: string): Promise<void> {
  await fs.promises.rm(path.join(place.top, file), { force: true });
  for (let dir = path.dirname(file); dir !== "." && dir !== ""; dir = path.dirname(dir)) {
    const removed = await fs.promises.rmdir(path.join(place.top, dir)).then(
      () => true,
      () => false,
    );
    if (!removed) break;
  }
}

/** The agent's version beside yours, at a free name; the why of the conflict says where it went. */
async function writeBeside(place: Place, change: ChangedPath, why: string): Promise<Outcome> {
  const beside = besidePath(change.path, place.head);
  const target = path.join(place.top, beside);
  const taken = (await fs.promises.lstat(target).catch(() => undefined)) !== undefined;
  if (taken || (await throughLink(place.top, beside))) {
    return {
      path: change.path,
      kind: "conflict",
      why: `${why} — not written, ${taken ? `${beside} exists` : "a folder on the way is a symbolic link"}; it is git show ${shortCommit(place.head)}:${change.path}`,
    };
  }
  await writeSide(place, change.path, target, change.head, false);
  return { path: change.path, kind: "conflict", why: `${why}: ${beside}` };
}

/** A line merge of yours with the agent's change (base → head), written over yours. */
async function mergeFile(place: Place, change: ChangedPath, present: Present): Promise<Outcome> {
  const baseFile = path.join(place.scratch, "base");
  const headFile = path.join(place.scratch, "head");
  await fs.promises.writeFile(baseFile, await checkedOut(place, change.path, change.base));
  await fs.promises.writeFile(headFile, await checkedOut(place, change.path, change.head));
  const labels = ["-L", "yours", "-L", `base ${shortCommit(place.base)}`, "-L", `agent ${shortCommit(place.head)}`];
  const target = path.join(place.top, change.path);
  const result = await runGit(["merge-file", "-p", ...labels, target, baseFile, headFile], {
    cwd: place.top,
    ...(place.env && { env: place.env }),
  });
  // 0: clean; 1-127: that many conflicts, marked in the output; anything else: git could not merge (a binary file).
  if (result.code === null || result.code < 0 || result.code > 127) {
    return writeBeside(place, change, "a binary file both changed: yours is kept, the agent's is beside it");
  }
  await writeFileAtomic(target, result.stdout, {
    durable: false,
    mode: executableAfter(change, present) ? 0o755 : 0o644,
  });
  if (result.code === 0) return { path: change.path, kind: "merged" };
  const markers = `<<<<<<< yours … >>>>>>> agent ${shortCommit(place.head)}`;
  return {
    path: change.path,
    kind: "conflict",
    why: `both changed the same lines: conflict markers in the file (${markers})`,
  };
}

async function bringPath(place: Place, change: ChangedPath, present: Present): Promise<Outcome> {
  const step = stepFor(change, present);
  const target = path.join(place.top, change.path);
  switch (step.kind) {
    case "already": {
      // The same content, but the agent may have changed only its executable bit.
      const executable = executableAfter(change, present);
      if (present.kind !== "file" || present.executable === executable) return { path: change.path, kind: "already" };
      await fs.promises.chmod(target, executable ? 0o755 : 0o644);
      return { path: change.path, kind: "taken" };
    }
    case "take":
      if (change.head.kind === "absent") {
        await removeFile(place, change.path);
        return { path: change.path, kind: "deleted" };
      }
      await writeSide(place, change.path, target, change.head, executableAfter(change, present));
      return { path: change.path, kind: "taken" };
    case "merge":
      return mergeFile(place, change, present);
    case "conflict":
      return step.besideToo
        ? writeBeside(place, change, step.why)
        : { path: change.path, kind: "conflict", why: step.why };
  }
}

/**
 * Brings the changes between `base` and `head` (commits, branches, anything git names a
 * commit by) into the working tree of the repository at `cwd`. Throws BringUsageError when it
 * did nothing; a path it could not write is a conflict that says why, and the others go on.
 */
export async function bringWork(base: string, head: string, options: BringOptions = {}): Promise<BringReport> {
  const env = options.env;
  const top = await topLevel(options.cwd ?? process.cwd(), env);
  const [baseSha, headSha] = [await commitOf(top, env, base), await commitOf(top, env, head)];
  const scratch = await fs.promises.mkdtemp(path.join(os.tmpdir(), "pi-subagent-bring-"));
  const place: Place = { top, base: baseSha, head: headSha, env, scratch };
  try {
    const raw = await gitIn(place, ["diff-tree", "-r", "-z", "--no-renames", "--no-abbrev", baseSha, headSha]);
    // Deletions first, so a folder the agent put where a file was can be made.
    const changes = parseRawDiff(raw).sort(
      (a, b) => Number(b.head.kind === "absent") - Number(a.head.kind === "absent"),
    );
    const states = await presentStates(place, changes);
    const outcomes: Outcome[] = [];
    for (const change of changes) {
      const present = states.get(change.path) ?? { kind: "absent" };
      outcomes.push(
        await bringPath(place, change, present).catch(
          (err: unknown): Outcome => ({
            path: change.path,
            kind: "conflict",
            why: `could not be written (${errorText(err)}): yours is as it was`,
          }),
        ),
      );
    }
    outcomes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    return { base: baseSha, head: headSha, outcomes };
  } finally {
    await fs.promises.rm(scratch, { recursive: true, force: true });
  }
}

/** The CLI: the report on stdout; exit 0 all in, 1 some file in conflict, 2 nothing done. */
export async function bringCommand(base: string, head: string, options: BringOptions = {}): Promise<number> {
  try {
    const report = await bringWork(base, head, options);
    process.stdout.write(`${formatBring(report).join("\n")}\n`);
    return conflicts(report).length > 0 ? 1 : 0;
  } catch (err) {
    process.stderr.write(`subagent-wrapper bring: ${errorText(err)}\n`);
    return err instanceof BringUsageError ? 2 : 1;
  }
}
