/**
 * The far side's scratch space: a folder of its own holding the workspace (a git checkout of
 * the bundle that came over the wire) and the run's files (task, session, system prompt,
 * inbox). Every path written here is one this module names, checked to stay inside the
 * scratch folder; git runs by argv (never a shell), with hooks off and objects checked as
 * they are fetched (a tree entry `..` or `.git` is refused by git's fsck before any checkout).
 * A workspace named by a key (protocol 2) is kept after its turn under the scratch root
 * (`subagent-keep-<hash of the key>`) and claimed whole by the next turn with that key (one
 * rename: two far sides never share it); kept workspaces untouched for KEEP_MAX_AGE_MS are
 * removed by the next far side that looks into the root.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { isInsidePath, MAX_HAVES, SERVE_ENV } from "../contracts/serve-protocol.js";

/** The far side's git commits of a turn: never the user's identity, never their hooks. */
const GIT_CONFIG = [
  "-c",
  "core.hooksPath=/dev/null",
  "-c",
  "user.name=subagent",
  "-c",
  "user.email=subagent@localhost",
  "-c",
  "commit.gpgSign=false",
  "-c",
  "fetch.fsckObjects=true",
  "-c",
  "transfer.fsckObjects=true",
  "-c",
  "core.autocrlf=false",
  // No gc behind the far side's back (a detached gc would outlive it).
  "-c",
  "gc.auto=0",
  // A kept workspace's own config (the last turn's child could write it) runs nothing here.
  "-c",
  "core.fsmonitor=false",
];
const GIT_TIMEOUT_MS = 120_000;
const BASE_BRANCH = "base";
/** A kept workspace no turn claimed for this long is removed (a far side that never sees its agent's close). */
export const KEEP_MAX_AGE_MS = 24 * 60 * 60 * 1000;
const KEEP_PREFIX = "subagent-keep-";
/** How many symlinks the child's cwd may pass through (a loop of links is refused, not followed forever). */
const MAX_CWD_LINKS = 40;
/** How much of a bundle's start its header may take. */
const MAX_BUNDLE_HEADER_BYTES = 1024 * 1024;

/** The folder scratch spaces and kept workspaces live in: SERVE_ENV.root, else the system's temporary folder. */
export function serveRoot(env: NodeJS.ProcessEnv = process.env): string {
  const root = env[SERVE_ENV.root]?.trim();
  return root && path.isAbsolute(root) ? root : os.tmpdir();
}

/** The kept workspace's folder of `key` below `root`: a hash, so no key can name a path. */
export const keptFolder = (root: string, key: string): string =>
  path.join(root, `${KEEP_PREFIX}${createHash("sha256").update(key).digest("hex").slice(0, 40)}`);

/** What a bundle's header says: the commits it needs (prerequisites) and its refs. */
export interface BundleHeader {
  prerequisites: string[];
  refs: Array<{ commit: string; name: string }>;
}

/** The header of a git bundle (v2 or v3), or what is wrong with it. */
export function bundleHeader(bundle: Buffer): BundleHeader | string {
  const end = bundle.subarray(0, MAX_BUNDLE_HEADER_BYTES).indexOf("\n\n");
  if (end === -1) return "the bundle has no header";
  const [signature, ...lines] = bundle.subarray(0, end).toString("utf8").split("\n");
  if (signature !== "# v2 git bundle" && signature !== "# v3 git bundle") return "not a git bundle";
  const header: BundleHeader = { prerequisites: [], refs: [] };
  for (const line of lines) {
    if (line.startsWith("@")) continue; // a v3 capability
    const prerequisite = /^-([0-9a-f]{40,64})(?: .*)?$/.exec(line);
    const ref = /^([0-9a-f]{40,64}) (refs\/[\w./-]+)$/.exec(line);
    if (prerequisite) header.prerequisites.push(prerequisite[1]!);
    else if (ref) header.refs.push({ commit: ref[1]!, name: ref[2]! });
    else return `the bundle's header has a line git does not write: ${line.slice(0, 80)}`;
  }
  return header;
}

