/**
 * The command line that starts a child's far side on a remote runner:
 * `<prefix> <remote_command…> serve`, where the prefix is the runner kind's way of running a
 * command elsewhere with its stdin and stdout connected. Pure: the local wrapper spawns the
 * argv (never through a local shell), `doctor --runner` checks the same prefix, and the
 * extension may show it. The sandbox kind builds its `bwrap` prefix alongside these.
 *
 * - ssh: `ssh -o BatchMode=yes [ssh_options…] -o ControlMaster=auto -o ControlPath=<socket>
 *   -o ControlPersist=<s> [-p port] [-i identity] <host> -- <quoted remote words…>`. BatchMode
 *   because stdin is the protocol (a password prompt would hang the turn); the definition's
 *   ssh_options come before the connection sharing options because ssh keeps the first value
 *   it is given for each option, so a definition may turn sharing off (`-o ControlMaster=no`)
 *   or choose its own socket. ssh joins the words after the host into one line that the far
 *   user's shell parses: each word is quoted for a POSIX shell, so a path with spaces or a `$`
 *   arrives as written and nothing in it runs.
 * - slurm: `srun [srun_options…] --ntasks=1 --quiet [--job-name=<name>] <remote words…>`: one
 *   task (the protocol has one far side; srun forwards its stdin to all tasks, here that one),
 *   no pty (a pty would mangle the stream), `--quiet` so srun's own progress lines stay out of
 *   stderr's tail, and a job name for `scancel` as the last resort (scancelArgv; the wrapper's
 *   name per run and its last resort: src/wrapper/remote/slurm-job.ts).
 * - command: `<command…> <remote words…>`, as given.
 */
import { PI_AGENT_DIR_ENV } from "../lib/pi-agent-dir.js";
import { ENV } from "./env.js";
import {
  type CommandRunner,
  DEFAULT_REMOTE_COMMAND,
  type RunnerDefinition,
  type SlurmRunner,
  type SshRunner,
} from "./runners.js";

/** The runners that go through `serve` on a far side (sandbox has its own prefix, local none). */
export type RemoteRunner = SshRunner | SlurmRunner | CommandRunner;

/** Seconds a shared ssh connection stays up after its last session (then the master exits by itself). */
export const SSH_CONTROL_PERSIST_SECONDS = 60;
/** The far side's subcommand. */
export const SERVE_SUBCOMMAND = "serve";

export const isRemoteRunner = (definition: RunnerDefinition): definition is RemoteRunner =>
  definition.kind === "ssh" || definition.kind === "slurm" || definition.kind === "command";

/**
 * `env PI_SUBAGENTS_PI_BIN=<pi> PI_CODING_AGENT_DIR=<dir>` when the definition names the far
 * pi or its agent dir (serve starts that pi, which reads that dir), else nothing.
 */
export function farPiEnvWords(definition: RemoteRunner): string[] {
  const assignments = [
    ...(definition.pi === undefined ? [] : [`${ENV.piBin}=${definition.pi}`]),
    ...(definition.agent_dir === undefined ? [] : [`${PI_AGENT_DIR_ENV}=${definition.agent_dir}`]),
  ];
  return assignments.length === 0 ? [] : ["env", ...assignments];
}

/** What runs on the far side: `[env <far pi settings>] <remote_command…> serve`. */
export function remoteWords(definition: RemoteRunner): string[] {
  return [...farPiEnvWords(definition), ...(definition.remote_command ?? DEFAULT_REMOTE_COMMAND), SERVE_SUBCOMMAND];
}

