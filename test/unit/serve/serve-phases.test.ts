/**
 * The serve machine, table by table: for each phase and event, the next phase and what the
 * session is told to do.
 */
import { describe, expect, it } from "vitest";
import type { ClientFrame } from "../../../src/contracts/serve-protocol.js";
import {
  isEnding,
  mayStartPi,
  piAlive,
  type ServeAction,
  type ServeEvent,
  type ServePhase,
  serveTransition,
} from "../../../src/serve/serve-phases.js";

const PHASES: ServePhase[] = [
  "hello",
  "start",
  "blobs",
  "unpacking",
  "running",
  "returning",
  "checks",
  "stopping",
  "over",
];

const frame = (f: ClientFrame): ServeEvent => ({ type: "frame", frame: f });
const hello1 = frame({ t: "hello", version: 1 } as ClientFrame);
const hello2 = frame({ t: "hello", version: 2, workspace: "w-1", session_stream: true } as ClientFrame);
const helloBad = frame({ t: "hello", version: 99 } as ClientFrame);
const start = { t: "start", blobs: ["bundle", "task"] } as unknown as ClientFrame;
const startNoTask = frame({ t: "start", blobs: ["bundle"] } as unknown as ClientFrame);
const startTwice = frame({ t: "start", blobs: ["bundle", "task", "task"] } as unknown as ClientFrame);
const checkFrame = { t: "check", command: "npm test", cwd: "", env: {}, timeout_ms: 1000 } as const;
const blob = { t: "blob", kind: "task", data: "" } as unknown as ClientFrame;
const stop = (signal: "SIGTERM" | "SIGKILL"): ServeEvent => frame({ t: "stop", signal });
const message = { t: "message", name: "m-1.json", id: "1", text: "hi" } as const;
const piInput = { t: "pi_input", data: "e30K" } as const;
const piInputEnd = { t: "pi_input_end" } as const;

const none: ServeAction = { kind: "none" };
const end: ServeAction = { kind: "end" };

describe("serve machine: frames by phase", () => {
  const rows: Array<[string, ServePhase, ServeEvent, ServePhase, ServeAction]> = [
    [
      "hello v1 → start, hello answered",
      "hello",
      hello1,
      "start",
      { kind: "prepare", version: 1, workspace: undefined, streamSession: false, piInput: false, check: false },
    ],
    [
      "hello v2 with a workspace and session_stream → start",
      "hello",
      hello2,
      "start",
      { kind: "prepare", version: 2, workspace: "w-1", streamSession: true, piInput: false, check: false },
    ],
    [
      "hello v2 asking for pi_input → start, pi's input taken",
      "hello",
      frame({ t: "hello", version: 2, pi_input: true } as ClientFrame),
      "start",
      { kind: "prepare", version: 2, workspace: undefined, streamSession: false, piInput: true, check: false },
    ],
    [
      "hello v2 asking for a check run on a workspace → checks, no session stream or pi input",
      "hello",
      frame({ t: "hello", version: 2, workspace: "w-1", check: true, session_stream: true } as ClientFrame),
      "checks",
      { kind: "prepare", version: 2, workspace: "w-1", streamSession: false, piInput: false, check: true },
    ],
    [
      "a check run without a workspace key → rejected",
      "hello",
      frame({ t: "hello", version: 2, check: true } as ClientFrame),
      "hello",
      { kind: "reject", message: "a check run needs the agent's workspace key" },
    ],
    [
      "a check frame in a check run → run it",
      "checks",
      frame(checkFrame),
      "checks",
      { kind: "check", frame: checkFrame },
    ],
    [
      "a stop in a check run → the running check ends",
      "checks",
      frame({ t: "stop", signal: "SIGTERM" }),
      "checks",
      { kind: "stop_check" },
    ],
    [
      "a start in a check run → rejected",
      "checks",
      frame(start),
      "checks",
      { kind: "reject", message: "unexpected start frame in a check run" },
    ],
    [
      "hello of an unknown version → rejected",
      "hello",
      helloBad,
      "hello",
      { kind: "reject", message: expect.stringMatching(/^protocol version 99 is not supported/) },
    ],
    [
      "start before hello → rejected",
      "hello",
      frame(start),
      "hello",
      { kind: "reject", message: "expected hello, got start" },
    ],
    ["start → blobs", "start", frame(start), "blobs", { kind: "accept_start", start: start as never }],
    [
      "a blob before start → rejected",
      "start",
      frame(blob),
      "start",
      { kind: "reject", message: "expected start, got blob" },
    ],
    [
      "start without the task → rejected",
      "start",
      startNoTask,
      "start",
      { kind: "reject", message: "start must announce the bundle and the task, each blob once" },
    ],
    [
      "start naming a blob twice → rejected",
      "start",
      startTwice,
      "start",
      { kind: "reject", message: "start must announce the bundle and the task, each blob once" },
    ],
    ["a blob → taken", "blobs", frame(blob), "blobs", { kind: "take_blob", frame: blob }],
    [
      "any frame in blobs goes to the blob check",
      "blobs",
      stop("SIGTERM"),
      "blobs",
      { kind: "take_blob", frame: { t: "stop", signal: "SIGTERM" } },
    ],
    [
      "a stop while unpacking waits for pi",
      "unpacking",
      stop("SIGTERM"),
      "unpacking",
      { kind: "stop", signal: "SIGTERM", now: false },
    ],
    [
      "a stop while pi runs goes to pi",
      "running",
      stop("SIGKILL"),
      "running",
      { kind: "stop", signal: "SIGKILL", now: true },
    ],
    [
      "a stop while the turn goes back goes to pi",
      "returning",
      stop("SIGTERM"),
      "returning",
      { kind: "stop", signal: "SIGTERM", now: true },
    ],
    ["a message while unpacking", "unpacking", frame(message), "unpacking", { kind: "message", frame: message }],
    ["a message while pi runs", "running", frame(message), "running", { kind: "message", frame: message }],
    [
      "pi's input while unpacking waits",
      "unpacking",
      frame(piInput),
      "unpacking",
      { kind: "pi_input", frame: piInput, now: false },
    ],
    [
      "pi's input while pi runs goes in",
      "running",
      frame(piInput),
      "running",
      { kind: "pi_input", frame: piInput, now: true },
    ],
    [
      "pi's input's end while pi runs",
      "running",
      frame(piInputEnd),
      "running",
      { kind: "pi_input", frame: piInputEnd, now: true },
    ],
    [
      "a second hello while pi runs → rejected",
      "running",
      hello1,
      "running",
      { kind: "reject", message: "unexpected hello frame while the child runs" },
    ],
    ["any frame once stopping is not read", "stopping", frame(message), "stopping", none],
    ["any frame once over is not read", "over", hello1, "over", none],
  ];
  it.each(rows)("%s", (_name, phase, event, next, action) => {
    expect(serveTransition(phase, event)).toEqual({ phase: next, action });
  });
});

