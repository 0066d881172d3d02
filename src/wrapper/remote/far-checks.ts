/**
 * A turn's check commands on a runner's far side (ssh, Slurm, command): one check run per
 * round of checks, `<prefix> <remote_command…> serve` like a turn's, whose hello asks for a
 * check run on the agent's workspace key (contracts/serve-protocol.ts). The far side claims the
 * workspace the agent's turn left there — the files as the child left them, its build output
 * included — runs each command in the child's cwd there and answers with the exit code and the
 * output's end; then the workspace is kept for the next turn again. A far side that cannot (an
 * older serve) or a prefix that does not start makes each check fail with one line saying so.
 */
import { spawn } from "node:child_process";
import os from "node:os";
import type { MetaV1 } from "../../contracts/meta.js";
import type { ResolvedRunner } from "../../contracts/runners.js";
import {
  type CheckResult,
  type ClientFrame,
  encodeFrame,
  FrameSplitter,
  parseServerFrame,
  SERVE_PROTOCOL_VERSION,
} from "../../contracts/serve-protocol.js";
import { git } from "../../lib/git.js";
import { errorText } from "../../lib/values.js";
import { type FarCheckResult, type FarCheckRound, signalGroup } from "../child.js";
import { failureText } from "./far-failure.js";
import { HELLO_TIMEOUT_MS, KILL_GRACE_MS } from "./remote-child.js";

/** After a check's time-out, how long the far side gets to say it ended it before the check run is closed. */
export const FAR_CHECK_GRACE_MS = 5000;

/** What starts the far side: its argv, its environment, and what is undone once it has ended. */
export interface FarStart {
  argv: string[];
  env: Record<string, string>;
  fd3?: number | undefined;
  cleanup(): Promise<void> | void;
}

