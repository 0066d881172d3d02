/**
 * `subagent-wrapper serve`: the far side of a runner. It reads the runner protocol
 * (contracts/serve-protocol.ts) on stdin and answers on stdout: after `hello` and `start` and
 * the blobs `start` announces, it unpacks the workspace into a scratch folder of its own, runs
 * pi there with the task extension (live messages go into an inbox folder it owns), forwards
 * pi's stdout and stderr, commits the turn and sends its bundle back, then `exit`, and removes
 * its scratch folder, or keeps it for the agent's next turn when the local side named the
 * workspace (protocol 2: the `hello` answer then names the commits it still has). It acts only on the protocol: no shell, no path outside its scratch, every
 * frame and blob bounded; anything malformed ends the run with an `error` frame and exit 1.
 * A live message or a stop that comes while the workspace is still being unpacked waits and
 * goes to pi the moment it is started (the messages first): nothing is dropped in a turn's
 * first second.
 * When stdin closes or a stop arrives, pi's group gets SIGTERM, then SIGKILL 3 s later: nothing
 * it started outlives it by more than that. Imports only the contracts and the in-child code,
 * so it runs from an installed package on a machine that never saw the parent.
 */
import fs from "node:fs";
import type { Readable, Writable } from "node:stream";
import { cwdStartedPath } from "../contracts/meta.js";
import {
  type BlobKind,
  BlobReceiver,
  blobFrames,
  type ClientFrame,
  encodeFrame,
  FrameSplitter,
  parseClientFrame,
  SERVE_PROTOCOL_VERSIONS,
  type ServerFrame,
  type ServeStart,
  serveBundleBound,
} from "../contracts/serve-protocol.js";
import { PiProcess } from "./pi-process.js";
import { SessionStream } from "./session-stream.js";
import { Scratch } from "./workspace.js";

export interface ServeIo {
  input: Readable;
  output: Writable;
  /** What the far side calls itself in `hello` (package name and version). */
  server: string;
}

type Phase = "hello" | "start" | "blobs" | "running" | "over";

/** How long the rest of the checkout waits for pi to say its start-up is over (then it goes on anyway). */
const CHECKOUT_AFTER_START_MS = 10_000;
const STARTED_POLL_MS = 20;

class ServeSession {
  private phase: Phase = "hello";
  private start: ServeStart | undefined;
  private readonly blobs = new Map<BlobKind, Buffer>();
  private readonly bundleBound = serveBundleBound(process.env);
  private readonly receiver = new BlobReceiver({ bundle: this.bundleBound });
  private scratch: Scratch | undefined;
  /** The workspace key of a version-2 hello: the workspace is kept after a turn that went through. */
  private key: string | undefined;
  private turnSent = false;
  /** The scratch space claimed (a kept workspace, or a new one) and the hello answered. */
  private prepared: Promise<void> = Promise.resolve();
  private pi: PiProcess | undefined;
  /** The local side asked for the session stream (version 2, `session_stream` in its hello). */
  private streamSession = false;
  private sessionStream: SessionStream | undefined;
  private exitCode = 0;
  private finished!: () => void;
  readonly done = new Promise<void>((resolve) => {
    this.finished = resolve;
  });
  private messageCount = 0;
  /**
   * Live messages (written whole into the run folder) and a stop that came while the
   * workspace was still being unpacked, before pi ran: handed over the moment pi is started,
   * the messages first, so none is lost in a turn's first second.
   */
  private readonly waiting: Array<{ temp: string; name: string }> = [];
  private waitingStop: "SIGTERM" | "SIGKILL" | undefined;
  /** The rest of the checkout, written while pi starts; the turn's commit waits for it. */
  private checkout: Promise<void> = Promise.resolve();
  /** The unpacking and start of pi: the scratch space is removed only once it is over. */
  private launched: Promise<void> = Promise.resolve();

  constructor(private readonly io: ServeIo) {}

  begin(): void {
    const splitter = new FrameSplitter(
      (line) => this.onLine(line),
      (message) => this.fail(message),
    );
    this.io.input.on("data", (chunk: Buffer) => splitter.push(chunk));
    this.io.input.once("end", () => {
      splitter.end();
      this.inputClosed();
    });
    this.io.input.once("error", () => this.inputClosed());
    this.io.output.on("error", () => this.inputClosed());
  }

  get code(): number {
    return this.exitCode;
  }

  private send(frame: ServerFrame): void {
    if (this.phase === "over" && frame.t !== "error" && frame.t !== "exit") return;
    try {
      this.io.output.write(encodeFrame(frame));
    } catch {
      // the reader is gone: inputClosed() ends the run
    }
  }

  private onLine(line: string): void {
    if (this.phase === "over") return;
    const frame = parseClientFrame(line);
    if (typeof frame === "string") this.fail(frame);
    else this.onFrame(frame);
  }

