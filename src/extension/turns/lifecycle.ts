/**
 * The life of a child's turn, as one pure machine: where the turn stands (TurnPhase), what
 * can happen to it (TurnEvent) and what each happening makes the runtime do (TurnEffect).
 * `transition` is the only place that decides; the live runtime (runtime.ts) and the restore
 * of a restarted parent (restore.ts) only carry out its effects. `planTurnEnd` (turn-end.ts)
 * is the one rule of how a turn ends, whoever saw it end. Tested as tables in lifecycle.test.ts.
 *
 *   idle ─queued→ queued ─slot_granted→ starting ─wrapper_started→ running ─stop_asked→ stopping
 *     ▲ │                                   │ start_failed         ▲  │ wrapper_exited    │ wrapper_exited
 *     │ └──────────── reattached ───────────┼──────────────────────┘  │                   │
 *     └──────────── recorded ─── settling ◄─┴─────────────────────────┴───────────────────┘
 *
 * `reattached`: a restarted parent found the turn's wrapper still at work (its previous
 * process went away, the turn did not): the turn is `running` again, its end watched as any.
 */
import type { ResultV1 } from "../../contracts/result.js";
import type { PendingPart } from "../../contracts/tree.js";
import { planTurnEnd } from "./turn-end.js";
import type { RunningTurn } from "./wrapper/launcher.js";

export type TurnKind = "spawn" | "followup";

/** Why this process stopped a running turn. */
export type StopReason = "interrupt" | "close" | "shutdown";

/** A turn whose wrapper runs: its process handle and the prompt parts it carries. */
export interface LiveTurn {
  turn: RunningTurn;
  parts: PendingPart[];
}

export type TurnPhase =
  /** No turn: the agent is waiting for a follow-up, or done. */
  | { name: "idle" }
  /** Waiting for one of its parent's turn slots (the queue's order is TurnSlots'). */
  | { name: "queued" }
  /** Holds a slot; its run directory and wrapper are being made. */
  | { name: "starting" }
  | ({ name: "running" } & LiveTurn)
  /** This process asked the wrapper to stop; the wrapper has not exited yet. */
  | ({ name: "stopping"; by: StopReason } & LiveTurn)
  /** The turn is over and being recorded; its notice (when one is owed) is not in the mailbox yet. */
  | { name: "settling"; runName: string | undefined; owesNotice: boolean };

export const IDLE: TurnPhase = { name: "idle" };

/** What a record says of a turn a previous process of the parent left behind. */
export type FoundTurn =
  /** `pending_init`: it was waiting for a slot; `turnKind` is the turn it waits to start. */
  | { kind: "queued"; turnKind: TurnKind }
  /**
   * Not running any more, its end recorded, but the notice it owed never given (the previous
   * process died between recording the end and giving it): `result` is its run's result.
   */
  | { kind: "unnoticed"; runName: string; result: ResultV1 | undefined }
  /**
   * `running`, but its wrapper never could have started (the parent was killed between
   * recording the run and starting it): the run is dropped and its parts go back; the turn
   * starts again (queued, as restore queues turns), in a new run directory.
   */
  | { kind: "unstarted"; runName: string; parts: PendingPart[] }
  /** `running`: what its run directory holds now. */
  | {
      kind: "running";
      runName: string | undefined;
      result?: ResultV1 | undefined;
      alreadyNotified: boolean;
      parts: PendingPart[];
    };

export type TurnEvent =
  | { type: "queued" }
  | { type: "slot_granted"; kind: TurnKind; closing: boolean }
  | { type: "wrapper_started"; turn: RunningTurn; parts: PendingPart[] }
  | { type: "start_failed"; parts: PendingPart[]; error: string }
  | { type: "stop_asked"; by: StopReason }
  /** The wrapper exited; `result` is its result.json (undefined: none, or damaged — `lost` says why). */
  | { type: "wrapper_exited"; runName: string; result: ResultV1 | undefined; lost: string }
  /** The ended turn's notice is in the mailbox. */
  | { type: "notice_given" }
  | { type: "recorded"; followupQueued: boolean }
  /** Recording the end of the turn of `runName` failed in a way nothing foresaw. */
  | { type: "recording_failed"; runName: string | undefined; error: string }
  /** A restarted parent found this turn in its child's record (restore). */
  | { type: "restore_found"; found: FoundTurn; direct: boolean }
  /** A restarted parent found the turn's wrapper still running and watches it again (restore). */
  | { type: "reattached"; turn: RunningTurn; parts: PendingPart[] };