describe("serve machine: the run's own events", () => {
  const rows: Array<[ServePhase, ServeEvent["type"], ServePhase, ServeAction]> = [
    ["blobs", "blobs_in", "unpacking", { kind: "launch" }],
    ["unpacking", "pi_started", "running", none],
    ["over", "pi_started", "over", none],
    ["running", "pi_exited", "returning", { kind: "send_turn_back" }],
    ["stopping", "pi_exited", "over", { kind: "end_after_checkout" }],
    ["returning", "turn_returned", "over", end],
    // stdin closed while the turn went back: the run had already ended, and ends again harmlessly.
    ["over", "turn_returned", "over", end],
  ];
  it.each(rows)("%s + %s → %s", (phase, type, next, action) => {
    expect(serveTransition(phase, { type } as ServeEvent)).toEqual({ phase: next, action });
  });
});

describe("serve machine: an error or stdin closed ends the run, after pi when it runs", () => {
  const expected: Record<ServePhase, { failed: [ServePhase, ServeAction]; input_closed: [ServePhase, ServeAction] }> = {
    hello: { failed: ["over", end], input_closed: ["over", end] },
    start: { failed: ["over", end], input_closed: ["over", end] },
    blobs: { failed: ["over", end], input_closed: ["over", end] },
    unpacking: { failed: ["over", end], input_closed: ["over", end] },
    running: { failed: ["stopping", { kind: "stop_pi" }], input_closed: ["stopping", { kind: "stop_pi" }] },
    returning: { failed: ["over", end], input_closed: ["over", end] },
    checks: { failed: ["over", end], input_closed: ["over", end] },
    // pi is still stopping: closing stdin again stops it again (SIGTERM; its SIGKILL is already due).
    stopping: { failed: ["stopping", none], input_closed: ["stopping", { kind: "stop_pi" }] },
    over: { failed: ["over", none], input_closed: ["over", none] },
  };
  for (const phase of PHASES) {
    for (const type of ["failed", "input_closed"] as const) {
      it(`${phase} + ${type} → ${expected[phase][type][0]} (${expected[phase][type][1].kind})`, () => {
        const [next, action] = expected[phase][type];
        expect(serveTransition(phase, { type })).toEqual({ phase: next, action });
      });
    }
  }
});

describe("serve machine: phase predicates", () => {
  it.each(PHASES)("%s: ending, pi may start and pi alive as the phase says", (phase) => {
    expect(isEnding(phase)).toBe(phase === "stopping" || phase === "over");
    expect(mayStartPi(phase)).toBe(phase === "unpacking");
    expect(piAlive(phase)).toBe(phase === "running" || phase === "stopping");
  });
});
