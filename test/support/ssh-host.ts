/**
 * A separate "far" host for runner tests: a network
 * namespace with its own address and hostname, reached over a veth pair, where sshd runs in a
 * private mount namespace that hides the checkout (and the checkout node_modules comes from)
 * and /tmp, so a child there can read nothing of the parent's by accident: everything must
 * arrive over the wire. A non-root user logs in with a test key; this package and, on request,
 * a pi line are installed where that host sees them:
 *
 *   <root>/pkg     a copy of this package (package.json, bin, dist, extensions, schemas,
 *                  fixtures/fake-pi) whose node_modules is this checkout's, bound read-only
 *   <root>/bin     node, pi and subagent-wrapper, first on the far user's PATH
 *   <root>/home    the far user's home (~/.pi/agent: pi settings from writePiSettings)
 *
 * <root> is under /var/tmp (the far side hides /tmp). Everything is named uniquely per run
 * and undone by stop(): processes in the namespace (by pid), the namespace and its veth pair,
 * the user and <root>. Needs root, `ip`, `unshare`, `sshd`, `ssh`, `ssh-keygen`, `useradd`.
 */
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, realpathSync } from "node:fs";
import { chmod, cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { SshRunner } from "../../src/contracts/runners.js";
import { killNow, type LastResort, registerLastResort, unregisterLastResort } from "./last-resort.js";
import { findTool } from "./needs.js";
import { type ProcessResult, runProcess, type SpawnedProcess, type SpawnOptions, spawnProcess } from "./processes.js";

/** The checkout: the nearest folder above this module that holds package.json. */
const REPO_ROOT = findRepoRoot(path.dirname(fileURLToPath(import.meta.url)));
/** What of the package goes to the far host (a subset of package.json's `files`). */
const PACKAGE_PARTS = ["package.json", "bin", "dist", "extensions", "schemas", "fixtures/fake-pi"];
/** The tools this module runs; a test skips (or fails under CI) when one is missing. */
export const SSH_HOST_TOOLS = ["ip", "unshare", "nsenter", "sshd", "ssh", "ssh-keygen", "useradd", "userdel"] as const;

function findRepoRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, "package.json"))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

export interface SshHostOptions {
  /** The pi line to install on the far host: its node (first on PATH there) and pi CLI. */
  pi?: { node: string; piCli: string };
}

export interface SshHost {
  /** The far host's hostname (`far-<hex>`). */
  hostname: string;
  /** The far host's address, and this machine's side of the veth (where a test's LLM listens). */
  address: string;
  hostAddress: string;
  port: number;
  user: string;
  /** `user@address`, as an ssh runner's `host`. */
  destination: string;
  identityFile: string;
  /** ssh options for a runner definition's `ssh_options`: no user config, this host's key known. */
  sshOptions: string[];
  /** Everything before the remote command: options, -i, -p and the destination. */
  sshArgs: string[];
  /** The far install (see the module comment) and the far user's home. */
  root: string;
  home: string;
  farBin: string;
  farPackage: string;
  netns: string;
  sshdPid: number;
  /** Runs `command` (one shell line) on the far host as its user, over ssh. */
  run(command: string, opts?: SpawnOptions): Promise<ProcessResult>;
  /** Runs argv as root inside the far host's namespaces (network, mount, hostname). */
  runAsRoot(argv: string[], opts?: SpawnOptions): Promise<ProcessResult>;
  /** Pids of the processes on the far host, sshd's listener left out. */
  farPids(): Promise<number[]>;
  /** Writes the far user's ~/.pi/agent models.json and settings.json (an LLM on `hostAddress`). */
  writePiSettings(files: { models: unknown; settings: unknown }): Promise<void>;
  /**
   * Copies `file` into the far user's ~/.pi/agent/extensions/, as a user installs an extension
   * (the far pi discovers it there); returns its far path, for the test to remove it after.
   */
  installExtension(file: string): Promise<string>;
  stop(): Promise<void>;
}

const run = async (cmd: string, args: string[], opts: SpawnOptions = {}): Promise<string> => {
  const result = await runProcess(cmd, args, { timeoutMs: 15_000, ...opts });
  if (result.code !== 0) throw new Error(`${cmd} ${args.join(" ")}: exit ${result.code}: ${result.stderr.trim()}`);
  return result.stdout;
};