  private onFrame(frame: ClientFrame): void {
    if (this.phase === "hello") this.onHello(frame);
    else if (this.phase === "start") {
      if (frame.t === "start") this.onStart(frame);
      else this.fail(`expected start, got ${frame.t}`);
    } else if (this.phase === "blobs") this.onBlob(frame);
    else if (this.phase === "running") this.onRunning(frame);
  }

  private onHello(frame: ClientFrame): void {
    if (frame.t !== "hello") this.fail(`expected hello, got ${frame.t}`);
    else if (!SERVE_PROTOCOL_VERSIONS.includes(frame.version)) {
      this.fail(
        `protocol version ${frame.version} is not supported (this side speaks ${SERVE_PROTOCOL_VERSIONS.join(" and ")})`,
      );
    } else {
      this.phase = "start";
      this.streamSession = frame.version >= 2 && frame.session_stream === true;
      this.prepared = this.prepare(frame.version, frame.version >= 2 ? frame.workspace : undefined);
    }
  }

  /** Claims the scratch space (the kept workspace of `key`, if any) and answers hello with what it has. */
  private async prepare(version: number, key: string | undefined): Promise<void> {
    try {
      this.key = key;
      this.scratch = Scratch.create(key);
      if (version < 2) {
        this.send({ t: "hello", version, server: this.io.server });
        return;
      }
      const have = await this.scratch.have();
      const stream = this.streamSession ? { session_stream: true } : {};
      this.send({ t: "hello", version, server: this.io.server, have, max_bundle: this.bundleBound, ...stream });
    } catch (err) {
      this.fail(`cannot make the scratch space: ${(err as Error).message}`);
    }
  }

  private onStart(frame: ServeStart): void {
    if (
      !frame.blobs.includes("bundle") ||
      !frame.blobs.includes("task") ||
      new Set(frame.blobs).size !== frame.blobs.length
    ) {
      this.fail("start must announce the bundle and the task, each blob once");
      return;
    }
    this.start = frame;
    this.phase = "blobs";
  }

  private onBlob(frame: ClientFrame): void {
    const expected = this.start!.blobs.filter((kind) => !this.blobs.has(kind));
    if ((frame.t !== "blob" && frame.t !== "blob_end") || !expected.includes(frame.kind)) {
      this.fail(`expected a blob of ${expected.join(" or ")}, got ${frame.t}`);
      return;
    }
    const step = this.receiver.take(frame);
    if (step.problem !== undefined) this.fail(step.problem);
    if (!step.done) return;
    this.blobs.set(step.done.kind, step.done.data);
    if (this.blobs.size === this.start!.blobs.length) this.launched = this.launch();
  }

  private onRunning(frame: ClientFrame): void {
    if (frame.t === "stop") {
      if (this.pi) this.pi.stop(frame.signal);
      else if (this.waitingStop !== "SIGKILL") this.waitingStop = frame.signal;
    } else if (frame.t === "message" && this.start?.inbox && this.scratch)
      this.deliver(frame.name, frame.id, frame.text);
    else this.fail(`unexpected ${frame.t} frame while the child runs`);
  }

  /**
   * A live message, written whole into the inbox folder the task extension watches (rename:
   * never half-read); before pi runs, it waits in the run folder and goes in first (handOver).
   */
  private deliver(name: string, id: string, text: string): void {
    this.messageCount += 1;
    try {
      const temp = this.scratch!.writeRunFile(`message-${this.messageCount}.tmp`, JSON.stringify({ id, text }));
      if (this.pi) this.pi.deliver(temp, name);
      else this.waiting.push({ temp, name });
    } catch (err) {
      this.fail(`cannot deliver a live message: ${(err as Error).message}`);
    }
  }

  private async launch(): Promise<void> {
    this.phase = "running";
    const start = this.start!;
    try {
      await this.prepared;
      if (!this.scratch || this.phase !== "running") return;
      await this.scratch.unpack(this.blobs.get("bundle")!, start.base, start.cwd);
      this.blobs.delete("bundle");
      const cwd = this.scratch.childCwd(start.cwd);
      if (this.phase !== "running") return;
      const readyFile = this.scratch.runFile("cwd-ready");
      this.pi = new PiProcess(this.scratch, start, this.blobs, cwd, readyFile, {
        started: (pid) => this.send({ t: "started", pid }),
        stdout: (data) => this.send({ t: "stdout", data: data.toString("base64") }),
        stderr: (data) => this.send({ t: "stderr", data: data.toString("base64") }),
        exited: (code, signal) => void this.afterExit(code, signal),
      });
      this.pi.spawn();
      this.handOver();
      this.streamTheSession();
      // The rest of the files while pi starts; its tool calls wait for `ready`.
      this.checkout = this.finishCheckout(readyFile);
    } catch (err) {
      this.fail((err as Error).message);
    }
  }

