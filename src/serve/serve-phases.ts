/**
 * Where one `serve` run stands, as one pure machine: its phase (ServePhase), what can happen
 * (ServeEvent: a frame from the local side, the blobs all in, pi started or gone, the turn sent
 * back, an error, stdin closed) and what the session does about it (ServeAction).
 * `serveTransition` is the only place that moves the phase; serve.ts carries out the actions.
 * Tested as tables in test/unit/serve/serve-phases.test.ts.
 *
 *   hello ──hello──► start ──start──► blobs ──the last blob──► unpacking ──pi started──► running
 *                                                                                         │    │
 *                                        ┌──────────────────────────────────── pi exited ─┘    │ an error,
 *                                        ▼                                                     ▼ stdin closed
 *                                    returning ──the turn sent back──► over ◄──pi exited── stopping
 *
 *   hello, start, blobs, unpacking, returning ──an error, stdin closed──► over
 *
 *   hello ──hello with check──► checks ──an error, stdin closed──► over
 *
 * The rules: each phase takes only its own frames, anything else is an error (one `error`
 * frame, exit 1). A stop, a live message or pi's input that comes while the workspace is
 * unpacked waits for pi. An error or stdin closed while pi runs stops pi (SIGTERM, SIGKILL 3 s later) and the
 * run ends once pi is gone; at any other time the run ends at once. Once it ends (stopping,
 * over) the local side's frames are not read and nothing but `error` and `exit` goes out.
 * A check run (a hello with `check` and a workspace key) takes only `check` frames, one at a
 * time, and `stop` (which ends the running check); stdin closed or an error ends the check
 * and the run.
 */
import { type ClientFrame, SERVE_PROTOCOL_VERSIONS, type ServeStart } from "../contracts/serve-protocol.js";

export type ServePhase =
  /** Waits for the local side's `hello`. */
  | "hello"
  /** Hello answered (or being answered): waits for `start`. */
  | "start"
  /** Takes the blobs `start` announced. */
  | "blobs"
  /** Every blob is in: the workspace is unpacked and pi not started yet; a stop or a message waits for it. */
  | "unpacking"
  /** pi runs. */
  | "running"
  /** pi is gone: its session and the turn's commit go back, then `exit`. */
  | "returning"
  /** The run ends (an error, stdin closed) while pi runs: pi is stopped, the end waits for its exit. */
  | "stopping"
  /** A check run: `check` frames run in the kept workspace, one at a time. */
  | "checks"
  /** The run is over: the scratch space goes (or is kept for the next turn). */
  | "over";

export type ServeEvent =
  | { type: "frame"; frame: ClientFrame }
  /** The last blob `start` announced is whole. */
  | { type: "blobs_in" }
  | { type: "pi_started" }
  | { type: "pi_exited" }
  /** The turn went back (or could not): `exit` is sent. */
  | { type: "turn_returned" }
  /** Something was wrong (a malformed frame, a failed step): the `error` frame is sent. */
  | { type: "failed" }
  | { type: "input_closed" };

export type ServeAction =
  | { kind: "none" }
  /** A frame the phase does not take: the run fails with `message`. */
  | { kind: "reject"; message: string }
  /** Claim the scratch space and answer hello. */
  | {
      kind: "prepare";
      version: number;
      workspace: string | undefined;
      streamSession: boolean;
      piInput: boolean;
      /** A check run: no turn, `check` frames on the kept workspace. */
      check: boolean;
    }
  /** Run a check command (one at a time). */
  | { kind: "check"; frame: Extract<ClientFrame, { t: "check" }> }
  /** End the running check, if any. */
  | { kind: "stop_check" }
  | { kind: "accept_start"; start: ServeStart }
  /** A blob frame: checked against what is still expected, and taken. */
  | { kind: "take_blob"; frame: ClientFrame }
  /** Unpack the workspace and start pi. */
  | { kind: "launch" }
  /** A stop: to pi (`now`), or kept until pi is started. */
  | { kind: "stop"; signal: "SIGTERM" | "SIGKILL"; now: boolean }
  /** A live message: into pi's inbox, or kept until pi is started. */
  | { kind: "message"; frame: Extract<ClientFrame, { t: "message" }> }
  /** Bytes for pi's stdin or its end (a pi in RPC mode): to pi (`now`), or kept until pi is started. */
  | { kind: "pi_input"; frame: Extract<ClientFrame, { t: "pi_input" | "pi_input_end" }>; now: boolean }
  /** Stop pi (SIGTERM): the run ends once it is gone. */
  | { kind: "stop_pi" }
  /** Send the session and the turn's commit back, then `exit`. */
  | { kind: "send_turn_back" }
  /** End the run now (the unpacking, if any, ends first). */
  | { kind: "end" }
  /** End the run once the checkout still being written is done. */
  | { kind: "end_after_checkout" };

