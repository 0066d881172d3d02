/**
 * A small Node process that starts programs for a large one (process-launcher.ts says why):
 * pi's process hands each git run to it over an IPC channel and gets runProcess's result
 * back, so the fork happens in a ~45 MB process instead of a ~200 MB one, and pi's event loop
 * is held ~0.5 ms instead of ~8 ms a run (bench/process-helper.bench.mjs).
 *
 * - Started on first use; it keeps its parent alive only while a run is in flight, and ends
 *   when its parent goes (the channel closes).
 * - Runs wait in this process until the helper says it is ready. A helper that cannot start
 *   (or is not ready within READY_MS) is given up for the rest of this process: those runs
 *   and every later one start here directly, as without a helper.
 * - A helper that ends while a run is in flight (killed from outside) fails that run with a
 *   clear error rather than starting it again (git may have done its work); the next run
 *   starts a new helper. A run the helper has needs no timer of its own here: runProcess
 *   always settles within its time limit and graces.
 */
import { type ChildProcess, fork } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { LaunchProcess } from "./process-launcher.js";
import { type RunOptions, type RunResult, runProcess } from "./run-process.js";

export interface HelperRequest {
  id: number;
  file: string;
  args: string[];
  options: RunOptions;
}

export type HelperReply = { ready: true } | { id: number; result: RunResult } | { id: number; error: string };

/** The helper's entry beside this module (dist/lib/process-helper-main.js once built). */
export const HELPER_ENTRY = fileURLToPath(new URL("./process-helper-main.js", import.meta.url));
/** How long a new helper has to say it is ready before this process does without it. */
export const READY_MS = 5_000;
interface Run {
  request: HelperRequest;
  resolve(result: RunResult): void;
  reject(error: Error): void;
}

export interface ProcessHelperOptions {
  /** The helper's script (default HELPER_ENTRY). */
  entry?: string;
  /** Whether a helper may be started at all (default canStartHelper()). */
  usable?: boolean;
  /** How long a new helper has to say it is ready (default READY_MS). */
  readyMs?: number;
}

/** Whether this process is a plain Node that can start a script (not a compiled pi binary). */
export function canStartHelper(execPath: string = process.execPath): boolean {
  return /^node(js)?[\d.]*(\.exe)?$/i.test(path.basename(execPath)) && !process.versions.bun;
}

export class ProcessHelper {
  private child: ChildProcess | undefined;
  private ready = false;
  private unavailable: boolean;
  private nextId = 1;
  /** Sent to the helper, not yet answered. */
  private readonly inFlight = new Map<number, Run>();
  /** Waiting for the helper to be ready. */
  private waiting: Run[] = [];
  private readyTimer: NodeJS.Timeout | undefined;
  private readonly entry: string;
  private readonly readyMs: number;

  constructor(options: ProcessHelperOptions = {}) {
    this.entry = options.entry ?? HELPER_ENTRY;
    this.readyMs = options.readyMs ?? READY_MS;
    this.unavailable = !(options.usable ?? canStartHelper());
  }

  /** The launcher to hand to useProcessLauncher. */
  readonly launch: LaunchProcess = (file, args, options) => {
    if (this.unavailable) return runProcess(file, args, options);
    return new Promise<RunResult>((resolve, reject) => {
      const run: Run = { request: { id: this.nextId++, file, args: [...args], options }, resolve, reject };
      if (!this.child) this.start();
      if (this.unavailable) this.runHere(run);
      else if (this.ready) this.send(run);
      else this.waiting.push(run);
      this.holdParent();
    });
  };

  /** The helper's pid while one runs (for tests). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  private start(): void {
    this.ready = false;
    let child: ChildProcess;
    try {
      child = fork(this.entry, [], {
        execArgv: [],
        serialization: "advanced",
        stdio: ["ignore", "ignore", "ignore", "ipc"],
      });
    } catch {
      this.unavailable = true;
      return;
    }
    this.child = child;
    this.readyTimer = setTimeout(() => {
      // Its exit moves the waiting runs here (ended).
      if (this.child === child && !this.ready) child.kill("SIGKILL");
    }, this.readyMs);
    this.readyTimer.unref();
    child.on("message", (reply: HelperReply) => this.onReply(reply));
    child.once("error", () => this.ended(child, "could not be started"));
    child.once("exit", (code, signal) => this.ended(child, signal ? `was ended by ${signal}` : `exited (${code})`));
  }

  private onReply(reply: HelperReply): void {
    if ("ready" in reply) {
      this.ready = true;
      clearTimeout(this.readyTimer);
      for (const run of this.waiting.splice(0)) this.send(run);
      return;
    }
    const run = this.inFlight.get(reply.id);
    if (!run) return;
    this.inFlight.delete(reply.id);
    if ("error" in reply) run.reject(new Error(reply.error));
    else run.resolve(withBuffer(reply.result));
    this.holdParent();
  }

  private send(run: Run): void {
    const child = this.child;
    if (!child) {
      this.runHere(run);
      return;
    }
    this.inFlight.set(run.request.id, run);
    child.send(run.request, (error) => {
      // Never delivered, so never started: it starts here instead.
      if (error && this.inFlight.delete(run.request.id)) this.runHere(run);
    });
  }

  private fail(run: Run, why: string): void {
    if (!this.inFlight.delete(run.request.id)) return;
    run.reject(new Error(`the process helper ${why} while running ${run.request.file}`));
    this.holdParent();
  }

  /** The helper is gone: runs it never got start here; runs it had fail. */
  private ended(child: ChildProcess, how: string): void {
    if (this.child !== child) return;
    this.child = undefined;
    clearTimeout(this.readyTimer);
    // One that never got ready will not do better next time.
    if (!this.ready) this.unavailable = true;
    for (const run of [...this.inFlight.values()]) this.fail(run, how);
    for (const run of this.waiting.splice(0)) this.runHere(run);
    this.holdParent();
  }

  private runHere(run: Run): void {
    runProcess(run.request.file, run.request.args, run.request.options).then(run.resolve, run.reject);
  }

  /** The helper keeps this process alive only while a run is waiting or in flight. */
  private holdParent(): void {
    const child = this.child;
    if (!child) return;
    const busy = this.inFlight.size > 0 || this.waiting.length > 0;
    const channel = child.channel as { ref?: () => void; unref?: () => void } | null | undefined;
    if (busy) {
      child.ref();
      channel?.ref?.();
    } else {
      child.unref();
      channel?.unref?.();
    }
  }
}

/** Structured clone turns a Buffer into a Uint8Array: stdout is a Buffer again. */
function withBuffer(result: RunResult): RunResult {
  const out = result.stdout as Uint8Array;
  return { ...result, stdout: Buffer.from(out.buffer, out.byteOffset, out.byteLength) };
}
