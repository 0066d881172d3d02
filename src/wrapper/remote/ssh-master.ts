/**
 * The ssh runner's shared connection (a spawn does not pay a full handshake): one
 * ControlMaster per host, started by the first run that needs it and closed (`ssh -O exit`)
 * by the last run that used it.
 *
 * - The socket is `<tmp>/pst-ssh-<uid>/%C` (runner-prefix.ts), which ssh turns into a hash of
 *   this host, the far host, the port and the user: every wrapper of this user going to that
 *   host shares it. `ssh -G` says which file that is (the user's ssh config applies).
 * - Each run that uses it is a file in `<socket>.users/` (its process identity: a reused pid
 *   is not a user). A run adds itself before its session starts and removes itself when its
 *   child is done; the one that leaves the folder empty (dead users pruned) closes the master.
 * - Both steps happen under a lock (`<socket>.lock.<n>`, taken by link(2) of a complete file,
 *   so of two wrappers racing exactly one wins; a dead holder's lock is passed over), so a run
 *   never joins a master that another run is closing, and of many first runs at once (a
 *   fan-out) one starts the master while the others wait for it, instead of each paying a
 *   full handshake of its own.
 * - The master is `ssh -N` with ControlMaster=auto and ControlPersist: ssh puts it in the
 *   background after authentication, in its own session with its stdio on /dev/null, so no
 *   run's process group or stop takes it down; the runs' sessions use ControlMaster=no and so
 *   never become a master themselves (a run's ssh would carry its run token, and the run's
 *   end would kill it with the other runs' sessions). If it cannot start (host down, key
 *   refused), the session tries on its own and fails with ssh's own words.
 * - A wrapper killed before it removed itself leaves a dead user, pruned by the next; with no
 *   run left, the master still exits by itself ControlPersist seconds (60) after its last
 *   session. A definition whose ssh_options choose their own sharing (ControlMaster,
 *   ControlPath, ControlPersist, -S, -M) is the user's business: nothing is started or closed.
 * The sockets' folder has mode 0700, checked (a socket there is a logged-in session).
 */
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { ENV } from "../../contracts/env.js";
import {
  type SshConnection,
  sshControlArgv,
  sshControlDir,
  sshControlPath,
  sshTarget,
} from "../../contracts/runner-prefix.js";
import type { SshRunner } from "../../contracts/runners.js";
import { createComplete } from "../../lib/atomic-file.js";
import { type Clock, sleep, systemClock } from "../../lib/clock.js";
import { folderNames } from "../../lib/folder-names.js";
import { processIdentity, readIdentityFileSync, sameProcessAlive } from "../../lib/process.js";
import { formatProcessIdentity, type ProcessIdentity } from "../../lib/process-identity.js";
import { runProcess, tail } from "../../lib/run-process.js";

export interface SshConnectionPlace {
  tmpDir: string;
  uid: number;
}

const currentPlace = (): SshConnectionPlace => ({ tmpDir: os.tmpdir(), uid: process.getuid?.() ?? 0 });

/** How long the master may take to connect and authenticate before the session goes on its own. */
export const MASTER_START_TIMEOUT_MS = 20_000;
/** How long a run waits for the lock (a master being started by another run) before going on without it. */
export const LOCK_WAIT_MS = 30_000;
const LOCK_POLL_MS = 20;

/**
 * Makes the socket folder (mode 0700) if needed and returns the connection to use; throws
 * with one clear line when the folder is someone else's or open to others.
 */
export function prepareSshConnection(place: SshConnectionPlace = currentPlace()): SshConnection {
  const dir = sshControlDir(place.tmpDir, place.uid);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = fs.lstatSync(dir);
  if (!stat.isDirectory() || stat.uid !== place.uid || (stat.mode & 0o077) !== 0) {
    throw new Error(`${dir} must be a folder of uid ${place.uid} that only it can open (mode 0700)`);
  }
  return { controlPath: sshControlPath(dir) };
}

export interface MasterAnswer {
  /** `check`: a master serves this destination; `exit`: it was asked to end. */
  ok: boolean;
  /** ssh's own words (the end of stderr). */
  message: string;
}

