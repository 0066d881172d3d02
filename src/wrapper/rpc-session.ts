/**
 * A child pi in RPC mode (meta.json `dialogs`): its extensions get a UI, so their dialogs can
 * reach a person (dialog-desk.ts). pi then reads commands on its stdin and prints the same
 * events as in json mode, plus `response` and `extension_ui_request` lines; but it does not
 * exit when its work is done. It exits (code 0) when its stdin ends, and the wrapper ends it
 * exactly when pi has no automatic work left, which is when json mode would have exited:
 *
 * - a pi that emits `agent_settled` (1.x) says so itself: stdin ends at `agent_settled`;
 * - pi 0.73.1 does not. Its `agent_end` is printed from its event queue, and any retry
 *   (`auto_retry_start`) or compaction (`compaction_start`) it starts after that run is printed
 *   in the same synchronous step, before pi reads stdin again. So after each `agent_end` (and
 *   each `compaction_end`) with no retry announced, the wrapper sends a `get_state` probe: its
 *   response is printed after anything pi started at that `agent_end`. When nothing started in
 *   between (no retry, compaction, agent or turn start) and the response says pi is neither
 *   streaming nor compacting, pi's work is over; otherwise the next `agent_end` probes again.
 *
 * The task itself still travels through the task file (task-file.ts): the prompt command
 * carries the same placeholder json mode gets on its command line, and the task extension
 * swaps in the file's exact text, so both modes hand pi the task the same way.
 */
import path from "node:path";
import type { Writable } from "node:stream";
import { DIALOG_METHODS, DIALOGS_FOLDER } from "../contracts/dialogs.js";
import type { MetaV1 } from "../contracts/meta.js";
import { TASK_PLACEHOLDER } from "../contracts/task-handoff.js";
import { isRecord } from "../lib/values.js";
import { DialogDesk, type DialogDeskOptions } from "./dialog-desk.js";
import type { PiEvent } from "./normalize.js";

/** The id prefix of the wrapper's `get_state` probes (0.73.1's end of work). */
const SETTLE_PROBE = "subagent-settle-probe";
/** The ids of a spare pi's first command (its start-up is over) and its `switch_session` to the turn's session. */
const SPARE_READY = "subagent-spare-ready";
const SPARE_SWITCH = "subagent-spare-switch";

/** A spare pi's hand-over to the turn (spare-pi.ts): the turn's files written, then its session opened. */
export interface SpareHandOver {
  switchTo: string;
  handOver(): void;
}

export interface RpcSessionOptions extends Omit<DialogDeskOptions, "dir" | "timeoutMs" | "send"> {
  /** Whether this pi emits `agent_settled` (then it, not a probe, ends stdin). */
  settles(): boolean;
}

/** The run's `dialogs/` folder: beside its result.json, in the run directory. */
export function dialogsDir(meta: MetaV1): string {
  return path.join(path.dirname(meta.resultPath), DIALOGS_FOLDER);
}

/** One pi process in RPC mode: the task in, dialogs through, stdin ended when pi's work is over. */
export class RpcSession {
  private probes = 0;
  /** pi started work after the latest probe was sent: its answer says nothing about the end. */
  private probeStale = false;
  private ended = false;
  private readonly dialogs: DialogDesk | undefined;
  private spare: SpareHandOver | undefined;

  constructor(
    private readonly stdin: Writable | null | undefined,
    meta: MetaV1,
    private readonly options: RpcSessionOptions,
  ) {
    // A pi that died leaves a broken pipe; its exit tells the run what happened.
    stdin?.on("error", () => undefined);
    // Without meta.json `dialogs` (a spare pi taken over, spare-pi.ts), a dialog is cancelled at once.
    this.dialogs = meta.dialogs
      ? new DialogDesk({
          ...options,
          dir: dialogsDir(meta),
          timeoutMs: meta.dialogs.timeoutMs,
          send: (line) => this.send(line),
        })
      : undefined;
  }

  /**
   * Sends the task's prompt: the placeholder the task extension replaces with the task file's
   * text. A spare pi (spare-pi.ts) first opens the turn's session. pi answers its first command
   * only once its start-up is over, so the hand-over is written after that answer (a pi still
   * starting would read it for its own start); and pi runs commands as they come, so the switch
   * waits for it, and the prompt for the switch.
   */
  start(spare?: SpareHandOver): void {
    if (spare === undefined) {
      this.send({ type: "prompt", message: TASK_PLACEHOLDER });
      return;
    }
    this.spare = spare;
    this.send({ id: SPARE_READY, type: "get_state" });
  }

  /** Ends pi's stdin (pi exits 0); a second call does nothing. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.dialogs?.close();
    this.stdin?.end();
  }

  /** One line pi printed. */
  observe(event: PiEvent): void {
    switch (event.type) {
      case "extension_ui_request":
        if (this.dialogs) this.dialogs.request(event);
        else if (typeof event.id === "string" && (DIALOG_METHODS as readonly unknown[]).includes(event.method))
          this.send({ type: "extension_ui_response", id: event.id, cancelled: true });
        return;
      case "response":
        this.onResponse(event);
        return;
      case "agent_settled":
        this.end();
        return;
      case "agent_end":
      case "compaction_end":
        if (!this.options.settles() && event.willRetry !== true) this.probe();
        return;
      case "auto_retry_start":
      case "compaction_start":
      case "agent_start":
      case "turn_start":
        this.probeStale = true;
        return;
      default:
        return;
    }
  }

  /** A line to pi's stdin (an answer to a dialog, a command). */
  send(line: Record<string, unknown>): void {
    if (this.ended || !this.stdin || this.stdin.destroyed) return;
    this.stdin.write(`${JSON.stringify(line)}\n`);
  }

  private probe(): void {
    this.probes += 1;
    this.probeStale = false;
    this.send({ id: `${SETTLE_PROBE}-${this.probes}`, type: "get_state" });
  }

  private onResponse(event: PiEvent): void {
    if (event.id === SPARE_READY && this.spare) {
      const spare = this.spare;
      try {
        spare.handOver();
      } catch (err) {
        this.options.warn(`the spare pi could not be handed the turn: ${(err as Error).message}`);
        this.end();
        return;
      }
      this.send({ id: SPARE_SWITCH, type: "switch_session", sessionPath: spare.switchTo });
      return;
    }
    if (event.id === SPARE_SWITCH) {
      const data = isRecord(event.data) ? event.data : {};
      if (event.success === true && data.cancelled !== true) this.start();
      else {
        // The prompt must never go to the spare's own session: nothing runs, and pi exits now.
        this.options.warn(
          `pi could not open the turn's session: ${typeof event.error === "string" ? event.error : "cancelled"}`,
        );
        this.end();
      }
      return;
    }
    if (event.command === "prompt" && event.success === false) {
      // pi refused the task (no model, no credentials): nothing will run, so it may exit now.
      this.options.warn(`pi refused the task: ${typeof event.error === "string" ? event.error : "no reason given"}`);
      this.end();
      return;
    }
    if (event.id !== `${SETTLE_PROBE}-${this.probes}` || this.probeStale) return;
    const state = isRecord(event.data) ? event.data : {};
    if (state.isStreaming === true || state.isCompacting === true) return;
    this.end();
  }
}