/** Characters a POSIX shell takes literally in a bare word. */
const SAFE_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** `word` as one POSIX shell word: bare when safe, else in single quotes (`'` as `'\''`). */
export function shellQuote(word: string): string {
  if (SAFE_WORD.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

export interface SshConnection {
  /**
   * The ssh ControlPath: where the shared connection's socket lives. A socket path must fit
   * in 108 bytes with ssh's 17-character temporary suffix: see sshControlPath.
   */
  controlPath: string;
  /** Default SSH_CONTROL_PERSIST_SECONDS. */
  persistSeconds?: number;
  /**
   * `auto` (default): the first ssh that finds no socket becomes the master. `no`: only use a
   * master that is up (else a connection of its own): for sessions whose master is started
   * and closed by the wrapper (src/wrapper/remote/ssh-master.ts), so no run's ssh ever becomes it.
   */
  master?: "auto" | "no";
}

/**
 * The socket of the shared connection in `dir`: `<dir>/%C`, which ssh expands to a hash of
 * the local host, remote host, port and user, so each destination has its own master and
 * every tree (and wrapper) of one user going to it shares that one.
 */
export function sshControlPath(dir: string): string {
  return `${dir.replace(/\/+$/, "")}/%C`;
}

/**
 * The folder for the sockets: short (a socket path has at most 107 bytes) and the user's own,
 * `<tmp>/pst-ssh-<uid>`; the caller makes it (mode 0700) before the first connection.
 */
export function sshControlDir(tmpDir: string, uid: number): string {
  return `${tmpDir.replace(/\/+$/, "")}/pst-ssh-${uid}`;
}

/** `-o ControlMaster=auto|no -o ControlPath=… -o ControlPersist=…`, none without a connection. */
function sharingOptions(connection: SshConnection | undefined): string[] {
  if (connection === undefined) return [];
  const persist = connection.persistSeconds ?? SSH_CONTROL_PERSIST_SECONDS;
  const master = `ControlMaster=${connection.master ?? "auto"}`;
  return ["-o", master, "-o", `ControlPath=${connection.controlPath}`, "-o", `ControlPersist=${persist}`];
}

/**
 * The ssh options and destination that every call about one definition shares (no remote
 * command); without a connection, ssh opens a connection of its own (no sharing options).
 */
export function sshTarget(definition: SshRunner, connection: SshConnection | undefined): string[] {
  return [
    "-o",
    "BatchMode=yes",
    ...(definition.ssh_options ?? []),
    ...sharingOptions(connection),
    ...(definition.port === undefined ? [] : ["-p", String(definition.port)]),
    ...(definition.identity === undefined ? [] : ["-i", definition.identity]),
    definition.host,
  ];
}

/** `ssh … <host> -- <quoted words…>`: runs `words` on the definition's host. */
export function sshArgv(
  definition: SshRunner,
  connection: SshConnection | undefined,
  words: readonly string[],
): string[] {
  return ["ssh", ...sshTarget(definition, connection), "--", ...words.map(shellQuote)];
}

/** `ssh … -O <operation> <host>`: asks the shared connection's master (check, exit). */
export function sshControlArgv(
  definition: SshRunner,
  connection: SshConnection,
  operation: "check" | "exit",
): string[] {
  const target = sshTarget(definition, connection);
  return ["ssh", ...target.slice(0, -1), "-O", operation, target.at(-1) as string];
}

/** `srun [srun_options…] --ntasks=1 --quiet [--job-name=<name>] <words…>`. */
export function srunArgv(definition: SlurmRunner, words: readonly string[], jobName?: string): string[] {
  const name = jobName === undefined ? [] : [`--job-name=${jobName}`];
  return ["srun", ...(definition.srun_options ?? []), "--ntasks=1", "--quiet", ...name, ...words];
}

/**
 * `scancel --name=<name>`: the last resort for a job whose srun is gone. A SIGKILLed srun
 * leaves its job running (checked with Slurm 22.05: still RUNNING a second later, and with
 * the default InactiveLimit=0 nothing ends it); SIGTERM to srun, or its stdin closing (the
 * task reads EOF), ends the job. A job name unique to the run finds it without its id, which
 * srun --quiet never prints.
 */
export function scancelArgv(jobName: string): string[] {
  return ["scancel", `--name=${jobName}`];
}

export interface RunnerArgvOptions {
  /** The ssh kind's shared connection; without one, ssh opens a connection of its own. */
  connection?: SshConnection;
  /** The slurm kind's job name (after srun_options, so it wins): unique per run, for scancelArgv. */
  jobName?: string;
}

/**
 * The full argv that starts `<remote_command…> serve` on a runner: the program first, then
 * its arguments (spawn it directly, with no local shell).
 */
export function runnerArgv(definition: RemoteRunner, options: RunnerArgvOptions = {}): string[] {
  const words = remoteWords(definition);
  switch (definition.kind) {
    case "ssh":
      return sshArgv(definition, options.connection, words);
    case "slurm":
      return srunArgv(definition, words, options.jobName);
    case "command":
      return [...definition.command, ...words];
  }
}
