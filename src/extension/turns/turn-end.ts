/**
 * Pure: what the end of a turn makes of an agent's record — its outcome, the reason, the
 * status and health it is left with — and how a turn whose wrapper left no result is named.
 */
import type { ResultV1, RunStatus } from "../../contracts/result.js";
import type { AgentRecordV1 } from "../../contracts/tree.js";
import { healthForOutcome, statusForOutcome } from "../../contracts/tree.js";
import type { StopReason } from "./child-state.js";

export interface TurnEndFacts {
  result?: ResultV1 | undefined;
  /** Why the turn failed when its result does not say (it never started, its wrapper died). */
  failure?: string | undefined;
  /** Why this process stopped the turn, if it did. */
  stopping?: StopReason | undefined;
}

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