export interface SshAnswer {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** What the shared connection needs of the machine (a unit test gives its own). */
export interface SshMasterOperations {
  /** Runs `ssh args…` (no shell) to its end, at most `timeoutMs`; its environment is `env`. */
  ssh(args: string[], timeoutMs: number, env: NodeJS.ProcessEnv): Promise<SshAnswer>;
  /** Whether something accepts connections on the unix socket `file`. */
  socketAnswers(file: string): Promise<boolean>;
  /** This process, as a user of the master. */
  self(): ProcessIdentity;
  alive(identity: ProcessIdentity): boolean;
  clock: Clock;
}

export const nodeSshMasterOperations: SshMasterOperations = {
  ssh: async (args, timeoutMs, env) => {
    const result = await runProcess("ssh", args, { cwd: "/", env, timeoutMs });
    return { code: result.code, stdout: result.stdout.toString("utf8"), stderr: result.stderr };
  },
  socketAnswers: (file) =>
    new Promise((resolve) => {
      const socket = net.connect({ path: file }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    }),
  self: () => processIdentity(process.pid),
  alive: sameProcessAlive,
  clock: systemClock,
};

async function askMaster(definition: SshRunner, connection: SshConnection, operation: "check" | "exit") {
  const [, ...args] = sshControlArgv(definition, connection, operation);
  const result = await nodeSshMasterOperations.ssh(args, 10_000, process.env);
  return { ok: result.code === 0, message: tail(result.stderr, 300) };
}

/** Whether a shared connection to the definition's host is up (`ssh -O check`). */
export function checkSshMaster(definition: SshRunner, connection: SshConnection): Promise<MasterAnswer> {
  return askMaster(definition, connection, "check");
}

/** Ends the shared connection to the definition's host now (`ssh -O exit`); not ok when none was up. */
export function closeSshMaster(definition: SshRunner, connection: SshConnection): Promise<MasterAnswer> {
  return askMaster(definition, connection, "exit");
}

/** Whether the definition's ssh_options choose connection sharing themselves (then it is theirs to manage). */
export function ownSharing(definition: SshRunner): boolean {
  return (definition.ssh_options ?? []).some(
    (option) => /^(-o\s*)?control(master|path|persist)\b/i.test(option) || /^-[SM]/.test(option),
  );
}

/** The socket file ssh uses for this definition and connection (`ssh -G`), or undefined. */
async function socketOf(definition: SshRunner, connection: SshConnection, ops: SshMasterOperations) {
  const answer = await ops.ssh(["-G", ...sshTarget(definition, connection)], 10_000, process.env);
  if (answer.code !== 0) return undefined;
  const line = answer.stdout.split("\n").find((entry) => entry.toLowerCase().startsWith("controlpath "));
  const file = line?.slice("controlpath ".length).trim();
  return file && path.isAbsolute(file) && !file.includes("%") ? file : undefined;
}

const readIdentity = (file: string): ProcessIdentity | undefined => {
  const read = readIdentityFileSync(file);
  return "identity" in read ? read.identity : undefined;
};

/** Writes `identity` to `target`, complete or not at all; false when `target` exists. */
function linkIdentity(target: string, identity: ProcessIdentity): boolean {
  return createComplete(target, formatProcessIdentity(identity));
}

/**
 * Runs `work` holding the lock of `socket`: the highest `<socket>.lock.<n>` is the lock; it is
 * taken by creating the next generation while the highest one's holder is gone (or none is
 * there). Only the holder removes its file; dead holders' files are pruned by the next taker.
 * Undefined (and `work` not run) when the lock stays held past LOCK_WAIT_MS.
 */
async function withLock<T>(socket: string, ops: SshMasterOperations, work: () => Promise<T>): Promise<T | undefined> {
  const dir = path.dirname(socket);
  const prefix = `${path.basename(socket)}.lock.`;
  const self = ops.self();
  const deadline = ops.clock.now() + LOCK_WAIT_MS;
  for (;;) {
    const generations = fs
      .readdirSync(dir)
      .filter((name) => name.startsWith(prefix) && /^\d+$/.test(name.slice(prefix.length)))
      .map((name) => Number(name.slice(prefix.length)))
      .sort((a, b) => b - a);
    const highest = generations[0] ?? 0;
    const holder = highest > 0 ? readIdentity(path.join(dir, `${prefix}${highest}`)) : undefined;
    if (highest === 0 || !holder || !ops.alive(holder)) {
      const mine = path.join(dir, `${prefix}${highest + 1}`);
      if (linkIdentity(mine, self)) {
        for (const old of generations) fs.rmSync(path.join(dir, `${prefix}${old}`), { force: true });
        try {
          return await work();
        } finally {
          fs.rmSync(mine, { force: true });
        }
      }
    }
    if (ops.clock.now() >= deadline) return undefined;
    await sleep(ops.clock, LOCK_POLL_MS);
  }
}

/** The live users in `<socket>.users/`; dead ones' files are removed. */
function liveUsers(users: string, ops: SshMasterOperations): string[] {
  return folderNames(users).filter((name) => {
    // A user's file being written (createComplete's hidden temp) is neither a user nor dead.
    if (name.startsWith(".")) return false;
    const identity = readIdentity(path.join(users, name));
    if (identity && ops.alive(identity)) return true;
    fs.rmSync(path.join(users, name), { force: true });
    return false;
  });
}

/** The master's environment: the wrapper's, without a run's token (the run's end must not sweep it up). */
function masterEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env[ENV.runToken];
  return env;
}

/** Starts the master if none answers on `socket` (a socket left by a dead master is removed first). */
async function ensureMaster(
  definition: SshRunner,
  connection: SshConnection,
  socket: string,
  ops: SshMasterOperations,
): Promise<void> {
  if (await ops.socketAnswers(socket)) return;
  fs.rmSync(socket, { force: true });
  const args = ["-N", ...sshTarget(definition, { ...connection, master: "auto" })];
  // ssh -N with ControlPersist goes to the background once authenticated: its exit is our answer.
  await ops.ssh(args, MASTER_START_TIMEOUT_MS, masterEnv());
}

export interface SshMasterUse {
  /** The connection the run's session uses (ControlMaster=no when the master is managed here). */
  connection: SshConnection;
  /** The run is done with the master: the last user closes it. Never rejects. */
  release(): Promise<void>;
}

/**
 * Makes this run a user of the definition's shared connection, starting the master if it is
 * the first; `release` when the run's child is done. A definition with its own sharing, or a
 * socket that cannot be found or locked, gives a plain `ControlMaster=auto` connection.
 */
export async function useSshMaster(
  definition: SshRunner,
  place: SshConnectionPlace = currentPlace(),
  ops: SshMasterOperations = nodeSshMasterOperations,
): Promise<SshMasterUse> {
  const connection = prepareSshConnection(place);
  const unmanaged = { connection, release: async () => undefined };
  if (ownSharing(definition)) return unmanaged;
  const socket = await socketOf(definition, connection, ops);
  if (!socket) return unmanaged;
  const users = `${socket}.users`;
  const self = ops.self();
  const mine = path.join(users, `${self.pid}.${self.startTicks ?? 0}`);
  const joined = await withLock(socket, ops, async () => {
    fs.mkdirSync(users, { recursive: true, mode: 0o700 });
    fs.writeFileSync(mine, formatProcessIdentity(self), { mode: 0o600 });
    await ensureMaster(definition, connection, socket, ops);
    return true;
  });
  if (!joined) return unmanaged;
  const shared: SshConnection = { ...connection, master: "no" };
  let released: Promise<void> | undefined;
  const release = () => {
    released ??= withLock(socket, ops, async () => {
      fs.rmSync(mine, { force: true });
      if (liveUsers(users, ops).length > 0) return;
      fs.rmSync(users, { recursive: true, force: true });
      if (await ops.socketAnswers(socket)) {
        const [, ...args] = sshControlArgv(definition, connection, "exit");
        await ops.ssh(args, 10_000, process.env);
      }
    }).then(
      () => undefined,
      () => undefined,
    );
    return released;
  };
  return { connection: shared, release };
}
