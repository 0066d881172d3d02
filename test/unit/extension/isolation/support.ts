// Real git repositories in temp dirs for the isolation tests. Nothing global is configured:
// every git call (the tests' own and the module's) gets `env`, whose HOME is the temp dir
// and whose global and system config are off, so the machine's ~/.gitconfig plays no part
// and a test sets an identity per repository only where it wants one.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach } from "vitest";
import { processRunning } from "../../../../src/lib/process.js";

export interface Sandbox {
  /** The temp dir; repositories and worktrees all go below it. */
  dir: string;
  /** The environment for every git call of the test: no global or system config, no identity. */
  env: NodeJS.ProcessEnv;
}

/** The environment of a machine with no git configuration at all (HOME = `home`). */
export function bareEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env))
    if (!name.startsWith("GIT_") && name !== "EMAIL") env[name] = value;
  return {
    ...env,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, ".config"),
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
  };
}

/** A fresh temp dir per test, removed after it (registers the afterEach). */
export function useSandbox(): () => Sandbox {
  const made: string[] = [];
  afterEach(() => {
    for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    // realpath: git reports real paths, and os.tmpdir() may be a symlink (macOS).
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "psa-isolation-")));
    made.push(dir);
    return { dir, env: bareEnv(dir) };
  };
}

/** `git args` in `cwd` with the sandbox's environment; stdout. */
export function sh(sandbox: Sandbox, cwd: string, args: string[]): string {
  return execFileSync("git", args, { cwd, env: sandbox.env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

/** Commits made by the tests themselves name an identity on the command line, never in config. */
export const AS_SETUP = ["-c", "user.name=Setup", "-c", "user.email=setup@example.com"];

export function commitAll(sandbox: Sandbox, cwd: string, message = "commit"): string {
  sh(sandbox, cwd, ["add", "-A"]);
  sh(sandbox, cwd, [...AS_SETUP, "commit", "-q", "--no-verify", "-m", message]);
  return sh(sandbox, cwd, ["rev-parse", "HEAD"]).trim();
}

export function write(file: string, text: string | Buffer): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

/** `git init` of `<sandbox>/<name>` with `files` committed (none: HEAD stays unborn). */
export function makeRepo(sandbox: Sandbox, files: Record<string, string> = {}, name = "repo"): string {
  const repo = path.join(sandbox.dir, name);
  fs.mkdirSync(repo, { recursive: true });
  sh(sandbox, repo, ["init", "-q", "-b", "main"]);
  for (const [file, text] of Object.entries(files)) write(path.join(repo, file), text);
  if (Object.keys(files).length > 0) commitAll(sandbox, repo, "initial");
  return repo;
}

/** Paths in a commit's tree (recursive, NUL-separated so any name survives). */
export function treeFiles(sandbox: Sandbox, cwd: string, commit: string): string[] {
  return sh(sandbox, cwd, ["ls-tree", "-r", "-z", "--name-only", commit]).split("\0").filter(Boolean).sort();
}

export function show(sandbox: Sandbox, cwd: string, commit: string, file: string): string {
  return sh(sandbox, cwd, ["show", `${commit}:${file}`]);
}

/** A zombie (dead, not yet reaped: a container's init may never reap it) counts as gone. */

/** Polls until `pid` is gone (a killed process is reaped asynchronously); false after `ms`. */
export async function gone(pid: number, ms = 3000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!processRunning(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return false;
}

/**
 * `env` with a `git` first on PATH that runs the real one, except that a command whose
 * arguments contain `match` (one argument, e.g. `read-tree`) first runs `before`, a shell
 * snippet (`sleep 1`, `echo boom >&2; exit 128`). Node's spawn looks `git` up on the PATH of
 * the environment it is given, so only the calls made with this env go through it.
 */
export function gitShim(
  sandbox: Sandbox,
  match: string,
  before: string,
  env: NodeJS.ProcessEnv = sandbox.env,
): NodeJS.ProcessEnv {
  const realGit = execFileSync("sh", ["-c", "command -v git"], { encoding: "utf8" }).trim();
  const bin = path.join(sandbox.dir, "shim-bin");
  fs.mkdirSync(bin, { recursive: true });
  const script = `#!/bin/sh\nfor arg in "$@"; do if [ "$arg" = ${JSON.stringify(match)} ]; then ${before}; break; fi; done\nexec ${JSON.stringify(realGit)} "$@"\n`;
  fs.writeFileSync(path.join(bin, "git"), script, { mode: 0o755 });
  return { ...env, PATH: `${bin}${path.delimiter}${env.PATH ?? ""}` };
}