/** Removes kept workspaces below `root` that no turn claimed for KEEP_MAX_AGE_MS. */
function pruneKept(root: string, now: number): void {
  let names: string[] = [];
  try {
    names = fs.readdirSync(root).filter((name) => name.startsWith(KEEP_PREFIX));
  } catch {
    return;
  }
  for (const name of names) {
    const folder = path.join(root, name);
    try {
      if (now - fs.statSync(folder).mtimeMs > KEEP_MAX_AGE_MS) fs.rmSync(folder, { recursive: true, force: true });
    } catch {
      // gone meanwhile
    }
  }
}

export class WorkspaceError extends Error {}

/**
 * Where the symlink `link` leads, as names still to walk: from its own folder (a relative
 * target), or from `top` (an absolute one, refused when it is not below `top`).
 */
function linkHop(link: string, top: string): { names: string[]; from?: string } | undefined {
  const target = fs.readlinkSync(link);
  if (!path.isAbsolute(target)) return { names: target.split("/") };
  const resolved = path.resolve(target);
  return within(top, resolved) ? { names: path.relative(top, resolved).split(path.sep), from: top } : undefined;
}

/** Whether the real path `inner` is `outer` or below it. */
function within(outer: string, inner: string): boolean {
  const rel = path.relative(outer, inner);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

const CONTEXT_FILES = ["AGENTS.md", "CLAUDE.md"];

/** Whether pi may read `name` before its first tool call in `cwd` (so it is written first). */
function startsEarly(name: string, cwd: string): boolean {
  if (!name.includes("/")) return true;
  const prefixes = [".pi/", ".agents/"];
  if (cwd !== "") prefixes.push(`${cwd}/.pi/`, `${cwd}/.agents/`);
  if (prefixes.some((prefix) => name.startsWith(prefix))) return true;
  const slash = name.lastIndexOf("/");
  const dir = name.slice(0, slash);
  return CONTEXT_FILES.includes(name.slice(slash + 1)) && (cwd === dir || cwd.startsWith(`${dir}/`));
}

/** Runs git with `args` in `cwd`; resolves with stdout, rejects with its stderr's last line. */
export function git(cwd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("git", [...GIT_CONFIG, ...args], {
      cwd,
      stdio: ["ignore", "pipe", "pipe"],
      // No replace refs: a kept workspace's objects are what their ids say.
      env: {
        ...process.env,
        GIT_TERMINAL_PROMPT: "0",
        GIT_CONFIG_NOSYSTEM: "1",
        GIT_NO_REPLACE_OBJECTS: "1",
        LC_ALL: "C",
      },
      timeout: GIT_TIMEOUT_MS,
    });
    const out: Buffer[] = [];
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => {
      err = (err + chunk.toString("utf8")).slice(-2000);
    });
    child.once("error", (error) => reject(new WorkspaceError(`git ${args[0]}: ${error.message}`)));
    child.once("close", (code) => {
      if (code === 0) resolve(Buffer.concat(out).toString("utf8"));
      else {
        const last = err.trim().split("\n").pop() ?? "";
        reject(new WorkspaceError(`git ${args[0]} failed (${code ?? "signal"}): ${last}`));
      }
    });
  });
}

export class Scratch {
  /** Every file of the workspace is written (a kept workspace is, once unpacked). */
  private complete = false;

  private constructor(
    readonly root: string,
    readonly work: string,
    readonly run: string,
    /** The workspace came from an earlier turn (a claimed kept workspace). */
    readonly kept: boolean,
  ) {}

