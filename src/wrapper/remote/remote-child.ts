/**
 * A child that runs on a runner, seen by the run as a local child: the run's
 * ChildOperations start `<prefix> <remote_command…> serve` instead of pi and speak the runner
 * protocol with it (contracts/serve-protocol.ts). pi's stdout and stderr come back as they were
 * written, so the run normalizes, records and decides exactly as for a local pi; its exit
 * comes after the turn's commit has landed in the local checkout (workspace-bundle.ts) and the
 * session file was written back (line by line during the turn too: session-copy.ts). Stops
 * become `stop` frames; live messages in the run's inbox folder go over as `message` frames
 * (inbox-relay.ts); the workspace goes and the turn comes back through workspace-shipping.ts.
 * Failures are answers (far-failure.ts): a prefix that cannot start ends
 * with its own first line and stderr tail, a connection lost mid-turn with `runner_lost`.
 */
import { spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import fs from "node:fs";
import os from "node:os";
import { PassThrough, type Writable } from "node:stream";
import type { MetaV1 } from "../../contracts/meta.js";
import type { ResolvedRunner } from "../../contracts/runners.js";
import {
  type BlobKind,
  BlobReceiver,
  blobFrames,
  type ClientFrame,
  encodeFrame,
  FrameSplitter,
  MAX_BLOB_BYTES,
  parseServerFrame,
  SERVE_PROTOCOL_VERSION,
  type ServerFrame,
  type SessionAppend,
  sessionHere,
} from "../../contracts/serve-protocol.js";
import { errorText } from "../../lib/values.js";
import { type ChildHandle, nodeChildOperations, type SpawnOptions } from "../child.js";
import { FarSideEnded, failureText, STDERR_TAIL_BYTES, startFailure } from "./far-failure.js";
import { nameFarSide } from "./far-lines.js";
import { InboxRelay } from "./inbox-relay.js";
import { PiInputRelay } from "./pi-input-relay.js";
import { SessionCopy } from "./session-copy.js";
import { bundleWithin, type WorkspaceBase } from "./workspace-bundle.js";
import { startFrame, WorkspaceShipping } from "./workspace-shipping.js";

/** How long the far side may take to answer `hello` (a prefix that hangs: ssh asking for a password). */
export const HELLO_TIMEOUT_MS = 60_000;
/** After a SIGKILL stop, how long the far side gets to send the turn back before the prefix is killed. */
export const KILL_GRACE_MS = 2000;

export class RemoteChild extends EventEmitter implements ChildHandle {
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  private prefix: ReturnType<typeof spawn> | undefined;
  private helloSeen = false;
  private exitFrame: { code: number | null; signal: string | null } | undefined;
  private finished = false;
  private stopSignal: NodeJS.Signals | undefined;
  private prefixStderr = "";
  private farError: string | undefined;
  private readonly receiver = new BlobReceiver();
  private readonly blobs = new Map<BlobKind, Buffer>();
  private workspace: WorkspaceBase | undefined;
  private readonly shipping: WorkspaceShipping;
  private inbox: InboxRelay | undefined;
  private startSent = false;
  private helloWaiter: (() => void) | undefined;
  /** hello, workspace and start frame (converse()); the run's end waits for it. */
  private conversation: Promise<void> = Promise.resolve();
  /**
   * Awaited once the prefix has ended, before the turn's exit (a slurm job's last resort:
   * slurm-job.ts); `say` puts a line in the run's log.
   */
  afterPrefix: ((say: (line: string) => void) => Promise<void>) | undefined;
  /** A file descriptor the prefix gets as its fd 3 (a sandbox's seccomp filter, bwrap `--seccomp 3`). */
  fd3: number | undefined;
  /** What the far side's hello said: the commits it has of this agent's workspace, its bundle bound. */
  private farHave: string[] = [];
  private farMaxBundle: number = MAX_BLOB_BYTES.bundle;
  /** The session as the far side's pi writes it (a far side that streams it). */
  private sessionCopy: SessionCopy | undefined;
  /** pi's stdin for a child in RPC mode (a child with dialogs): pi-input-relay.ts. */
  private readonly piInput: PiInputRelay;
  readonly stdin: Writable | null;

  constructor(
    private readonly argv: string[],
    private readonly meta: MetaV1,
    private readonly runner: ResolvedRunner,
    args: string[],
    private readonly options: SpawnOptions,
  ) {
    super();
    this.shipping = new WorkspaceShipping(
      meta,
      options,
      (line) => this.stderr.write(`${this.label}: ${line}\n`),
      () => this.stopSignal !== undefined,
    );
    this.piInput = new PiInputRelay(args, (frame) => this.send(frame));
    this.stdin = this.piInput.stdin;
  }

  get pid(): number | undefined {
    return this.prefix?.pid;
  }

  private get label(): string {
    return `runner ${this.runner.name} (${this.runner.kind})`;
  }

  start(): this {
    const [bin, ...rest] = this.argv;
    const prefix = spawn(bin!, rest, {
      cwd: "/",
      env: { ...this.options.env, PI_SUBAGENT_RUN_TOKEN: this.options.runToken },
      stdio: this.fd3 === undefined ? ["pipe", "pipe", "pipe"] : ["pipe", "pipe", "pipe", this.fd3],
      detached: true,
      shell: false,
    });
    this.prefix = prefix;
    process.nextTick(() => this.emit("spawn"));
    prefix.once("error", (err) => {
      this.prefixStderr += `${errorText(err)}\n`;
    });
    prefix.stdin?.on("error", () => undefined);
    const splitter = new FrameSplitter(
      (line) => this.onLine(line),
      (message) => this.protocolError(message),
    );
    prefix.stdout?.on("data", (chunk: Buffer) => splitter.push(chunk));
    prefix.stderr?.on("data", (chunk: Buffer) => {
      this.prefixStderr = (this.prefixStderr + chunk.toString("utf8")).slice(-8 * STDERR_TAIL_BYTES);
    });
    prefix.once("close", (code, signal) => {
      splitter.end();
      void this.prefixClosed(code, signal);
    });
    this.conversation = this.converse();
    return this;
  }

  private send(frame: ClientFrame): void {
    const stdin = this.prefix?.stdin;
    if (stdin?.writable) stdin.write(encodeFrame(frame));
  }

  /**
   * hello (naming the agent's workspace, meta.json `runnerWorkspacePath`, so the far side can
   * keep it), then the start frame and its blobs: the workspace's bundle without what the far
   * side said it has, within the bound it announced; then the inbox.
   */
  private async converse(): Promise<void> {
    try {
      // The key: this machine and the agent's folder (a far host may serve several machines).
      const folder = this.meta.runnerWorkspacePath;
      const key = folder && `${os.hostname()}:${folder}`;
      // session_stream: what pi writes to its session comes back during the turn (session-copy.ts).
      const hello = { t: "hello", version: SERVE_PROTOCOL_VERSION, session_stream: true } as const;
      // pi_input: a child with dialogs runs pi in RPC mode, whose commands go to the far pi's stdin.
      this.send({ ...hello, ...(key && { workspace: key }), ...(this.piInput.wanted && { pi_input: true }) });
      // Both settle before either error counts: the workspace's git processes and temp index
      // must not outlive the run when the far side fails at once.
      const [prepared, greeted] = await Promise.allSettled([this.shipping.base(), this.hello()]);
      if (greeted.status === "rejected") throw greeted.reason;
      if (prepared.status === "rejected") throw prepared.reason;
      const state = prepared.value;
      const { workspace, bundle } = await bundleWithin(
        state,
        this.farHave,
        this.farMaxBundle,
        (line) => process.stderr.write(`${this.label}: ${line}\n`),
        this.options.tempDir,
      );
      if (this.finished || this.stopSignal) {
        this.endPrefix();
        return;
      }
      this.workspace = workspace;
      const args = this.piInput.farArgs((line) => this.stderr.write(`${this.label}: ${line}\n`));
      const start = startFrame(this.meta, args, this.options, workspace, bundle);
      this.send(start.frame);
      for (const [kind, data] of start.blobs) for (const frame of blobFrames(kind, data)) this.send(frame);
      this.startSent = true;
      // pi's input that the run wrote meanwhile (its prompt) follows the start.
      this.piInput.startSent();
      if (this.options.inboxDir) {
        this.inbox = new InboxRelay(this.options.inboxDir, (frame) => this.send(frame));
        this.inbox.start();
      }
    } catch (err) {
      // A far side that ended before its hello: its own words (prefixClosed) are the error.
      if (err instanceof FarSideEnded) return;
      this.farError = errorText(err);
      this.stderr.write(`${this.label}: ${errorText(err)}\n`);
      this.endPrefix();
    }
  }

  private hello(): Promise<void> {
    if (this.helloSeen) return Promise.resolve();
    return new Promise((resolve, reject) => {
      // Node's own timers in this class: it is the edge to a real process and connection, which tests run for real.
      const timer = setTimeout(() => reject(new Error(`no answer within ${HELLO_TIMEOUT_MS} ms`)), HELLO_TIMEOUT_MS);
      this.helloWaiter = () => {
        clearTimeout(timer);
        resolve();
      };
      this.prefix?.once("close", () => {
        clearTimeout(timer);
        reject(new FarSideEnded());
      });
    });
  }

  private onLine(line: string): void {
    const frame = parseServerFrame(line);
    if (typeof frame === "string") this.protocolError(frame);
    else this.onFrame(frame);
  }

  private onFrame(frame: ServerFrame): void {
    switch (frame.t) {
      case "hello":
        if (frame.version !== SERVE_PROTOCOL_VERSION) {
          this.protocolError(`the far side speaks protocol ${frame.version}, this side ${SERVE_PROTOCOL_VERSION}`);
          return;
        }
        this.helloSeen = true;
        this.farHave = frame.have ?? [];
        this.farMaxBundle = Math.min(frame.max_bundle ?? MAX_BLOB_BYTES.bundle, MAX_BLOB_BYTES.bundle);
        this.piInput.farSays(frame.pi_input === true);
        this.helloWaiter?.();
        return;
      case "stdout":
        this.shipping.letCheckoutGo();
        this.stdout.write(Buffer.from(frame.data, "base64"));
        return;
      case "stderr":
        this.stderr.write(nameFarSide(Buffer.from(frame.data, "base64"), this.runner));
        return;
      case "blob":
      case "blob_end":
        this.onBlob(frame);
        return;
      case "session_append":
        this.copySession(frame);
        return;
      case "commit":
        if (frame.head) this.land();
        return;
      case "exit":
        this.exitFrame = { code: frame.code, signal: frame.signal };
        return;
      case "error": {
        // An older far side refuses this side's version before its hello: say what to do.
        const older = !this.helloSeen && /protocol version \d+ is not supported/.test(frame.message);
        this.farError = frame.message;
        this.stderr.write(
          `${this.label}: ${frame.message}${older ? " (update subagent-wrapper on the far side)" : ""}\n`,
        );
        return;
      }
      default:
        return;
    }
  }

  private onBlob(frame: Extract<ServerFrame, { t: "blob" | "blob_end" }>): void {
    const step = this.receiver.take(frame);
    if (step.problem !== undefined) this.protocolError(step.problem);
    else if (step.done) this.blobs.set(step.done.kind, step.done.data);
  }

  /** In order, whole lines, into the session file the turn started with; the end's `session` blob replaces it. */
  private copySession(frame: SessionAppend): void {
    if (!this.meta.sessionPath) return;
    this.sessionCopy ??= new SessionCopy(this.meta.sessionPath, this.meta.cwd);
    this.sessionCopy.take(frame);
  }

  /** A commit frame: the bundle that came before it lands the turn's commit. */
  private land(): void {
    const bundle = this.blobs.get("bundle");
    const workspace = this.workspace;
    this.blobs.delete("bundle");
    if (!bundle || !workspace) this.protocolError("a commit frame without its bundle");
    else this.shipping.land(workspace, bundle);
  }

  private protocolError(message: string): void {
    if (this.farError) return;
    this.farError = `protocol error: ${message}`;
    this.stderr.write(`${this.label}: protocol error: ${message}\n`);
    this.endPrefix();
  }

  /** The far side is done or must be: its stdin closes (it stops what it started) and the prefix's group ends. */
  private endPrefix(): void {
    this.prefix?.stdin?.end();
    const pid = this.prefix?.pid;
    if (pid) setTimeout(() => nodeChildOperations.signalGroup(pid, "SIGKILL"), KILL_GRACE_MS).unref();
  }

  private async prefixClosed(code: number | null, signal: NodeJS.Signals | null): Promise<void> {
    this.inbox?.stop();
    this.shipping.letCheckoutGo();
    await Promise.all([
      this.conversation,
      this.shipping.landed,
      this.afterPrefix?.((line) => this.stderr.write(`${this.label}: ${line}\n`)),
    ]);
    const session = this.blobs.get("session");
    // With the local folder in its header (the far side's scratch is gone): it works here too.
    if (session && this.meta.sessionPath) fs.writeFileSync(this.meta.sessionPath, sessionHere(session, this.meta.cwd));
    if (this.exitFrame) {
      this.finish(this.exitFrame.code, this.exitFrame.signal);
      return;
    }
    const said = failureText(this.prefixStderr);
    const how = signal ? `killed by ${signal}` : `exit code ${code ?? "unknown"}`;
    // A stop the run asked for: its outcome is decided already (interrupted, timed out).
    if (this.stopSignal) {
      this.finish(null, this.stopSignal);
      return;
    }
    if (!this.helloSeen) {
      this.stderr.write(`${this.label} ${startFailure(said, how)}\n`);
    } else if (!this.farError) {
      this.stderr.write(
        `runner_lost: ${this.label}: the connection was lost mid-turn (${how})${said ? `: ${said}` : ""}\n`,
      );
    }
    this.finish(1, null);
  }

  private finish(code: number | null, signal: string | null): void {
    if (this.finished) return;
    this.finished = true;
    this.stdout.end();
    this.stderr.end();
    this.emit("exit", code, signal);
  }

  /** A stop from the run: a `stop` frame while the far side runs the turn; the prefix itself otherwise. */
  signal(signal: NodeJS.Signals): void {
    if (this.finished) return;
    const first = !this.stopSignal;
    this.stopSignal = signal === "SIGKILL" ? "SIGKILL" : (this.stopSignal ?? "SIGTERM");
    if (!this.startSent) {
      if (first || signal === "SIGKILL") this.endPrefix();
      return;
    }
    this.send({ t: "stop", signal: signal === "SIGKILL" ? "SIGKILL" : "SIGTERM" });
    if (signal === "SIGKILL") this.endPrefix();
  }
}