export interface ServeStep {
  phase: ServePhase;
  action: ServeAction;
}

const NONE: ServeAction = { kind: "none" };
const stay = (phase: ServePhase, action: ServeAction = NONE): ServeStep => ({ phase, action });

/** The run is ending or over: no frame of the local side is read, and only `error` and `exit` go out. */
export const isEnding = (phase: ServePhase): boolean => phase === "stopping" || phase === "over";

/** The workspace is being unpacked for pi, which has not started: the run has not ended meanwhile. */
export const mayStartPi = (phase: ServePhase): boolean => phase === "unpacking";

/** pi's process is alive in this phase (started, not gone). */
export const piAlive = (phase: ServePhase): boolean => phase === "running" || phase === "stopping";

/** The one transition of a serve run. */
export function serveTransition(phase: ServePhase, event: ServeEvent): ServeStep {
  switch (event.type) {
    case "frame":
      return isEnding(phase) ? stay(phase) : onFrame(phase, event.frame);
    case "blobs_in":
      return phase === "blobs" ? { phase: "unpacking", action: { kind: "launch" } } : stay(phase);
    case "pi_started":
      return phase === "unpacking" ? stay("running") : stay(phase);
    case "pi_exited":
      // A run that ended while pi ran ends now, after the checkout still being written.
      return phase === "running"
        ? { phase: "returning", action: { kind: "send_turn_back" } }
        : { phase: "over", action: { kind: "end_after_checkout" } };
    case "turn_returned":
      return { phase: "over", action: { kind: "end" } };
    case "failed":
      if (isEnding(phase)) return stay(phase);
      return phase === "running" ? { phase: "stopping", action: { kind: "stop_pi" } } : endNow();
    case "input_closed":
      // Nobody is listening: pi ends (SIGKILL 3 s after SIGTERM), then the scratch space goes.
      if (piAlive(phase)) return { phase: "stopping", action: { kind: "stop_pi" } };
      return phase === "over" ? stay(phase) : endNow();
  }
}

const endNow = (): ServeStep => ({ phase: "over", action: { kind: "end" } });
const reject = (phase: ServePhase, message: string): ServeStep => stay(phase, { kind: "reject", message });

function onFrame(phase: ServePhase, frame: ClientFrame): ServeStep {
  switch (phase) {
    case "hello":
      return onHello(frame);
    case "start":
      return onStart(frame);
    case "checks":
      if (frame.t === "check") return stay(phase, { kind: "check", frame });
      if (frame.t === "stop") return stay(phase, { kind: "stop_check" });
      return reject(phase, `unexpected ${frame.t} frame in a check run`);
    case "blobs":
      return stay(phase, { kind: "take_blob", frame });
    case "unpacking":
    case "running":
    case "returning":
      if (frame.t === "stop") return stay(phase, { kind: "stop", signal: frame.signal, now: phase !== "unpacking" });
      if (frame.t === "message") return stay(phase, { kind: "message", frame });
      if (frame.t === "pi_input" || frame.t === "pi_input_end")
        return stay(phase, { kind: "pi_input", frame, now: phase !== "unpacking" });
      return reject(phase, `unexpected ${frame.t} frame while the child runs`);
    default:
      return stay(phase);
  }
}

function onHello(frame: ClientFrame): ServeStep {
  if (frame.t !== "hello") return reject("hello", `expected hello, got ${frame.t}`);
  if (!SERVE_PROTOCOL_VERSIONS.includes(frame.version)) {
    return reject(
      "hello",
      `protocol version ${frame.version} is not supported (this side speaks ${SERVE_PROTOCOL_VERSIONS.join(" and ")})`,
    );
  }
  const v2 = frame.version >= 2;
  const workspace = v2 ? frame.workspace : undefined;
  // A check run works on the workspace the agent's last turn left: it needs the agent's key.
  const check = v2 && frame.check === true;
  if (check && workspace === undefined) return reject("hello", "a check run needs the agent's workspace key");
  return {
    phase: check ? "checks" : "start",
    action: {
      kind: "prepare",
      version: frame.version,
      workspace,
      streamSession: !check && v2 && frame.session_stream === true,
      piInput: !check && v2 && frame.pi_input === true,
      check,
    },
  };
}

function onStart(frame: ClientFrame): ServeStep {
  if (frame.t !== "start") return reject("start", `expected start, got ${frame.t}`);
  const blobs = frame.blobs;
  if (!blobs.includes("bundle") || !blobs.includes("task") || new Set(blobs).size !== blobs.length) {
    return reject("start", "start must announce the bundle and the task, each blob once");
  }
  return { phase: "blobs", action: { kind: "accept_start", start: frame } };
}
