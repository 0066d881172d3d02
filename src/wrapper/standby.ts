/**
 * The warm standby of a run with fallback models: a second pi, started beside the
 * running one for the next fallback model, with its module graph loaded but held at a gate
 * (standby-gate.ts, loaded by `NODE_OPTIONS=--import`) before pi's own code runs. When the
 * running pi fails with a provider error that moves the turn on, the wrapper writes the
 * continue prompt to the task file and lets the standby through: it opens the session file
 * (complete: the failed pi has exited) and sends its first request without pi's start-up,
 * which on pi 0.73 and Node 20 (no compile cache) is over a second of module loading.
 *
 * The standby runs niced (STANDBY_NICE, its autogroup too) while the running pi starts, so
 * that its loading does not slow that start-up, and at the running pi's priority once that pi
 * is past it (runningStarted); it sits in a process group of its own, with the run's token in its environment (the orphan guard
 * and the run's straggler sweep reach it). It is ended by its group when the run does not
 * need it: the turn ended (however), or its arguments are not those of the switch. A standby
 * that died is not used: the switch starts pi cold, as without one.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import type { Duplex, Readable, Writable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";
import { type Clock, settledWithin, systemClock } from "../lib/clock.js";
import { type ChildHandle, childEnvironment, runsRpc, type SpawnOptions, signalGroup } from "./child.js";

/** The standby's niceness while it waits (higher: less CPU while the running pi starts and works). */
export const STANDBY_NICE = 10;
/** How long the run waits for an ended standby to be gone. */
export const STANDBY_EXIT_WAIT_MS = 1000;

/**
 * The gate, found from dist/wrapper and from the bundled dist/cli alike (both one folder below
 * dist), as child.ts finds the task extension.
 */
export const STANDBY_GATE_PATH = fileURLToPath(new URL("../wrapper/standby-gate.js", import.meta.url));

/** One standby process as the run sees it. */
export interface StandbyProcess {
  readonly pid: number | undefined;
  /** Whether it is still there, held at the gate. */
  waiting(): boolean;
  /** Lets pi run; the handle the run supervises from here on, or undefined when it is gone. */
  go(): ChildHandle | undefined;
  /** Its priority back to the running pi's, as far as the system allows (go does it too). */
  unnice(): void;
  /** Ends it (its group); resolves once it has exited. */
  end(): Promise<void>;
}

/** Starts a standby pi: `bin args` held at the gate. */
export type StandbyLauncher = (bin: string, args: string[], options: SpawnOptions) => StandbyProcess;

/**
 * The run's standby: at most one, for the next fallback model. Pure bookkeeping around an
 * injected launcher (none: the run has no standby, every switch starts pi cold).
 */
export class Standby {
  private current: { args: string[]; process: StandbyProcess; unniced?: boolean } | undefined;
  /** How many standbys were let through, started, and ended unused (the tests and the bench read them). */
  readonly counts = { started: 0, used: 0, ended: 0 };