/** useradd/userdel fail while another process holds /etc/passwd's lock: try again a few times. */
async function runLocked(cmd: string, args: string[]): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await run(cmd, args);
      return;
    } catch (error) {
      if (attempt >= 20 || !/lock/i.test(String(error))) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** A /30 in 10.203.0.0/16 that no interface here uses yet: [host side, far side]. */
async function freeSubnet(): Promise<[string, string]> {
  const used = await run("ip", ["-o", "-4", "addr", "show"]);
  for (;;) {
    const third = randomBytes(1)[0] as number;
    const fourth = ((randomBytes(1)[0] as number) % 64) * 4;
    const prefix = `10.203.${third}.`;
    const taken = [0, 1, 2, 3].some((offset) => used.includes(` ${prefix}${fourth + offset}/`));
    if (!taken) return [`${prefix}${fourth + 1}`, `${prefix}${fourth + 2}`];
  }
}

async function waitForPort(address: string, port: number, timeoutMs: number, alive: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && alive()) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ host: address, port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.on("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`sshd on ${address}:${port} did not start listening`);
}

/** The far side of a path in this checkout's node_modules (bound at <pkg>/node_modules there). */
function farPathOf(file: string, modules: string, farModules: string): string {
  for (const base of [path.join(REPO_ROOT, "node_modules"), modules]) {
    const relative = path.relative(base, file);
    if (!relative.startsWith("..") && !path.isAbsolute(relative)) return path.join(farModules, relative);
  }
  return file;
}

/** The folders the far host must not see: the checkout, and the checkout node_modules lives in. */
function hiddenFolders(modules: string): string[] {
  const folders = [REPO_ROOT];
  const modulesCheckout = path.dirname(modules);
  if (modulesCheckout !== REPO_ROOT) folders.push(modulesCheckout);
  return folders;
}

function sshdConfig(o: { address: string; port: number; dir: string; user: string }): string {
  return [
    `Port ${o.port}`,
    `ListenAddress ${o.address}`,
    `HostKey ${o.dir}/hostkey`,
    `PidFile ${o.dir}/sshd.pid`,
    "AuthorizedKeysFile .ssh/authorized_keys",
    "PasswordAuthentication no",
    "KbdInteractiveAuthentication no",
    "UsePAM no",
    "PermitRootLogin no",
    `AllowUsers ${o.user}`,
    // ~/.ssh/environment puts the far install first on PATH, as a login profile would.
    "PermitUserEnvironment yes",
    // A fan-out opens many sessions at once, over one shared connection or many.
    "MaxStartups 100:30:200",
    "MaxSessions 100",
    "",
  ].join("\n");
}

/** Mounts the far host's view, then becomes sshd: $1 hostname, $2 node_modules, $3 its mount point, $4 sshd, $5 config, $6… hidden. */
const NAMESPACE_SCRIPT = `set -e
name=$1 modules=$2 point=$3 sshd=$4 conf=$5
shift 5
hostname "$name"
mount --bind "$modules" "$point"
mount -o remount,bind,ro "$point"
for folder in "$@"; do mount -t tmpfs -o mode=755 tmpfs "$folder"; done
mount -t tmpfs -o mode=1777 tmpfs /tmp
exec "$sshd" -D -e -f "$conf"`;

type Undo = () => Promise<unknown>;

async function undoAll(undo: Undo[]): Promise<void> {
  const problems: string[] = [];
  for (const step of undo.splice(0).reverse()) {
    await step().catch((error: unknown) => problems.push(String(error)));
  }
  if (problems.length > 0) throw new Error(`ssh host teardown: ${problems.join("; ")}`);
}

async function installPackage(root: string, opts: SshHostOptions, modules: string): Promise<void> {
  const farPackage = path.join(root, "pkg");
  if (!existsSync(path.join(REPO_ROOT, "dist"))) throw new Error(`${REPO_ROOT}/dist is missing: run "npm run build"`);
  for (const part of PACKAGE_PARTS) {
    if (existsSync(path.join(REPO_ROOT, part))) {
      await cp(path.join(REPO_ROOT, part), path.join(farPackage, part), { recursive: true });
    }
  }
  await mkdir(path.join(farPackage, "node_modules"));
  const farBin = path.join(root, "bin");
  await mkdir(farBin);
  const farModules = path.join(farPackage, "node_modules");
  const node = opts.pi?.node ?? process.execPath;
  await symlink(farPathOf(node, modules, farModules), path.join(farBin, "node"));
  if (opts.pi) await symlink(farPathOf(opts.pi.piCli, modules, farModules), path.join(farBin, "pi"));
  await symlink(path.join(farPackage, "bin", "subagent-wrapper"), path.join(farBin, "subagent-wrapper"));
}

async function makeUser(root: string, user: string, undo: Undo[]): Promise<void> {
  const home = path.join(root, "home");
  await runLocked("useradd", ["-M", "-d", home, "-s", "/bin/bash", "-p", "*", user]);
  undo.push(() => runLocked("userdel", [user]));
  const sshDir = path.join(home, ".ssh");
  await mkdir(sshDir, { recursive: true, mode: 0o700 });
  await cp(path.join(root, "client", "id_ed25519.pub"), path.join(sshDir, "authorized_keys"));
  const farPath = [path.join(root, "bin"), "/usr/local/bin", "/usr/bin", "/bin"].join(":");
  const environment = [`PATH=${farPath}`, "PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0", ""];
  await writeFile(path.join(sshDir, "environment"), environment.join("\n"));
  await run("chown", ["-R", `${user}:${user}`, home]);
  await chmod(path.join(sshDir, "authorized_keys"), 0o600);
}

async function makeNetwork(netns: string, id: string, undo: Undo[]): Promise<[string, string]> {
  const [hostAddress, address] = await freeSubnet();
  const hostSide = `pstH${id}`;
  const farSide = `pstF${id}`;
  await run("ip", ["netns", "add", netns]);
  undo.push(() => run("ip", ["netns", "del", netns]));
  await run("ip", ["link", "add", hostSide, "type", "veth", "peer", "name", farSide]);
  await run("ip", ["link", "set", farSide, "netns", netns]);
  await run("ip", ["addr", "add", `${hostAddress}/30`, "dev", hostSide]);
  await run("ip", ["link", "set", hostSide, "up"]);
  await run("ip", ["-n", netns, "addr", "add", `${address}/30`, "dev", farSide]);
  await run("ip", ["-n", netns, "link", "set", farSide, "up"]);
  await run("ip", ["-n", netns, "link", "set", "lo", "up"]);
  return [hostAddress, address];
}

/** The pids in the namespace (`ip netns pids`). */
async function namespacePids(netns: string): Promise<number[]> {
  const out = await run("ip", ["netns", "pids", netns]).catch(() => "");
  return out
    .split("\n")
    .map((line) => Number(line.trim()))
    .filter((pid) => Number.isSafeInteger(pid) && pid > 0);
}

/** The last resort (last-resort.ts): everything startSshHost made, undone synchronously. */
function lastResort(netns: string, user: string, root: string, sshdPid: () => number): LastResort {
  return {
    kill: () => {
      killNow(
        [sshdPid()].filter((pid) => pid > 0),
        true,
      );
      const pids = spawnSync("ip", ["netns", "pids", netns], { encoding: "utf8" }).stdout ?? "";
      killNow(
        pids
          .split("\n")
          .map(Number)
          .filter((pid) => pid > 0),
      );
    },
    clean: () => spawnSync("ip", ["netns", "del", netns], { stdio: "ignore" }),
    // Handed to a shell of its own, which outlives a worker that vitest SIGKILLs 500 ms on.
    slow: () => {
      const script = 'rm -rf -- "$1"; userdel "$2"';
      spawn("sh", ["-c", script, "sh", root, user], { detached: true, stdio: "ignore" }).unref();
    },
  };
}

/** SIGKILLs every process in the namespace, by pid, until none is left (at most 5 s). */
async function killNamespace(netns: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  for (let pids = await namespacePids(netns); pids.length > 0; pids = await namespacePids(netns)) {
    if (Date.now() > deadline) throw new Error(`processes left in ${netns}: ${pids.join(", ")}`);
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone already
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** An ssh runner definition that reaches `host` (its user, port, key and options). */
export function sshRunnerFor(host: SshHost, extra: Partial<SshRunner> = {}): SshRunner {
  return {
    kind: "ssh",
    host: host.destination,
    port: host.port,
    identity: host.identityFile,
    ssh_options: host.sshOptions,
    capacity: 2,
    ...extra,
  };
}

export async function startSshHost(opts: SshHostOptions = {}): Promise<SshHost> {
  const id = randomBytes(3).toString("hex");
  const hostname = `far-${id}`;
  const user = `pst${id}`;
  const netns = `pst-far-${id}`;
  const port = 20_000 + (randomBytes(2).readUInt16BE() % 40_000);
  const undo: Undo[] = [];
  let sshdPid = 0;
  undo.push(async () => unregisterLastResort(netns));
  try {
    const root = await mkdtemp("/var/tmp/pst-far-");
    undo.push(() => rm(root, { recursive: true, force: true, maxRetries: 3 }));
    registerLastResort(
      netns,
      lastResort(netns, user, root, () => sshdPid),
    );
    await chmod(root, 0o755);
    const sshdDir = path.join(root, "sshd");
    const clientDir = path.join(root, "client");
    await mkdir(sshdDir, { mode: 0o700 });
    await mkdir(clientDir, { mode: 0o700 });
    await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", hostname, "-f", path.join(sshdDir, "hostkey")]);
    await run("ssh-keygen", [
      "-q",
      "-t",
      "ed25519",
      "-N",
      "",
      "-C",
      "client",
      "-f",
      path.join(clientDir, "id_ed25519"),
    ]);
    const modules = realpathSync(path.join(REPO_ROOT, "node_modules"));
    await installPackage(root, opts, modules);
    await makeUser(root, user, undo);
    const [hostAddress, address] = await makeNetwork(netns, id, undo);
    await writeFile(path.join(sshdDir, "sshd_config"), sshdConfig({ address, port, dir: sshdDir, user }));
    await mkdir("/run/sshd", { recursive: true, mode: 0o755 }); // sshd's privilege separation folder
    const hostKey = (await readFile(path.join(sshdDir, "hostkey.pub"), "utf8")).trim();
    const knownHosts = path.join(clientDir, "known_hosts");
    await writeFile(knownHosts, `[${address}]:${port} ${hostKey}\n`);

    const sshd = findTool("sshd") ?? "/usr/sbin/sshd";
    const farPackage = path.join(root, "pkg");
    const scriptArgs = [
      hostname,
      modules,
      path.join(farPackage, "node_modules"),
      sshd,
      path.join(sshdDir, "sshd_config"),
    ];
    const unshare = ["unshare", "--mount", "--uts", "--propagation", "private", "sh", "-c", NAMESPACE_SCRIPT, "sh"];
    const daemon: SpawnedProcess = spawnProcess(
      "ip",
      ["netns", "exec", netns, ...unshare, ...scriptArgs, ...hiddenFolders(modules)],
      // A tree harness's afterEach (killAll) must not take the host down under the next test.
      { timeoutMs: 3_600_000, outlivesTests: true },
    );
    sshdPid = daemon.pid;
    let exited = false;
    undo.push(async () => {
      await killNamespace(netns);
      daemon.kill("SIGKILL");
      await daemon.done;
    });
    void daemon.done.then(() => {
      exited = true;
    });
    await waitForPort(address, port, 10_000, () => !exited).catch(async (error: unknown) => {
      const result = exited ? await daemon.done : undefined;
      throw new Error(`${String(error)}${result ? `: ${result.stderr.trim()}` : ""}`);
    });

    const identityFile = path.join(clientDir, "id_ed25519");
    const sshOptions = [
      "-F",
      "/dev/null",
      "-o",
      `UserKnownHostsFile=${knownHosts}`,
      "-o",
      "StrictHostKeyChecking=yes",
      "-o",
      "IdentitiesOnly=yes",
      "-o",
      "LogLevel=ERROR",
    ];
    const destination = `${user}@${address}`;
    const sshArgs = [...sshOptions, "-o", "BatchMode=yes", "-i", identityFile, "-p", String(port), destination];
    const home = path.join(root, "home");
    return {
      hostname,
      address,
      hostAddress,
      port,
      user,
      destination,
      identityFile,
      sshOptions,
      sshArgs,
      root,
      home,
      farBin: path.join(root, "bin"),
      farPackage,
      netns,
      sshdPid: daemon.pid,
      run: (command, o) => runProcess("ssh", [...sshArgs, "--", command], { timeoutMs: 30_000, ...o }),
      runAsRoot: (argv, o) =>
        runProcess("nsenter", ["-t", String(daemon.pid), "-n", "-m", "-u", "--", ...argv], { timeoutMs: 30_000, ...o }),
      farPids: async () => (await namespacePids(netns)).filter((pid) => pid !== daemon.pid),
      async writePiSettings(files) {
        const agentDir = path.join(home, ".pi", "agent");
        await mkdir(agentDir, { recursive: true });
        await writeFile(path.join(agentDir, "models.json"), JSON.stringify(files.models, null, 2));
        await writeFile(path.join(agentDir, "settings.json"), JSON.stringify(files.settings, null, 2));
        await run("chown", ["-R", `${user}:${user}`, path.join(home, ".pi")]);
      },
      async installExtension(file) {
        const extensions = path.join(home, ".pi", "agent", "extensions");
        await mkdir(extensions, { recursive: true });
        const installed = path.join(extensions, path.basename(file));
        await cp(file, installed);
        await run("chown", ["-R", `${user}:${user}`, path.join(home, ".pi")]);
        return installed;
      },
      stop: () => undoAll(undo),
    };
  } catch (error) {
    await undoAll(undo).catch(() => {});
    throw error;
  }
}