  /**
   * A scratch folder below `root` (default serveRoot(): a sandbox's private /tmp, or the
   * folder its parent binds for it). With `key`, the kept workspace of that key when there is
   * one, claimed by renaming it to this scratch folder; a new, empty one otherwise.
   */
  static create(key?: string, root: string = serveRoot()): Scratch {
    fs.mkdirSync(root, { recursive: true });
    pruneKept(root, Date.now());
    const folder = fs.mkdtempSync(path.join(root, "subagent-serve-"));
    const work = path.join(folder, "work");
    const run = path.join(folder, "run");
    let kept = false;
    if (key !== undefined) {
      try {
        fs.renameSync(keptFolder(root, key), folder); // onto the empty folder: atomic, one claimant
        kept = fs.existsSync(path.join(work, ".git"));
      } catch {
        // nothing kept for this key
      }
    }
    if (!kept) fs.rmSync(work, { recursive: true, force: true });
    fs.rmSync(run, { recursive: true, force: true });
    fs.mkdirSync(work, { recursive: true, mode: 0o700 });
    fs.mkdirSync(run, { mode: 0o700 });
    return new Scratch(folder, work, run, kept);
  }

  /** The commits of a kept workspace the local side may leave out of its bundle (its HEAD); none for a new one. */
  async have(): Promise<string[]> {
    if (!this.kept) return [];
    const head = await git(this.work, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]).catch(() => "");
    return head.trim() === "" ? [] : [head.trim()].slice(0, MAX_HAVES);
  }

  /**
   * After a turn that went through: the workspace is kept for the next turn of `key` (the run's
   * files go), unless another far side kept one for it meanwhile. False: it was removed.
   */
  keep(key: string): boolean {
    const target = keptFolder(path.dirname(this.root), key);
    try {
      fs.rmSync(this.run, { recursive: true, force: true });
      fs.renameSync(this.root, target);
      const now = new Date();
      fs.utimesSync(target, now, now);
      return true;
    } catch {
      this.remove();
      return false;
    }
  }

  /** A path inside the run folder; `name` is one of this module's own names. */
  runFile(name: string): string {
    return this.inside(this.run, name);
  }

  /** `relative` resolved inside `base`, refused if it would leave it. */
  inside(base: string, relative: string): string {
    if (!isInsidePath(relative)) throw new WorkspaceError(`path escapes the scratch space: ${relative.slice(0, 200)}`);
    const resolved = path.resolve(base, relative);
    const rel = path.relative(this.root, resolved);
    if (rel.startsWith("..") || path.isAbsolute(rel)) {
      throw new WorkspaceError(`path escapes the scratch space: ${relative.slice(0, 200)}`);
    }
    return resolved;
  }

  writeRunFile(name: string, data: Buffer | string): string {
    const file = this.runFile(name);
    fs.writeFileSync(file, data, { mode: 0o600, flag: "wx" });
    return file;
  }

  /**
   * Unpacks the bundle's base into the workspace, in two steps like an isolated child's
   * worktree: here the index and the files pi reads before its first tool call (the top's
   * files, `.pi/` and `.agents/` at the top and in the cwd, context files along the cwd);
   * `finishCheckout` writes the rest while pi starts (its tool calls wait for it).
   */
  async unpack(bundle: Buffer, base: string, cwd: string): Promise<void> {
    const header = bundleHeader(bundle);
    if (typeof header === "string") throw new WorkspaceError(header);
    // The bundle's ref that holds the base (its name is the sender's; only its commit counts).
    const ref = header.refs.find((entry) => entry.commit === base);
    if (!ref) throw new WorkspaceError(`the bundle holds no ref at the announced base ${base}`);
    if (!this.kept) await git(this.work, ["init", "--quiet"]);
    const missing = await this.lacking(header.prerequisites);
    if (missing.length > 0) {
      throw new WorkspaceError(
        `the bundle needs commits this side does not have (${missing.join(", ")}): send the whole workspace`,
      );
    }
    const file = this.writeRunFile("base.bundle", bundle);
    await git(this.work, [
      "fetch",
      "--quiet",
      "--no-tags",
      "--update-head-ok",
      file,
      `+${ref.name}:refs/heads/${BASE_BRANCH}`,
    ]);
    fs.rmSync(file, { force: true });
    const names = (await git(this.work, ["ls-tree", "-r", "-z", "--name-only", base])).split("\0").filter(Boolean);
    const bad = names.find((name) => !isInsidePath(name));
    if (bad !== undefined) throw new WorkspaceError(`the bundle holds a path outside the workspace: ${bad}`);
    await git(this.work, ["symbolic-ref", "HEAD", `refs/heads/${BASE_BRANCH}`]);
    if (this.kept) {
      // Only the files that differ from the last turn's are written (git's own checkout: no
      // write through a symlink); ignored files the last turn made (build output) stay.
      await git(this.work, ["reset", "--quiet", "--hard", base]);
      this.complete = true;
      return;
    }
    await git(this.work, ["read-tree", base]);
    const first = names.filter((name) => startsEarly(name, cwd));
    for (let at = 0; at < first.length; at += 1000) {
      await git(this.work, ["checkout-index", "-f", "-u", "--", ...first.slice(at, at + 1000)]);
    }
  }

  /** The commits of `commits` this workspace does not have. */
  private async lacking(commits: string[]): Promise<string[]> {
    const missing: string[] = [];
    for (const commit of commits) {
      const found = await git(this.work, ["cat-file", "-e", `${commit}^{commit}`]).then(
        () => true,
        () => false,
      );
      if (!found) missing.push(commit);
    }
    return missing;
  }

  /** The rest of the checkout (every file of the index); nothing for a kept workspace. */
  async finishCheckout(): Promise<void> {
    if (this.complete) return;
    await git(this.work, ["-c", "checkout.workers=0", "checkout-index", "-a", "-f", "-u"]);
    this.complete = true;
  }

  /**
   * The child's cwd: `relative` below the workspace, which must be a folder inside it. Walked
   * one name at a time from the workspace's real path, each symlink followed by its own text
   * (its target may not be checked out yet) and refused as soon as it leads out, and a missing
   * folder made only in a parent already reached inside: a bundle's symlink to a folder
   * elsewhere (`a → /etc`, cwd `a/x`) makes nothing outside the scratch space, even for the
   * cwd it then refuses.
   */
  childCwd(relative: string): string {
    const refused = () => new WorkspaceError(`the child's cwd is not a folder inside the workspace: ${relative}`);
    if (relative !== "" && !isInsidePath(relative)) throw refused();
    const top = fs.realpathSync(this.work);
    const names = relative.split("/");
    let at = top;
    let links = 0;
    while (names.length > 0) {
      const name = names.shift()!;
      if (name === "" || name === ".") continue;
      if (name === "..") {
        at = path.dirname(at);
        if (!within(top, at)) throw refused();
        continue;
      }
      const next = path.join(at, name);
      let stat = fs.lstatSync(next, { throwIfNoEntry: false });
      if (stat === undefined) {
        fs.mkdirSync(next, { mode: 0o700 });
        stat = fs.lstatSync(next);
      }
      if (stat.isSymbolicLink()) {
        const hop = ++links > MAX_CWD_LINKS ? undefined : linkHop(next, top);
        if (!hop) throw refused();
        names.unshift(...hop.names);
        at = hop.from ?? at;
        continue;
      }
      if (!stat.isDirectory()) throw refused();
      at = next;
    }
    return at;
  }

  /**
   * Commits what the turn changed (all files, untracked ones that git does not ignore
   * included) and returns the bundle of that commit over `base`; undefined when nothing changed.
   */
  async commitTurn(base: string, message: string): Promise<{ head: string; bundle: Buffer } | undefined> {
    await git(this.work, ["add", "-A"]);
    const staged = await git(this.work, ["diff", "--cached", "--name-only", "-z"]);
    const head0 = (await git(this.work, ["rev-parse", "HEAD"])).trim();
    if (staged !== "") await git(this.work, ["commit", "--quiet", "--no-verify", "-m", message]);
    const head = (await git(this.work, ["rev-parse", "HEAD"])).trim();
    if (head === base && head0 === base) return undefined;
    const file = this.runFile("turn.bundle");
    await git(this.work, ["bundle", "create", "--quiet", file, "HEAD", `^${base}`]);
    return { head, bundle: fs.readFileSync(file) };
  }

  remove(): void {
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}