  constructor(
    private readonly launch: StandbyLauncher | undefined,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Starts a standby for `args`, ending one for other arguments. */
  prepare(bin: string, args: string[], options: SpawnOptions): void {
    if (!this.launch) return;
    if (this.current && sameArgs(this.current.args, args) && this.current.process.waiting()) return;
    void this.end();
    try {
      this.current = { args, process: this.launch(bin, args, options) };
      this.counts.started += 1;
    } catch {
      // No standby: the switch starts pi cold.
      this.current = undefined;
    }
  }

  /**
   * The running pi is past its start-up (its first line on stdout): the standby, niced so far
   * so as not to slow that start-up, loads at the running pi's priority from here on.
   */
  runningStarted(): void {
    if (!this.current || this.current.unniced) return;
    this.current.unniced = true;
    this.current.process.unnice();
  }

  /**
   * The standby started for exactly `args`, let through: the handle of the pi that now runs,
   * or undefined (none, one for other arguments, or one that died: it is ended, and the run
   * starts pi cold).
   */
  take(args: string[]): ChildHandle | undefined {
    const current = this.current;
    if (!current) return undefined;
    if (!sameArgs(current.args, args) || !current.process.waiting()) {
      void this.end();
      return undefined;
    }
    this.current = undefined;
    const handle = current.process.go();
    if (handle) this.counts.used += 1;
    else void current.process.end();
    return handle;
  }

  /** Ends the standby, if there is one; resolves once it is gone (or STANDBY_EXIT_WAIT_MS passed). */
  async end(): Promise<void> {
    const current = this.current;
    if (!current) return;
    this.current = undefined;
    this.counts.ended += 1;
    await settledWithin(current.process.end(), STANDBY_EXIT_WAIT_MS, this.clock);
  }
}

function sameArgs(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((arg, index) => arg === b[index]);
}

/** NODE_OPTIONS with the gate added to what the run's environment already has. */
export function gateNodeOptions(existing: string | undefined, gatePath = STANDBY_GATE_PATH): string {
  const entry = `--import=${pathToFileURL(gatePath).href}`;
  return existing && existing.trim() !== "" ? `${existing} ${entry}` : entry;
}

/**
 * Whether `bin` is a script that Node runs itself (`#!…node…` on its first line): only then
 * does NODE_OPTIONS load the gate. Anything else (a compiled pi, a shell script of one's own)
 * would run pi at once, with the task file still the first pi's: it gets no standby.
 */
export function runsOnNode(bin: string): boolean {
  let fd: number | undefined;
  try {
    fd = fs.openSync(bin, "r");
    const head = Buffer.alloc(256);
    const read = fs.readSync(fd, head, 0, head.length, 0);
    const firstLine = head.subarray(0, read).toString("utf8").split("\n")[0] ?? "";
    return /^#!.*\bnode(?:\s|$)/.test(firstLine);
  } catch {
    return false;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/**
 * The real launcher: pi as spawnChild starts it (own group, stdin closed, the child's
 * environment), plus the gate in NODE_OPTIONS and its pipe as fd 3. Without the gate's file
 * (a package built without it), or for a `bin` Node does not run itself, it throws, and the
 * run has no standby.
 */
export function launchStandby(bin: string, args: string[], options: SpawnOptions): StandbyProcess {
  if (!fs.existsSync(STANDBY_GATE_PATH)) throw new Error(`no standby gate at ${STANDBY_GATE_PATH}`);
  if (!runsOnNode(bin)) throw new Error(`${bin} is not a Node script: nothing would hold it at the gate`);
  const env = childEnvironment(options);
  env.NODE_OPTIONS = gateNodeOptions(env.NODE_OPTIONS);
  const child = spawn(bin, args, {
    cwd: options.cwd,
    env,
    stdio: [runsRpc(args) ? "pipe" : "ignore", "pipe", "pipe", "pipe"],
    detached: true,
    shell: false,
  });
  const pid = child.pid;
  const stdout = child.stdout as Readable;
  const stderr = child.stderr as Readable;
  if (pid) lowerPriority(pid);
  let gone = pid === undefined;
  const exited = new Promise<void>((resolve) => {
    child.once("exit", () => {
      gone = true;
      resolve();
    });
    child.once("error", () => {
      gone = true;
      resolve();
    });
  });
  const pipe = child.stdio[3] as Duplex;
  pipe.on("error", () => undefined);
  // The gate says `r` once pi's modules are loaded; nothing else is read here.
  pipe.resume();
  const dispose = () => {
    pipe.destroy();
    stdout.destroy();
    stderr.destroy();
  };
  return {
    pid,
    waiting: () => !gone && !pipe.destroyed,
    go: () => {
      if (gone || pipe.destroyed) return undefined;
      pipe.end("g");
      if (pid) restorePriority(pid);
      return handleOf(child, { pid, stdin: child.stdin, stdout, stderr });
    },
    unnice: () => {
      if (pid && !gone) restorePriority(pid);
    },
    end: () => {
      if (!gone) signalGroup(pid, "SIGKILL");
      return exited.then(dispose);
    },
  };
}

/** The child as a ChildHandle whose `spawn` has happened already (it was started before the switch). */
function handleOf(
  child: ReturnType<typeof spawn>,
  streams: { pid: number | undefined; stdin: Writable | null; stdout: Readable; stderr: Readable },
): ChildHandle {
  const handle = {
    ...streams,
    once(event: string, listener: (...args: never[]) => void): unknown {
      if (event === "spawn") queueMicrotask(listener as () => void);
      else child.once(event, listener as (...args: unknown[]) => void);
      return handle;
    },
  };
  return handle as ChildHandle;
}

/**
 * Niced, for both of Linux's schedulers: the process's own niceness, and its autogroup's
 * (`/proc/<pid>/autogroup`): where autogroups are on (the kernel's default), the standby's
 * session (it has one of its own) competes with the running pi's as a group, and only the
 * group's niceness weighs; the process's own counts only against its own session.
 */
export function lowerPriority(pid: number): void {
  setPriority(pid, STANDBY_NICE);
  setAutogroupNice(pid, STANDBY_NICE);
}

/**
 * As the running pi was. The autogroup's niceness goes back to 0 for any owner (only a
 * negative one needs privilege); the process's own goes back to the wrapper's where the system
 * lets a process lower its niceness (root, CAP_SYS_NICE, RLIMIT_NICE), else it stays at
 * STANDBY_NICE — which weighs nothing where autogroups are on (its children, in its session,
 * inherit it alike).
 */
export function restorePriority(pid: number): void {
  setPriority(pid, os.getPriority());
  setAutogroupNice(pid, 0);
}

/** Sets the autogroup niceness of `pid`'s session, never the wrapper's own; nothing without autogroups. */
function setAutogroupNice(pid: number, nice: number): void {
  try {
    const group = (file: string) => fs.readFileSync(file, "utf8").split(" ")[0];
    if (group(`/proc/${pid}/autogroup`) === group("/proc/self/autogroup")) return;
    fs.writeFileSync(`/proc/${pid}/autogroup`, String(nice));
  } catch {
    // no autogroups here (or not ours): the process's niceness is all there is
  }
}

function setPriority(pid: number, priority: number): void {
  try {
    os.setPriority(pid, priority);
  } catch {
    // not allowed here: the standby keeps the priority it has
  }
}
