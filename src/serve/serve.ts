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
 * so it runs from an installed package on a machine that never saw the parent. Where the run
 * stands and what each frame or happening does is one pure machine, serve-phases.ts; this
 * file carries out what it says. A check run (a hello with `check`) claims the kept workspace
 * and runs its `check` frames there (serve-check.ts), then keeps the workspace again.
 */
import type { Readable, Writable } from "node:stream";
import {
  type BlobKind,
  BlobReceiver,
  blobFrames,
  type CheckRequest,
  type ClientFrame,
  encodeFrame,
  FrameSplitter,
  parseClientFrame,
  type ServerFrame,
  type ServeStart,
  serveBundleBound,
} from "../contracts/serve-protocol.js";
import { lateCheckout } from "./late-checkout.js";
import { installedExtensions, PiProcess, runToken } from "./pi-process.js";
import { FarCheck } from "./serve-check.js";
import {
  isEnding,
  mayStartPi,
  type ServeAction,
  type ServeEvent,
  type ServePhase,
  serveTransition,
} from "./serve-phases.js";
import { SessionStream } from "./session-stream.js";
import { Scratch } from "./workspace.js";

export interface ServeIo {
  input: Readable;
  output: Writable;
  /** What the far side calls itself in `hello` (package name and version). */
  server: string;
}