  /** What came for pi before it ran: the messages into its inbox (in the order they came), then a stop. */
  private handOver(): void {
    for (const { temp, name } of this.waiting.splice(0)) this.pi!.deliver(temp, name);
    if (this.waitingStop) this.pi!.stop(this.waitingStop);
  }

  /** What pi appends to its session goes over as it is written (when the local side asked for it). */
  private streamTheSession(): void {
    const session = this.streamSession ? this.pi?.sessionAtStart() : undefined;
    if (!session) return;
    this.sessionStream = new SessionStream(
      session.file,
      session.start,
      (frame) => this.send(frame),
      () => !this.io.output.writableNeedDrain,
    );
    this.sessionStream.begin();
  }

  /**
   * Writes the rest of the checkout once pi's start-up is over (the task extension's
   * `.started` file: the two do not share the CPU), then says so in the ready file (whole:
   * temp file + rename).
   */
  private async finishCheckout(readyFile: string): Promise<void> {
    let word = "ready";
    try {
      await this.piStarted(readyFile);
      await this.scratch!.finishCheckout();
    } catch (err) {
      word = `the workspace could not be checked out: ${(err as Error).message}`;
    }
    const temp = this.scratch!.writeRunFile("cwd-ready.tmp", word);
    fs.renameSync(temp, readyFile);
  }

  /** Resolves once pi says its start-up is over, pi is gone, or CHECKOUT_AFTER_START_MS passed. */
  private piStarted(readyFile: string): Promise<void> {
    const started = cwdStartedPath(readyFile);
    const until = Date.now() + CHECKOUT_AFTER_START_MS;
    return new Promise((resolve) => {
      const poll = setInterval(() => {
        if (fs.existsSync(started) || !this.pi?.running || this.phase !== "running" || Date.now() > until) {
          clearInterval(poll);
          resolve();
        }
      }, STARTED_POLL_MS);
    });
  }

  /** pi is gone: its session and the turn's commit go back, then `exit`. */
  private async afterExit(code: number | null, signal: string | null): Promise<void> {
    // The whole session goes next (the authority): no piece of it after that.
    this.sessionStream?.stop();
    if (this.phase !== "running") {
      // A checkout still writing goes first: the scratch space is removed after it.
      void this.checkout.finally(() => this.over());
      return;
    }
    const start = this.start!;
    try {
      await this.checkout;
      const session = this.pi?.sessionFile();
      if (session) for (const frame of blobFrames("session", session)) this.send(frame);
      const turn = await this.scratch!.commitTurn(start.base, `subagent turn (run ${start.runId})`);
      if (turn) for (const frame of blobFrames("bundle", turn.bundle)) this.send(frame);
      this.send({ t: "commit", base: start.base, ...(turn && { head: turn.head }) });
      this.turnSent = true;
    } catch (err) {
      this.send({ t: "error", message: `cannot send the turn back: ${(err as Error).message}` });
      this.exitCode = 1;
    }
    this.send({ t: "exit", code, signal });
    this.over();
  }

  private fail(message: string): void {
    if (this.phase === "over") return;
    this.send({ t: "error", message });
    this.exitCode = 1;
    if (this.pi?.running) {
      this.phase = "over";
      this.pi.stop("SIGTERM");
      return; // afterExit → over() once pi is gone
    }
    this.phase = "over";
    this.over();
  }

  private inputClosed(): void {
    if (this.pi?.running) {
      // Nobody is listening: pi ends (SIGKILL 3 s after SIGTERM), then the scratch space goes.
      this.phase = "over";
      this.pi.stop("SIGTERM");
      return;
    }
    if (this.phase !== "over") {
      this.phase = "over";
      this.over();
    }
  }

  private over(): void {
    this.phase = "over";
    this.sessionStream?.stop();
    this.pi?.dispose();
    this.io.input.pause();
    this.io.input.destroy();
    // An error can come while the workspace is still being unpacked (garbage after the last
    // blob): the unpacking ends first, sees the run is over, and only then is the scratch space
    // removed, so nothing is written into it after its removal.
    void Promise.all([this.prepared, this.launched]).finally(() => {
      // A turn that went through keeps its workspace for the agent's next turn (protocol 2 with a key).
      if (this.key !== undefined && this.turnSent && this.exitCode === 0) this.scratch?.keep(this.key);
      else this.scratch?.remove();
      this.finished();
    });
  }
}

/** Serves one run over `io`; resolves with the exit code (0, or 1 after an error frame). */
export async function serve(io: ServeIo): Promise<number> {
  const session = new ServeSession(io);
  session.begin();
  await session.done;
  await new Promise<void>((resolve) => io.output.write("", () => resolve()));
  return session.code;
}
