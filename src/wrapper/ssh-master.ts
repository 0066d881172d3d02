/**
 * The ssh runner's shared connection (SPEC 5.5: a spawn does not pay a full handshake).
 *
 * Lifecycle: nobody starts the master on purpose. Every ssh the runner runs carries
 * `ControlMaster=auto` and one ControlPath per destination (runner-prefix.ts), so the first
 * one to find no socket becomes the master: ssh puts it in the background (its stdio on
 * /dev/null) and it serves every later session to that host, of this tree and of any other
 * of the same user, `ControlPersist` seconds (60) past the last session, then exits by itself.
 * Two first connections at once are fine: the one that loses the socket runs on its own
 * connection. The sockets live in `<tmp>/pst-ssh-<uid>/` (mode 0700, checked: a socket there
 * is a logged-in session), short enough for a socket path wherever the tree lives.
 * `closeSshMaster` (`ssh -O exit`) ends a master now, for who wants it gone before that.
 */
import fs from "node:fs";
import os from "node:os";
import { type SshConnection, sshControlArgv, sshControlDir, sshControlPath } from "../contracts/runner-prefix.js";
import type { SshRunner } from "../contracts/runners.js";
import { runProcess, tail } from "../lib/run-process.js";

export interface SshConnectionPlace {
  tmpDir: string;
  uid: number;
}

const currentPlace = (): SshConnectionPlace => ({ tmpDir: os.tmpdir(), uid: process.getuid?.() ?? 0 });

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

async function askMaster(definition: SshRunner, connection: SshConnection, operation: "check" | "exit") {
  const [program, ...args] = sshControlArgv(definition, connection, operation);
  const result = await runProcess(program as string, args, { cwd: "/", env: process.env, timeoutMs: 10_000 });
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
