/**
 * The one rule of how a turn ends, whoever saw it end (lifecycle.ts decides when; this says
 * what the end makes of the record): its prompt back or its confirmed messages dropped, its
 * outcome, and why a turn nobody stopped has no result. Tested as tables in
 * lifecycle-turn-end.test.ts.
 */
import type { ResultV1, RunStatus } from "../../contracts/result.js";
import type { AgentRecordV1, PendingPart } from "../../contracts/tree.js";
import { healthForOutcome, statusForOutcome } from "../../contracts/tree.js";
import type { StopReason, TurnEndPlan } from "./lifecycle.js";

/**
 * The rule of a turn's end. Its prompt goes back first in the queue when the turn was
 * stopped before any assistant message reached the child's session (pi writes a session
 * only once there is one, so the prompt was never recorded there); otherwise the live
 * messages its run confirmed are final. Every caller gives all it knows here, so the plan
 * is never patched afterwards.
 */
export function planTurnEnd(facts: {
  runName: string | undefined;
  result: ResultV1 | undefined;
  /** Why this process (or the parent that went away) stopped it, as the record will tell it. */
  stopping: StopReason | undefined;
  /**
   * Whether it was stopped at all (default: `stopping` is set). A turn its wrapper
   * interrupted when the parent went away was stopped, though its result tells the status.
   */
  stopped?: boolean | undefined;
  parts: PendingPart[];
  notify: boolean;
  commitHow: string;
  /** The model turns the run made, when the result that says so is not the one recorded. */
  turnsRan?: number | undefined;
  /** Why it failed when its result does not say. */
  failure?: string | undefined;
  /** False when no answer of the turn is known to store (its result was told before, or none). */
  answered?: boolean | undefined;
  /** Seen by a restarted parent (restore). */
  restored?: boolean | undefined;
}): TurnEndPlan {
  const turns = facts.result?.turns ?? facts.turnsRan ?? 0;
  const stopped = facts.stopped ?? facts.stopping !== undefined;
  const leftNoTrace = stopped && turns === 0;
  return {
    runName: facts.runName,
    result: facts.result,
    failure: facts.failure,
    stopping: facts.stopping,
    returnParts: leftNoTrace ? facts.parts : undefined,
    dropConfirmedOf: leftNoTrace ? undefined : facts.runName,
    commitHow: facts.runName === undefined ? undefined : facts.commitHow,
    storeReport: facts.runName !== undefined && facts.answered !== false,
    notify: facts.notify,
    restored: facts.restored === true,
  };
}

/** What applyTurnEnd needs of a turn's end (a TurnEndPlan is one). */
export type TurnEndFacts = Partial<Pick<TurnEndPlan, "result" | "failure" | "stopping">>;

/** Applies a turn's end to `record`; returns its outcome, reason and answer text. */
export function applyTurnEnd(
  record: AgentRecordV1,
  end: TurnEndFacts,
): { outcome: RunStatus; reason: string | undefined; text: string } {
  const { result, stopping } = end;
  // A wrapper stopped in its first milliseconds dies before it can write a result (and
  // before it starts pi): for a turn this process stopped, that is an interruption.
  const outcome: RunStatus = result?.status ?? (stopping ? "interrupted" : "failed");
  const reason = end.failure ?? result?.errorMessage ?? result?.abortReason;
  record.lastOutcome = outcome;
  record.lastReason = reason;
  record.lastVerification = result?.verification;
  if (stopping === "close") {
    record.lastTurnStatus = statusForOutcome(outcome);
  } else if (stopping) {
    // interrupt_agent already reported; a process that is ending reports nothing.
    record.status = "interrupted";
    record.lastTurnStatus = "interrupted";
  } else {
    record.status = statusForOutcome(outcome);
    record.health = healthForOutcome(outcome);
    record.lastTurnStatus = record.status;
  }
  return { outcome, reason, text: result?.finalText ?? "" };
}

/**
 * Why a turn this process did not stop has no result: its wrapper was killed (SIGKILL, OOM)
 * or crashed, or left a damaged result.json. An error of the turn, never an interruption.
 */
export function lostResultReason(howExited: string | undefined, damagedResult: string | undefined): string {
  const exited = `wrapper exited (${howExited ?? "unknown"})`;
  return damagedResult ? `${exited}; the run's ${damagedResult}` : `${exited} without writing result.json`;
}