class ServeSession {
  private phase: ServePhase = "hello";
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
  /** A check run (a hello with `check`), and its running check. */
  private checkRun = false;
  private check: FarCheck | undefined;
  /** The local side asked for the session stream (version 2, `session_stream` in its hello). */
  private streamSession = false;
  /** The local side sends pi's stdin (version 2, `pi_input` in its hello): its pi runs in RPC mode. */
  private piInput = false;
  /** pi's input that came before pi ran, and whether its end came too: handed over when pi starts. */
  private readonly waitingInput: Buffer[] = [];
  private waitingInputEnd = false;
  private sessionStream: SessionStream | undefined;
  private exitCode = 0;
  /** How pi ended, for the `exit` frame. */
  private exitStatus: { code: number | null; signal: string | null } = { code: null, signal: null };
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
    if (isEnding(this.phase) && frame.t !== "error" && frame.t !== "exit") return;
    try {
      this.io.output.write(encodeFrame(frame));
    } catch {
      // the reader is gone: inputClosed() ends the run
    }
  }

  private onLine(line: string): void {
    if (isEnding(this.phase)) return;
    const frame = parseClientFrame(line);
    if (typeof frame === "string") this.fail(frame);
    else this.step({ type: "frame", frame });
  }

  /** Moves the phase as the machine says, and does what it says. */
  private step(event: ServeEvent): void {
    const { phase, action } = serveTransition(this.phase, event);
    this.phase = phase;
    this.act(action);
  }

  private act(action: ServeAction): void {
    switch (action.kind) {
      case "none":
        return;
      case "reject":
        this.fail(action.message);
        return;
      case "prepare":
        this.streamSession = action.streamSession;
        this.piInput = action.piInput;
        this.checkRun = action.check;
        this.prepared = this.prepare(action.version, action.workspace);
        return;
      case "check":
        void this.runCheck(action.frame);
        return;
      case "stop_check":
        this.check?.stop("stopped: the run was stopped");
        return;
      case "accept_start":
        this.start = action.start;
        return;
      case "take_blob":
        this.onBlob(action.frame);
        return;
      case "launch":
        this.launched = this.launch();
        return;
      case "stop":
        if (action.now) this.pi?.stop(action.signal);
        else if (this.waitingStop !== "SIGKILL") this.waitingStop = action.signal;
        return;
      case "message": {
        const { name, id, text } = action.frame;
        if (this.start?.inbox && this.scratch) this.deliver(name, id, text);
        else this.fail("unexpected message frame while the child runs");
        return;
      }
      case "pi_input":
        this.toPi(action.frame, action.now);
        return;
      case "stop_pi":
        this.pi?.stop("SIGTERM"); // the end comes once pi is gone (pi_exited)
        return;
      case "send_turn_back":
        void this.sendTurnBack();
        return;
      case "end":
        this.over();
        return;
      case "end_after_checkout":
        // A checkout still writing goes first: the scratch space is removed after it.
        void this.checkout.finally(() => this.over());
        return;
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
      const input = this.piInput ? { pi_input: true } : {};
      const check = this.checkRun ? { check: true } : {};
      const hello = { t: "hello", version, server: this.io.server, have, max_bundle: this.bundleBound } as const;
      this.send({ ...hello, ...stream, ...input, ...check });
    } catch (err) {
      this.fail(`cannot make the scratch space: ${(err as Error).message}`);
    }
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
    if (this.blobs.size === this.start!.blobs.length) this.step({ type: "blobs_in" });
  }

  /** A check run's command, in the workspace the agent's last turn left here; one at a time. */
  private async runCheck(request: CheckRequest): Promise<void> {
    if (this.check) return this.fail("a check frame while a check runs");
    const claimed = this.prepared.then(() => this.scratch);
    let scratch: Scratch | undefined;
    try {
      scratch = await claimed;
      if (!scratch?.kept) throw new Error("no workspace of this agent is kept here (its last turn did not keep one)");
      this.check = new FarCheck(request, scratch.childCwd(request.cwd), runToken());
    } catch (err) {
      const output = `the check could not start on the far side: ${(err as Error).message}`;
      this.send({ t: "check_result", exit_code: null, output, duration_ms: 0 });
      return;
    }
    this.send(await this.check.done);
    this.check = undefined;
  }

  /** pi's stdin (a pi in RPC mode): to pi (`now`), or kept until pi is started; nothing for a local side that did not ask. */
  private toPi(frame: Extract<ClientFrame, { t: "pi_input" | "pi_input_end" }>, now: boolean): void {
    if (!this.piInput) {
      this.fail(`unexpected ${frame.t} frame: the hello did not ask for pi_input`);
      return;
    }
    if (frame.t === "pi_input") {
      const data = Buffer.from(frame.data, "base64");
      if (now) this.pi?.input(data);
      else this.waitingInput.push(data);
    } else if (now) this.pi?.endInput();
    else this.waitingInputEnd = true;
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
    const start = this.start!;
    try {
      await this.prepared;
      // The run may have ended meanwhile (an error, stdin closed): pi is then never started.
      if (!this.scratch || !mayStartPi(this.phase)) return;
      const installed = installedExtensions(this.scratch, start);
      await this.scratch.unpack(this.blobs.get("bundle")!, start.base, start.cwd);
      this.blobs.delete("bundle");
      const found = await installed;
      const cwd = this.scratch.childCwd(start.cwd);
      if (!mayStartPi(this.phase)) return;
      const readyFile = this.scratch.runFile("cwd-ready");
      this.pi = new PiProcess(this.scratch, start, this.blobs, cwd, readyFile, this.piInput, {
        started: (pid) => this.send({ t: "started", pid }),
        stdout: (data) => this.send({ t: "stdout", data: data.toString("base64") }),
        stderr: (data) => this.send({ t: "stderr", data: data.toString("base64") }),
        exited: (code, signal) => this.afterExit(code, signal),
      });
      this.pi.spawn(found);
      this.step({ type: "pi_started" });
      this.handOver();
      this.streamTheSession();
      // The rest of the files while pi starts; its tool calls wait for `ready`.
      this.checkout = lateCheckout(this.scratch, readyFile, () => this.pi?.running === true && !isEnding(this.phase));
    } catch (err) {
      this.fail((err as Error).message);
    }
  }

  /** What came for pi before it ran: the messages into its inbox (in the order they came), then a stop. */
  private handOver(): void {
    for (const { temp, name } of this.waiting.splice(0)) this.pi!.deliver(temp, name);
    for (const data of this.waitingInput.splice(0)) this.pi!.input(data);
    if (this.waitingInputEnd) this.pi!.endInput();
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

  /** pi is gone. */
  private afterExit(code: number | null, signal: string | null): void {
    // The whole session goes next (the authority): no piece of it after that.
    this.sessionStream?.stop();
    this.exitStatus = { code, signal };
    this.step({ type: "pi_exited" });
  }

  /** pi's session and the turn's commit go back, then `exit`. */
  private async sendTurnBack(): Promise<void> {
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
    this.send({ t: "exit", code: this.exitStatus.code, signal: this.exitStatus.signal });
    this.step({ type: "turn_returned" });
  }

  /** One `error` frame and exit 1; the machine says whether pi is stopped first. */
  private fail(message: string): void {
    if (isEnding(this.phase)) return;
    this.send({ t: "error", message });
    this.exitCode = 1;
    this.step({ type: "failed" });
  }

  private inputClosed(): void {
    this.step({ type: "input_closed" });
  }

  /** The run is over (the machine's phase is `over`): pi's leftovers go, then the scratch space. */
  private over(): void {
    this.sessionStream?.stop();
    this.pi?.dispose();
    this.check?.dispose();
    this.io.input.pause();
    this.io.input.destroy();
    // An error can come while the workspace is still being unpacked (garbage after the last
    // blob): the unpacking ends first, sees the run is over, and only then is the scratch space
    // removed, so nothing is written into it after its removal.
    void Promise.all([this.prepared, this.launched]).finally(() => {
      // A turn that went through keeps its workspace for the agent's next turn (protocol 2 with
      // a key); a check run keeps the one it claimed, whatever came (it is the agent's).
      const keep = this.checkRun ? this.scratch?.kept === true : this.turnSent && this.exitCode === 0;
      if (this.key !== undefined && keep) this.scratch?.keep(this.key);
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
