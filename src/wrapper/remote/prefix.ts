/**
 * The argv that starts a runner's far side: `<prefix> <remote_command…> serve`, a plain argv
 * built per runner kind (never a shell line). `sandbox` is bubblewrap on this machine, running
 * this package's own `subagent-wrapper serve` under this Node:
 * - everything read-only (`--ro-bind / /`), a private `/tmp` (the far side's scratch space and
 *   the child's workspace live there), own `/dev` and `/proc`;
 * - no host Unix socket: a seccomp filter refuses socket(2) of the Unix family (seccomp.ts;
 *   this reaches abstract names too, which no mount can hide), and the folders where services
 *   keep theirs (`/run`, `/var/run`, `$XDG_RUNTIME_DIR`; `/tmp/.X11-unix` goes with the
 *   private /tmp) are empty; where the filter cannot be built (another architecture), every
 *   socket file this machine's kernel lists as bound (/proc/net/unix) is covered by /dev/null
 *   instead — a read-only bind does not stop connect(2); IPC (System V, POSIX queues) is unshared;
 * - the definition's `hide` paths (default DEFAULT_SANDBOX_HIDE) and the parent's repository
 *   covered by an empty read-only folder (a file by /dev/null): not visible, not writable;
 * - its own PID namespace, and it dies with the wrapper (`--die-with-parent`): when serve ends,
 *   every process of the sandbox ends with it;
 * - the network is shared: the child must reach its model provider (docs/runners.md).
 * What pi needs that lies below /tmp (the package, extensions) is bound back read-only, since
 * the private /tmp would otherwise hide it; what it needs below an emptied folder (the file
 * /etc/resolv.conf points to, a provider's login file under a hidden ~/.config) likewise.
 * Node's compile cache of this machine's temporary folder is bound read-only and jiti's (the
 * extensions' loader, which uses a cache only where it can write) as a private copy: without
 * them every sandboxed pi compiles its code and the extensions anew, a second or more of its
 * start; neither lets the sandbox change what this machine's own pi later runs. pi's agent
 * dir is a private writable copy of its files (pi takes locks there) with its folders bound
 * read-only but for its session history, and its credentials file read-only (sandbox-env.ts).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type RunnerArgvOptions, runnerArgv as remoteRunnerArgv } from "../../contracts/runner-prefix.js";
import { DEFAULT_SANDBOX_HIDE, type RunnerDefinition } from "../../contracts/runners.js";
import { SERVE_ENV } from "../../contracts/serve-protocol.js";

/**
 * The package's root: the nearest folder above this code that holds its package.json (the
 * code runs from dist/wrapper/remote/ or bundled into dist/cli/).
 */
function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: unknown };
      if (manifest.name === "pi-subagent-tree") return dir;
    } catch {
      // not here
    }
    const up = path.dirname(dir);
    if (up === dir) return path.resolve(fileURLToPath(import.meta.url), "../../../..");
    dir = up;
  }
}

export const PACKAGE_ROOT = packageRoot();
/** This package's CLI, run by this Node: what a sandbox runs on this machine. */
export const LOCAL_SERVE_COMMAND = [process.execPath, path.join(PACKAGE_ROOT, "bin", "subagent-wrapper")];

export interface PrefixContext {
  env: NodeJS.ProcessEnv;
  home?: string;
  /** Paths hidden besides the definition's (the parent's repository and the child's local checkout). */
  hideAlso: string[];
  /** Paths that must stay readable although under /tmp (pi itself, extensions). */
  keepVisible: string[];
  /** This machine's temporary folder, whose Node compile cache the sandbox reads (default os.tmpdir()). */
  tmpDir?: string;
  /** A private copy of this machine's jiti cache, the sandbox's own (writable) jiti cache. */
  jitiCache?: string;
  /**
   * The agent's runner workspace folder (meta.json `runnerWorkspacePath`): bound writable at
   * its own path and named to `serve` as its scratch root, so the workspace it keeps outlives
   * the sandbox's private /tmp. Bound even below a hidden path (it is the agent's own).
   */
  scratchRoot?: string;
  /**
   * pi's agent dir and a private copy of its top-level files: pi writes there (locks, trust),
   * so the sandbox sees the copy, writable, at the agent dir's place, with the agent dir's
   * folders (`folders`) bound read-only into it and `readOnlyFiles` of the copy bound
   * read-only over themselves (auth.json). What it writes goes with the copy.
   */
  agentDir?: { path: string; copy: string; folders: string[]; readOnlyFiles?: string[] };
  /** Socket files bound on this machine (hostUnixSockets()): each is covered, so nothing inside can connect to it. */
  hostSockets?: readonly string[];
  /** The fd number under which bwrap finds the seccomp filter (seccomp.ts), when there is one. */
  seccompFd?: number;
  /** Paths below a hidden folder the sandbox shows again, read-only (a provider's login file pi reads). */
  showAgain?: readonly string[];
}