/** How the end of a turn is recorded: the one rule, whoever saw the turn end. */
export interface TurnEndPlan {
  /** The run that ended (undefined: the turn never started). */
  runName: string | undefined;
  result: ResultV1 | undefined;
  /** Why it failed when its result does not say (it never started, its wrapper died). */
  failure: string | undefined;
  /** Why this process (or the parent that went away) stopped it. */
  stopping: StopReason | undefined;
  /** The turn left no trace in the child's session: its prompt parts go first next time. */
  returnParts: PendingPart[] | undefined;
  /** The run whose confirmed live messages leave the record (undefined: none to drop). */
  dropConfirmedOf: string | undefined;
  /** How the commit of an isolated agent's worktree names the turn's end (undefined: no commit). */
  commitHow: string | undefined;
  /** The turn's answer is stored for get_agent_report (it ran). */
  storeReport: boolean;
  /** The parent gets the turn's notice. */
  notify: boolean;
  /** Seen by a restarted parent (restore): written as restore writes, without the session hook. */
  restored: boolean;
}

export type TurnEffect =
  /** record.status pending_init, written (a failure reaches the caller). */
  | { type: "record_queued" }
  /** Take the record's pending parts, find the cwd, start the wrapper (→ wrapper_started | start_failed). */
  | { type: "launch"; kind: TurnKind }
  | { type: "release_slot" }
  | { type: "dequeue" }
  /** record.status running, the run and its parts recorded, written (a failure is reported). */
  | { type: "record_start"; runName: string; parts: PendingPart[] }
  /** Ask the wrapper to stop (it records `interrupted`). */
  | { type: "stop_wrapper" }
  /** record.status interrupted, written (a failure is reported). */
  | { type: "record_interrupted"; what: string; restored: boolean }
  /** A stopped turn that outlasted its stop after a newer turn started: only its usage counts. */
  | { type: "add_usage"; result: ResultV1 | undefined }
  | { type: "end_turn"; plan: TurnEndPlan }
  | { type: "request_followup" }
  /** Hold a turn slot for a turn whose wrapper already runs (re-attached): no start. */
  | { type: "occupy_slot" }
  /** Watch the running turn's wrapper: its exit is the `wrapper_exited` event. */
  | { type: "watch_end"; runName: string }
  /** Queue the turn a previous process left queued, under the usual capacity rules. */
  | { type: "requeue"; kind: TurnKind }
  /** The record no longer names this run (it never started): pending_init, its parts first in the next turn's prompt. */
  | { type: "unrecord_run"; runName: string; parts: PendingPart[] }
  /** Give the notice of an ended turn that its record says ended (rebuilt from the record and its result). */
  | { type: "give_notice"; runName: string; result: ResultV1 | undefined }
  /** Recording a turn's end failed unforeseen: report it, and give the owed notice as errored. */
  | { type: "report_lost"; runName: string | undefined; error: string; notify: boolean };

export interface Transition {
  phase: TurnPhase;
  effects: TurnEffect[];
}

const stay = (phase: TurnPhase): Transition => ({ phase, effects: [] });

/** Whether a child in `phase` counts as busy for its parent (wait_agent, the exit lines, shutdown). */
export function isActive(phase: TurnPhase): boolean {
  return phase.name !== "idle";
}

/**
 * Whether a parent waiting on this turn still waits: running, queued, starting, or ended with
 * its notice not in the mailbox yet (being recorded after the notice was given does not count).
 */
export function awaitedByParent(phase: TurnPhase): boolean {
  return isActive(phase) && !(phase.name === "settling" && !phase.owesNotice);
}

/**
 * Whether a parent waiting on a child still waits: its turn is awaited (awaitedByParent), or
 * its notice is given but a follow-up queued behind the turn (`followupQueued`) starts once
 * the turn is recorded.
 */
export function childAwaited(phase: TurnPhase, followupQueued: boolean): boolean {
  return awaitedByParent(phase) || (phase.name === "settling" && followupQueued);
}

/**
 * Whether a follow-up asked now waits for the turn under way (running, being stopped, or
 * queued) instead of starting a turn of its own.
 */