/** One check run: opened at the round's first command that runs, closed at its end. */
export class FarChecks implements FarCheckRound {
  private prefix: ReturnType<typeof spawn> | undefined;
  private helloSeen = false;
  private unable: string | undefined;
  private stderr = "";
  private waiting: ((frame: CheckResult | string) => void) | undefined;
  private opened: Promise<void> | undefined;
  private readonly closed: Promise<void>;
  private markClosed!: () => void;
  private cleanup: (() => Promise<void> | void) | undefined;
  private killTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly meta: MetaV1,
    private readonly runner: ResolvedRunner,
    private readonly start: () => FarStart,
  ) {
    this.closed = new Promise((resolve) => {
      this.markClosed = resolve;
    });
  }

  private get label(): string {
    return `runner ${this.runner.name} (${this.runner.kind})`;
  }

  /** Runs `command` on the far side in the child's cwd; never rejects (what went wrong is the check's output). */
  async run(command: string, timeoutMs: number, signal: AbortSignal): Promise<FarCheckResult> {
    const started = Date.now();
    const failed = (why: string): FarCheckResult => ({
      exitCode: null,
      output: why,
      durationMs: Date.now() - started,
      cannotRun: true,
    });
    try {
      this.opened ??= this.open();
      await this.opened;
    } catch (err) {
      this.unable ??= `${this.label}: ${errorText(err)}`;
    }
    if (this.unable) return failed(`the check could not run on the far side: ${this.unable}`);
    const cwd = await relativeCwd(this.meta.cwd);
    const answer = new Promise<CheckResult | string>((resolve) => {
      this.waiting = resolve;
    });
    const onAbort = () => this.send({ t: "stop", signal: "SIGTERM" });
    signal.addEventListener("abort", onAbort, { once: true });
    if (signal.aborted) onAbort();
    this.send({ t: "check", command, cwd, env: this.meta.env ?? {}, timeout_ms: Math.ceil(timeoutMs) });
    // The far side ends the check at its time-out; a far side that does not answer by then is closed.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<string>((resolve) => {
      timer = setTimeout(
        () => resolve(`${this.label}: the far side did not answer within ${Math.round(timeoutMs / 1000)} s`),
        timeoutMs + FAR_CHECK_GRACE_MS,
      );
    });
    const result = await Promise.race([answer, late]);
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
    this.waiting = undefined;
    if (typeof result === "string") {
      this.unable = result;
      this.end();
      return failed(`the check could not run on the far side: ${result}`);
    }
    return { exitCode: result.exit_code, output: result.output, durationMs: Date.now() - started };
  }

  /** The check run is over: the far side's stdin closes (it keeps the workspace), the prefix ends, and what was made for it goes. */
  async close(): Promise<void> {
    if (!this.prefix) return;
    this.end();
    // A prefix that never started (spawn's error) may never say `close`: its SIGKILL's grace bounds the wait.
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([this.closed, new Promise((resolve) => (bound = setTimeout(resolve, KILL_GRACE_MS + 1000)))]);
    clearTimeout(bound);
    clearTimeout(this.killTimer);
    await Promise.resolve()
      .then(this.cleanup)
      .catch(() => undefined);
  }

  private open(): Promise<void> {
    const { argv, env, fd3, cleanup } = this.start();
    this.cleanup = cleanup;
    const [bin, ...rest] = argv;
    const prefix = spawn(bin!, rest, {
      cwd: "/",
      env,
      stdio: fd3 === undefined ? ["pipe", "pipe", "pipe"] : ["pipe", "pipe", "pipe", fd3],
      detached: true,
      shell: false,
    });
    this.prefix = prefix;
    prefix.stdin?.on("error", () => undefined);
    const splitter = new FrameSplitter(
      (line) => this.onLine(line),
      (message) => this.lost(`protocol error: ${message}`),
    );
    prefix.stdout?.on("data", (chunk: Buffer) => splitter.push(chunk));
    prefix.stderr?.on("data", (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString("utf8")).slice(-8192);
    });
    const folder = this.meta.runnerWorkspacePath;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer within ${HELLO_TIMEOUT_MS} ms`)), HELLO_TIMEOUT_MS);
      const done = (err?: Error) => {
        clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      };
      prefix.once("error", (err) => done(err));
      prefix.once("close", (code, sig) => {
        splitter.end();
        this.markClosed();
        const said = failureText(this.stderr);
        const how = sig ? `killed by ${sig}` : `exit code ${code ?? "unknown"}`;
        const why = `the far side ended (${how})${said ? `: ${said}` : ""}`;
        this.lost(why);
        done(new Error(why));
      });
      this.onHello = (check) => {
        if (!check)
          this.unable = `${this.label}: its subagent-wrapper cannot run checks (older than this one): update it there`;
        done();
      };
      if (!folder) {
        done(new Error("the run names no runner workspace (meta.json runnerWorkspacePath)"));
        return;
      }
      this.send({ t: "hello", version: SERVE_PROTOCOL_VERSION, workspace: `${os.hostname()}:${folder}`, check: true });
    });
  }

  private onHello: ((check: boolean) => void) | undefined;

  private onLine(line: string): void {
    const frame = parseServerFrame(line);
    if (typeof frame === "string") this.lost(`protocol error: ${frame}`);
    else if (frame.t === "hello" && !this.helloSeen) {
      this.helloSeen = true;
      this.onHello?.(frame.check === true);
    } else if (frame.t === "check_result") this.waiting?.(frame);
    else if (frame.t === "error") this.lost(`${this.label}: ${frame.message}`);
  }

  /** The check run cannot go on: a check waiting for its answer gets `why`. */
  private lost(why: string): void {
    this.unable ??= why;
    this.waiting?.(why);
  }

  private send(frame: ClientFrame): void {
    const stdin = this.prefix?.stdin;
    if (stdin?.writable) stdin.write(encodeFrame(frame));
  }

  /** stdin closes (serve ends what runs and keeps the workspace); the prefix's group is ended if it lingers. */
  private end(): void {
    this.prefix?.stdin?.end();
    const pid = this.prefix?.pid;
    if (pid && !this.killTimer) this.killTimer = setTimeout(() => signalGroup(pid, "SIGKILL"), KILL_GRACE_MS).unref();
  }
}

/** The child's cwd below its workspace's top, `/`-separated ("" for the top), as the turn's `start` named it. */
async function relativeCwd(cwd: string): Promise<string> {
  const prefix = (await git(["rev-parse", "--show-prefix"], { cwd }).catch(() => "")).trim();
  return prefix.replace(/\/$/, "");
}