const expandHome = (entry: string, home: string): string =>
  entry === "~" ? home : entry.startsWith("~/") ? path.join(home, entry.slice(2)) : entry;

function statOf(file: string): fs.Stats | undefined {
  try {
    return fs.statSync(file);
  } catch {
    return undefined;
  }
}

const isUnder = (file: string, folder: string): boolean => file === folder || file.startsWith(`${folder}/`);
const underTmp = (file: string): boolean => file === "/tmp" || file.startsWith("/tmp/");

/** Node's module compile cache in the system's temporary folder: pi finds it in the sandbox's /tmp, read-only (Node reads it so). */
export const NODE_COMPILE_CACHE = "node-compile-cache";
/** jiti's cache folder in the system's temporary folder (the sandbox gets a private copy: jiti wants to write it). */
export const JITI_CACHE = "jiti";

/**
 * The socket paths in /proc/net/unix's text: the sockets bound to a file (an abstract
 * socket's name starts with `@` and is no file; see docs/runners.md for what that leaves).
 */
export function unixSocketPaths(procNetUnix: string): string[] {
  const paths = new Set<string>();
  for (const line of procNetUnix.split("\n").slice(1)) {
    const fields = line.trim().split(/\s+/);
    const file = fields.length >= 8 ? fields.slice(7).join(" ") : "";
    if (file.startsWith("/")) paths.add(file);
  }
  return [...paths];
}

/** The socket files bound on this machine now (none where /proc/net/unix cannot be read). */
export function hostUnixSockets(): string[] {
  try {
    return unixSocketPaths(fs.readFileSync("/proc/net/unix", "utf8"));
  } catch {
    return [];
  }
}

function realOf(file: string): string {
  try {
    return fs.realpathSync(file);
  } catch {
    return file;
  }
}

/** The folders where services keep their sockets, as real paths (/var/run is /run on most systems). */
function socketFolders(env: NodeJS.ProcessEnv): string[] {
  const runtime = env.XDG_RUNTIME_DIR && path.isAbsolute(env.XDG_RUNTIME_DIR) ? [env.XDG_RUNTIME_DIR] : [];
  const folders = ["/run", "/var/run", ...runtime]
    .filter((folder) => statOf(folder)?.isDirectory())
    .map((folder) => realOf(folder));
  const unique = [...new Set(folders)].filter((folder) => !underTmp(folder));
  return unique.filter((folder) => !unique.some((other) => other !== folder && isUnder(folder, other)));
}

/** pi's agent dir: the private copy at its place, its folders read-only, its credentials file read-only. */
function agentDirArgs(agent: NonNullable<PrefixContext["agentDir"]>): string[] {
  const args = ["--bind", agent.copy, agent.path];
  for (const folder of agent.folders) {
    args.push("--ro-bind", path.join(agent.path, folder), path.join(agent.path, folder));
  }
  for (const file of agent.readOnlyFiles ?? []) {
    args.push("--ro-bind", path.join(agent.copy, file), path.join(agent.path, file));
  }
  return args;
}

/**
 * Each hidden path covered: a folder by an empty tmpfs (made read-only at the end, once what
 * shows through is bound into it), a file by /dev/null. Returns the argv and the folders.
 */
function hideArgs(hidden: readonly string[]): { args: string[]; folders: string[] } {
  const args: string[] = [];
  const folders: string[] = [];
  for (const entry of hidden) {
    const stat = statOf(entry);
    if (!stat || underTmp(entry)) continue; // what lies under /tmp is hidden by the private /tmp already
    if (stat.isDirectory()) {
      args.push("--tmpfs", entry);
      folders.push(entry);
    } else args.push("--ro-bind", "/dev/null", entry);
  }
  return { args, folders };
}