export function followupWaits(phase: TurnPhase): boolean {
  return phase.name === "running" || phase.name === "stopping" || phase.name === "queued";
}

/**
 * How the parent's summaries count a turn (the exit lines, /agents, wait_agent's cancel
 * line): `running` while its wrapper is being started, runs or is being stopped; `queued`
 * while it waits for a slot; undefined when there is none or it is over and only being recorded.
 */
export function turnCount(phase: TurnPhase): "running" | "queued" | undefined {
  switch (phase.name) {
    case "starting":
    case "running":
    case "stopping":
      return "running";
    case "queued":
      return "queued";
    default:
      return undefined;
  }
}

/** The running wrapper of a turn in `phase`, if one runs (stopping included). */
export function liveTurnOf(phase: TurnPhase): LiveTurn | undefined {
  return phase.name === "running" || phase.name === "stopping" ? phase : undefined;
}

/** The one transition function: every change of a turn's phase goes through here. */
export function transition(phase: TurnPhase, event: TurnEvent): Transition {
  switch (event.type) {
    case "queued":
      return phase.name === "idle" ? { phase: { name: "queued" }, effects: [{ type: "record_queued" }] } : stay(phase);
    case "slot_granted":
      return slotGranted(phase, event.kind, event.closing);
    case "wrapper_started":
      return phase.name === "starting"
        ? {
            phase: { name: "running", turn: event.turn, parts: event.parts },
            effects: [{ type: "record_start", runName: event.turn.runName, parts: event.parts }],
          }
        : stay(phase);
    case "start_failed":
      return startFailed(phase, event.parts, event.error);
    case "stop_asked":
      return stopAsked(phase, event.by);
    case "wrapper_exited":
      return wrapperExited(phase, event);
    case "notice_given":
      return phase.name === "settling" ? stay({ ...phase, owesNotice: false }) : stay(phase);
    case "recorded":
      // A follow-up that started while the turn was recorded owns the phase from then on.
      if (phase.name !== "settling") return stay(phase);
      return { phase: IDLE, effects: event.followupQueued ? [{ type: "request_followup" }] : [] };
    case "recording_failed":
      return recordingFailed(phase, event);
    case "restore_found":
      return restoreFound(phase, event.found, event.direct);
    case "reattached":
      return phase.name === "idle"
        ? {
            phase: { name: "running", turn: event.turn, parts: event.parts },
            effects: [{ type: "occupy_slot" }, { type: "watch_end", runName: event.turn.runName }],
          }
        : stay(phase);
  }
}

function slotGranted(phase: TurnPhase, kind: TurnKind, closing: boolean): Transition {
  // A follow-up may start while the previous turn's end is still being recorded.
  if (phase.name !== "idle" && phase.name !== "queued" && phase.name !== "settling") return stay(phase);
  if (closing) return { phase: IDLE, effects: [{ type: "release_slot" }] };
  return { phase: { name: "starting" }, effects: [{ type: "launch", kind }] };
}

function startFailed(phase: TurnPhase, parts: PendingPart[], error: string): Transition {
  if (phase.name !== "starting") return stay(phase);
  return {
    phase: { name: "settling", runName: undefined, owesNotice: true },
    effects: [
      { type: "release_slot" },
      {
        type: "end_turn",
        plan: {
          runName: undefined,
          result: undefined,
          // Nothing ran: the parts wait for the next turn, and no answer is stored (the previous turn's stays).
          failure: `could not start the turn: ${error}`,
          stopping: undefined,
          returnParts: parts,
          dropConfirmedOf: undefined,
          commitHow: undefined,
          storeReport: false,
          notify: true,
          restored: false,
        },
      },
    ],
  };
}

function stopAsked(phase: TurnPhase, by: StopReason): Transition {
  if (phase.name === "queued") {
    const effects: TurnEffect[] = [{ type: "dequeue" }];
    if (by === "shutdown") effects.push({ type: "record_interrupted", what: "a queued turn's stop", restored: false });
    return { phase: IDLE, effects };
  }
  if (phase.name !== "running") return stay(phase);
  // interrupt and close free the slot at once; a process that is ending starts nothing more.
  const effects: TurnEffect[] = [{ type: "stop_wrapper" }];
  if (by !== "shutdown") effects.push({ type: "release_slot" });
  return { phase: { ...phase, name: "stopping", by }, effects };
}

