/**
 * The far side's scratch space: a folder of its own holding the workspace (a git checkout of
 * the bundle that came over the wire) and the run's files (task, session, system prompt,
 * inbox). Every path written here is one this module names, checked to stay inside the
 * scratch folder; git runs by argv (never a shell), with hooks off and objects checked as
 * they are fetched (a tree entry `..` or `.git` is refused by git's fsck before any checkout).
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { isInsidePath } from "../contracts/serve-protocol.js";

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
];
const GIT_TIMEOUT_MS = 120_000;
const BASE_BRANCH = "base";

export class WorkspaceError extends Error {}

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
      env: { ...process.env, GIT_TERMINAL_PROMPT: "0", GIT_CONFIG_NOSYSTEM: "1", LC_ALL: "C" },
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
  private constructor(
    readonly root: string,
    readonly work: string,
    readonly run: string,
  ) {}

  /** A new scratch folder below the system's temporary folder (private /tmp inside a sandbox). */
  static create(): Scratch {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "subagent-serve-"));
    const work = path.join(root, "work");
    const run = path.join(root, "run");
    fs.mkdirSync(work, { mode: 0o700 });
    fs.mkdirSync(run, { mode: 0o700 });
    return new Scratch(root, work, run);
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
    const file = this.writeRunFile("base.bundle", bundle);
    await git(this.work, ["init", "--quiet"]);
    // The bundle's ref that holds the base (its name is the sender's; only its commit counts).
    const heads = (await git(this.work, ["bundle", "list-heads", file])).split("\n");
    const ref = heads
      .map((line) => line.split(" "))
      .find(([sha, name]) => sha === base && /^refs\/[\w./-]+$/.test(name ?? ""));
    if (!ref) throw new WorkspaceError(`the bundle holds no ref at the announced base ${base}`);
    await git(this.work, ["fetch", "--quiet", "--no-tags", file, `${ref[1]}:refs/heads/${BASE_BRANCH}`]);
    fs.rmSync(file, { force: true });
    const names = (await git(this.work, ["ls-tree", "-r", "-z", "--name-only", base])).split("\0").filter(Boolean);
    const bad = names.find((name) => !isInsidePath(name));
    if (bad !== undefined) throw new WorkspaceError(`the bundle holds a path outside the workspace: ${bad}`);
    await git(this.work, ["symbolic-ref", "HEAD", `refs/heads/${BASE_BRANCH}`]);
    await git(this.work, ["read-tree", base]);
    const first = names.filter((name) => startsEarly(name, cwd));
    for (let at = 0; at < first.length; at += 1000) {
      await git(this.work, ["checkout-index", "-f", "-u", "--", ...first.slice(at, at + 1000)]);
    }
  }

  /** The rest of the checkout (every file of the index). */
  async finishCheckout(): Promise<void> {
    await git(this.work, ["checkout-index", "-a", "-f", "-u"]);
  }

  /** The child's cwd: `relative` below the workspace, which must be a folder inside it (symlinks resolved). */
  childCwd(relative: string): string {
    const cwd = relative === "" ? this.work : this.inside(this.work, relative);
    let real: string;
    try {
      real = fs.realpathSync(cwd);
    } catch {
      fs.mkdirSync(cwd, { recursive: true });
      real = fs.realpathSync(cwd);
    }
    const rel = path.relative(fs.realpathSync(this.work), real);
    if (rel.startsWith("..") || path.isAbsolute(rel) || !fs.statSync(real).isDirectory()) {
      throw new WorkspaceError(`the child's cwd is not a folder inside the workspace: ${relative}`);
    }
    return real;
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