/** The bwrap argv of a sandbox, up to and including `--`. */
export function sandboxPrefix(hide: readonly string[], context: PrefixContext): string[] {
  const home = context.home ?? os.homedir();
  const args = ["bwrap", "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--new-session"];
  args.push("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--setenv", "TMPDIR", "/tmp");
  const emptied = socketFolders(context.env);
  for (const folder of emptied) args.push("--tmpfs", folder);
  for (const keep of new Set(context.keepVisible.map((entry) => path.resolve(entry)))) {
    if (underTmp(keep) && statOf(keep)) args.push("--ro-bind", keep, keep);
  }
  const compileCache = path.join(context.tmpDir ?? os.tmpdir(), NODE_COMPILE_CACHE);
  if (statOf(compileCache)?.isDirectory()) args.push("--ro-bind", compileCache, path.join("/tmp", NODE_COMPILE_CACHE));
  if (context.jitiCache) args.push("--bind", context.jitiCache, path.join("/tmp", JITI_CACHE));
  const hidden = [...new Set([...hide, ...context.hideAlso].map((item) => path.resolve(expandHome(item, home))))];
  // The agent dir's copy goes over what is hidden around it (an agent dir under a hidden
  // ~/.config stays pi's), and what is hidden inside it goes over the copy.
  const agentPath = context.agentDir?.path;
  const inAgentDir = (entry: string) => agentPath !== undefined && isUnder(entry, agentPath);
  const hiding = hideArgs(hidden.filter((entry) => !inAgentDir(entry)));
  args.push(...hiding.args);
  const hidingInside = hideArgs(hidden.filter(inAgentDir));
  if (context.agentDir) args.push(...agentDirArgs(context.agentDir), ...hidingInside.args);
  const covered = (file: string) => [...emptied, ...hidden].some((folder) => isUnder(file, folder));
  // connect(2) on a socket file needs only that the file be there: /dev/null in its place refuses it.
  for (const socket of context.hostSockets ?? []) {
    if (!underTmp(socket) && !covered(socket) && statOf(socket)?.isSocket())
      args.push("--ro-bind", "/dev/null", socket);
  }
  // Shown again below an emptied or hidden folder: what name lookups read, what pi needs.
  const showAgain = [realOf("/etc/resolv.conf"), ...(context.showAgain ?? []).map((item) => expandHome(item, home))];
  for (const entry of new Set([...showAgain, ...context.keepVisible].map((item) => path.resolve(item)))) {
    if (!underTmp(entry) && covered(entry) && statOf(entry)) args.push("--ro-bind", entry, entry);
  }
  // The agent's own workspace folder stays writable even below a hidden path (the tree's
  // folder lies below pi's session history, which is hidden).
  const scratch = context.scratchRoot && path.resolve(context.scratchRoot);
  if (scratch && statOf(scratch)?.isDirectory()) {
    args.push("--bind", scratch, scratch, "--setenv", SERVE_ENV.root, scratch);
  }
  for (const folder of [...emptied, ...hiding.folders, ...hidingInside.folders]) args.push("--remount-ro", folder);
  if (context.seccompFd !== undefined) args.push("--seccomp", String(context.seccompFd));
  args.push("--chdir", "/", "--");
  return args;
}

/**
 * The whole argv that starts the far side of `runner`. The sandbox is built here (it binds this
 * machine's paths); the other kinds' prefixes are one pure table in contracts/runner-prefix.ts,
 * which quotes every remote word for ssh's far shell.
 */
/**
 * A verify check inside a sandbox: the far side's argv with `sh -c <command>` in place of
 * serve, the agent's checkout (`top`, hidden like every repository) bound back writable — the
 * check works on the child's own files — and `cwd` as its directory. The parent's repository
 * stays hidden: a check cannot write it.
 */
export function sandboxCheckArgv(serveArgv: readonly string[], top: string, cwd: string, command: string): string[] {
  const end = serveArgv.lastIndexOf("--", serveArgv.length - LOCAL_SERVE_COMMAND.length - 2);
  if (end === -1) throw new Error("the sandbox's argv has no end of its options");
  return [...serveArgv.slice(0, end), "--bind", top, top, "--chdir", cwd, "--", "/bin/sh", "-c", command];
}

export function runnerArgv(
  runner: RunnerDefinition,
  context: PrefixContext,
  options: RunnerArgvOptions = {},
): string[] {
  if (runner.kind === "sandbox") {
    return [...sandboxPrefix(runner.hide ?? DEFAULT_SANDBOX_HIDE, context), ...LOCAL_SERVE_COMMAND, "serve"];
  }
  return remoteRunnerArgv(runner, options);
}