function wrapperExited(phase: TurnPhase, event: Extract<TurnEvent, { type: "wrapper_exited" }>): Transition {
  const live = liveTurnOf(phase);
  // A stopped turn that took longer than its stop wait to end, after a newer turn started:
  // it only adds its usage; the newer turn owns the phase, the slot and the notice.
  if (!live || live.turn.runName !== event.runName) {
    return { phase, effects: [{ type: "add_usage", result: event.result }] };
  }
  const stopping = phase.name === "stopping" ? phase.by : undefined;
  const plan = planTurnEnd({
    runName: event.runName,
    result: event.result,
    stopping,
    parts: live.parts,
    // Until its notice is in the mailbox the turn still counts as active, or a wait_agent
    // running meanwhile would answer `idle` with the notice about to arrive.
    notify: stopping === undefined,
    commitHow: event.result?.status ?? (stopping ? "interrupted" : "failed"),
    failure: event.result || stopping ? undefined : event.lost,
  });
  return {
    phase: { name: "settling", runName: event.runName, owesNotice: plan.notify },
    effects: [{ type: "release_slot" }, { type: "end_turn", plan }],
  };
}

function recordingFailed(phase: TurnPhase, event: Extract<TurnEvent, { type: "recording_failed" }>): Transition {
  const live = liveTurnOf(phase);
  const settling = phase.name === "settling" && phase.runName === event.runName;
  const ownsPhase = settling || (live !== undefined && live.turn.runName === event.runName);
  // The notice owed is given all the same (errored), so a parent never waits forever.
  const owesNotice = settling ? phase.owesNotice : phase.name === "running" && ownsPhase;
  const effects: TurnEffect[] = [];
  if (ownsPhase) effects.push({ type: "release_slot" });
  effects.push({ type: "report_lost", runName: event.runName, error: event.error, notify: owesNotice });
  return { phase: ownsPhase ? IDLE : phase, effects };
}

/**
 * A turn a previous process of the parent left behind. A queued one of this process's own
 * child is queued again (a deeper one, whose parent is gone, is interrupted), and so is one
 * recorded running whose wrapper never started. One with a
 * result it was never told of ends as that result says, with its notice; one without (its
 * wrapper left none) is interrupted, silently. One whose end is recorded but whose notice was
 * never given gets its notice. (A turn whose wrapper still runs is `reattached` instead.)
 */
function restoreFound(phase: TurnPhase, found: FoundTurn, direct: boolean): Transition {
  if (phase.name !== "idle") return stay(phase);
  if (found.kind === "queued")
    return direct
      ? { phase, effects: [{ type: "requeue", kind: found.turnKind }] }
      : { phase, effects: [{ type: "record_interrupted", what: "a queued turn", restored: true }] };
  if (found.kind === "unstarted") {
    const unrecord: TurnEffect = { type: "unrecord_run", runName: found.runName, parts: found.parts };
    // Never started, so never run twice: a child of this process's is queued again (restore
    // starts it with the other queued turns); a deeper one, whose parent is gone, waits
    // interrupted for its parent's next word.
    return direct
      ? { phase, effects: [unrecord] }
      : {
          phase,
          effects: [unrecord, { type: "record_interrupted", what: "a turn that never started", restored: true }],
        };
  }
  if (found.kind === "unnoticed")
    return direct
      ? { phase, effects: [{ type: "give_notice", runName: found.runName, result: found.result }] }
      : stay(phase);
  const { result, runName } = found;
  const told = result !== undefined && !found.alreadyNotified ? result : undefined;
  // Its wrapper stopped it (the parent went away) when it says interrupted or left no result.
  const stoppedByParentGone = told === undefined || told.status === "interrupted";
  const plan = planTurnEnd({
    runName,
    result: told,
    // The status is the one its result gives (interrupted included), as for any turn that ended on its own.
    stopping: told ? undefined : "shutdown",
    stopped: stoppedByParentGone,
    parts: found.parts,
    notify: told !== undefined && direct,
    commitHow: told ? `${told.status} (committed when its parent came back)` : "interrupted (its parent went away)",
    turnsRan: result?.turns,
    failure: result === undefined ? "the parent went away and the turn's wrapper left no result.json" : undefined,
    answered: told !== undefined,
    restored: true,
  });
  return { phase, effects: [{ type: "end_turn", plan }] };
}
