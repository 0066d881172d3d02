/**
 * The far side's pi: started in its own process group in the scratch workspace, never
 * through a shell, with the task extension loaded (ARG_TOKENS in the argv become the far
 * side's paths), the task, system prompt and session written into the run folder, and live
 * messages renamed whole into an inbox folder the task extension watches. Stopping it is
 * SIGTERM to its group, SIGKILL 3 s later; what left its group but carries the run's token
 * (every process below pi inherits it) is ended when the run is over.
 */
import { type ChildProcessByStdio, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { ENV, runTokenOr } from "../contracts/env.js";
import { ARG_TOKENS, type BlobKind, FAR_LINE_MARK, type ServeStart, sessionHere } from "../contracts/serve-protocol.js";

export { sessionHere };

import { farInstalledExtensions } from "./far-extensions.js";
import type { Scratch } from "./workspace.js";

const TASK_EXTENSION = fileURLToPath(new URL("../in-child/task-extension.js", import.meta.url));
export const SERVE_KILL_AFTER_MS = 3000;

export interface PiEvents {
  started(pid: number): void;
  stdout(data: Buffer): void;
  stderr(data: Buffer): void;
  exited(code: number | null, signal: string | null): void;
}

function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (!pid) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // gone
  }
}

/** Live pids whose environment holds `PI_SUBAGENT_RUN_TOKEN=<token>` (Linux /proc; none elsewhere). */
function tokenProcesses(token: string): number[] {
  const needle = `${ENV.runToken}=${token}`;
  let entries: string[] = [];
  try {
    entries = fs.readdirSync("/proc");
  } catch {
    return [];
  }
  return entries.flatMap((entry) => {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) return [];
    try {
      return fs.readFileSync(`/proc/${entry}/environ`, "latin1").split("\0").includes(needle) ? [Number(entry)] : [];
    } catch {
      return [];
    }
  });
}

/**
 * The run's token: the local wrapper's when it came through the prefix's environment (same
 * machine: its straggler sweep then finds what the far side's processes left too), else a fresh one.
 */
export function runToken(): string {
  return runTokenOr(process.env[ENV.runToken]);
}

/** The pi this far side starts: PI_SUBAGENTS_PI_BIN (the runner's `pi` field), else `pi` on PATH. */
function piBin(): string {
  return process.env[ENV.piBin]?.trim() || "pi";
}

/**
 * What this host has installed for pi (far-extensions.ts), for a pi started with `-ne` (every
 * child is): it loads them as `-e`, after the task extension. Asked while the workspace is
 * unpacked; a pi that discovers by itself needs none.
 */
export async function installedExtensions(scratch: Scratch, start: ServeStart): Promise<string[]> {
  if (!start.args.includes("--no-extensions") && !start.args.includes("-ne")) return [];
  const env = { ...process.env, ...start.env };
  return farInstalledExtensions(piBin(), env, path.dirname(scratch.runFile("task.md")));
}

export class PiProcess {
  private child: ChildProcessByStdio<Writable | null, Readable, Readable> | undefined;
  private readonly token = runToken();
  private killTimer: NodeJS.Timeout | undefined;
  private sessionPath: string | undefined;
  /** The session the turn started with, as written for pi (empty for a new one). */
  private sessionStart: Buffer = Buffer.alloc(0);
  private inboxDir: string | undefined;
  running = false;

  constructor(
    private readonly scratch: Scratch,
    private readonly start: ServeStart,
    private readonly blobs: Map<BlobKind, Buffer>,
    private readonly cwd: string,
    /** The file that says when the rest of the workspace is written (the task extension holds tool calls until then). */
    private readonly readyFile: string,
    /** The local side sends pi's stdin (`pi_input`): a pi in RPC mode gets a pipe there. */
    private readonly piInput: boolean,
    private readonly events: PiEvents,
  ) {}

  /** Whether pi reads its stdin: RPC mode (a child with dialogs), when the local side sends it. */
  private get takesInput(): boolean {
    const mode = this.start.args.indexOf("--mode");
    return this.piInput && mode !== -1 && this.start.args[mode + 1] === "rpc";
  }

  /** Bytes for pi's stdin, in order (nothing once pi is gone or took no input). */
  input(data: Buffer): void {
    const stdin = this.child?.stdin;
    if (stdin && !stdin.destroyed && stdin.writable) stdin.write(data);
  }

  /** The end of pi's stdin: pi in RPC mode exits (code 0). */
  endInput(): void {
    this.child?.stdin?.end();
  }

