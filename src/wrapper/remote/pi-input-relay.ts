/**
 * pi's stdin on a runner, for a child in RPC mode (a child with dialogs): what the run writes
 * to it (the prompt, dialog answers, its end) goes to the far side as `pi_input` frames and
 * `pi_input_end` once the start frame is sent, and is kept until then (the run writes its
 * prompt the moment the child is spawned, before the far side has said hello). A far side that
 * does not grant `pi_input` (an older serve) runs that pi in json mode instead, the task as its
 * argument, and the input is dropped: that child runs without dialogs, as before.
 */
import { Writable } from "node:stream";
import { type ClientFrame, PI_INPUT_BYTES } from "../../contracts/serve-protocol.js";
import { TASK_PLACEHOLDER } from "../../contracts/task-handoff.js";
import { runsRpc } from "../child.js";

export class PiInputRelay {
  /** The child's stdin as the run sees it; null for a pi that takes no input (json mode). */
  readonly stdin: Writable | null;
  /** The child runs pi in RPC mode: the hello asks for `pi_input`. */
  readonly wanted: boolean;
  private granted = false;
  private started = false;
  private readonly pending: Buffer[] = [];
  private ended = false;

  constructor(
    private readonly args: string[],
    private readonly send: (frame: ClientFrame) => void,
  ) {
    this.wanted = runsRpc(args);
    this.stdin = this.wanted
      ? new Writable({
          write: (chunk: Buffer, _encoding, done) => {
            this.input(chunk);
            done();
          },
          final: (done) => {
            this.end();
            done();
          },
        })
      : null;
  }

  /** The far side's hello: whether it takes pi's input. */
  farSays(granted: boolean): void {
    this.granted = granted;
  }

  /** pi's argv for the start frame; `warn` says why a child that wanted dialogs runs without them. */
  farArgs(warn: (line: string) => void): string[] {
    if (!this.wanted || this.granted) return this.args;
    warn("its far side does not take pi's input (an older serve): the child runs without dialogs");
    const mode = this.args.indexOf("--mode");
    return [...this.args.slice(0, mode + 1), "json", ...this.args.slice(mode + 2), TASK_PLACEHOLDER];
  }

  /** The start frame and its blobs are sent: what was kept follows them. */
  startSent(): void {
    this.started = true;
    for (const chunk of this.pending.splice(0)) this.input(chunk);
    if (this.ended) this.end();
  }

  private input(chunk: Buffer): void {
    if (!this.started) {
      this.pending.push(chunk);
      return;
    }
    if (!this.granted) return;
    for (let at = 0; at < chunk.length; at += PI_INPUT_BYTES)
      this.send({ t: "pi_input", data: chunk.subarray(at, at + PI_INPUT_BYTES).toString("base64") });
  }

  private end(): void {
    this.ended = true;
    if (this.started && this.granted) this.send({ t: "pi_input_end" });
  }
}