  /** Starts pi; `installed`: extensions installed on this host (installedExtensions), loaded after the task extension. */
  spawn(installed: readonly string[] = []): void {
    const taskFile = this.scratch.writeRunFile("task.md", this.blobs.get("task")!);
    const args = this.args(installed);
    if (this.start.inbox) {
      this.inboxDir = this.scratch.runFile("inbox");
      fs.mkdirSync(this.inboxDir, { mode: 0o700 });
    }
    const bin = piBin();
    const child = spawn(bin, args, {
      cwd: this.cwd,
      env: {
        ...process.env,
        ...this.start.env,
        [ENV.taskFile]: taskFile,
        [ENV.wrapperPid]: String(process.pid),
        [ENV.runToken]: this.token,
        [ENV.cwdReady]: this.readyFile,
        ...(this.inboxDir && { [ENV.inboxDir]: this.inboxDir }),
      },
      stdio: [this.takesInput ? "pipe" : "ignore", "pipe", "pipe"],
      detached: true,
      shell: false,
    }) as ChildProcessByStdio<Writable | null, Readable, Readable>;
    this.child = child;
    // A pi that died leaves a broken pipe; its exit says what happened.
    child.stdin?.on("error", () => undefined);
    this.running = true;
    child.stdout.on("data", (chunk: Buffer) => this.events.stdout(chunk));
    child.stderr.on("data", (chunk: Buffer) => this.events.stderr(chunk));
    child.once("spawn", () => this.events.started(child.pid ?? 0));
    child.once("error", (err) => {
      this.events.stderr(Buffer.from(`${piStartFailure(bin, err)}\n`));
      this.exited(127, null);
    });
    // `close`, not `exit`: every byte of pi's output is forwarded before the turn is committed.
    child.once("close", (code, signal) => this.exited(code, signal));
  }

  /** pi's argv with the far side's paths where the tokens are. */
  private args(installed: readonly string[]): string[] {
    const paths: Record<string, string> = { [ARG_TOKENS.taskExtension]: TASK_EXTENSION };
    const prompt = this.blobs.get("system_prompt");
    if (prompt) paths[ARG_TOKENS.systemPrompt] = this.scratch.writeRunFile("system-prompt.md", prompt);
    const session = this.blobs.get("session");
    this.sessionPath = this.scratch.runFile("session.jsonl");
    if (session) {
      this.sessionStart = sessionHere(session, this.cwd);
      fs.writeFileSync(this.sessionPath, this.sessionStart, { mode: 0o600, flag: "wx" });
    }
    paths[ARG_TOKENS.session] = this.sessionPath;
    const args = this.start.args.map((arg) => paths[arg] ?? arg);
    const after = this.start.args.indexOf(ARG_TOKENS.taskExtension) + 1;
    const more = installed.flatMap((extension) => ["--extension", extension]);
    return after > 0 ? [...args.slice(0, after), ...more, ...args.slice(after)] : [...args, ...more];
  }

  private exited(code: number | null, signal: string | null): void {
    if (!this.running) return;
    this.running = false;
    // What is left in pi's group goes with it.
    signalGroup(this.child?.pid, "SIGKILL");
    this.events.exited(code, signal);
  }

  stop(signal: "SIGTERM" | "SIGKILL"): void {
    if (!this.running) return;
    signalGroup(this.child?.pid, signal);
    if (signal === "SIGTERM" && !this.killTimer) {
      this.killTimer = setTimeout(() => signalGroup(this.child?.pid, "SIGKILL"), SERVE_KILL_AFTER_MS);
    }
  }

  /** Moves a written message file into the inbox under `name` (a checked name: never read half-written). */
  deliver(temp: string, name: string): void {
    if (!this.inboxDir) return;
    fs.renameSync(temp, this.scratch.inside(this.inboxDir, name));
  }

  /** The session file pi writes and what it held when pi started, if the argv names one. */
  sessionAtStart(): { file: string; start: Buffer } | undefined {
    if (!this.sessionPath || !this.start.args.includes(ARG_TOKENS.session)) return undefined;
    return { file: this.sessionPath, start: this.sessionStart };
  }

  /** The session file pi wrote, if the argv named one and it exists. */
  sessionFile(): Buffer | undefined {
    if (!this.sessionPath || !this.start.args.includes(ARG_TOKENS.session)) return undefined;
    try {
      return fs.readFileSync(this.sessionPath);
    } catch {
      return undefined;
    }
  }

  /** The run is over: nothing pi started is left (its group, and what carries its token). */
  dispose(): void {
    if (this.killTimer) clearTimeout(this.killTimer);
    signalGroup(this.child?.pid, "SIGKILL");
    for (const pid of tokenProcesses(this.token)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone
      }
    }
  }
}

/**
 * Why pi did not start, said as the far side's (FAR_LINE_MARK: the local wrapper names the far side there): a missing pi is the usual first failure of a
 * new far host, and `spawn pi ENOENT` does not say that it is the far PATH that lacks it.
 */
export function piStartFailure(bin: string, err: NodeJS.ErrnoException): string {
  const where = `name another with the runner's pi field, or ${ENV.piBin} there`;
  if (err.code === "ENOENT") {
    return bin.includes("/")
      ? `${FAR_LINE_MARK} ${bin} not found (${where})`
      : `${FAR_LINE_MARK} ${bin} not found on the far PATH (${where})`;
  }
  return `${FAR_LINE_MARK} could not start pi (${bin}): ${err.message}`;
}
