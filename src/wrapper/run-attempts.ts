/**
 * The run's next pi process after one exited: a fallback model's, when a provider error moves
 * the turn on (fallback.ts), or a repair's, when the turn's checks failed and repairs are left
 * (verification.ts). Either starts with a fresh tracker and exit.
 */
import type { MetaV1 } from "../contracts/meta.js";
import { buildChildArgs, type SpawnOptions } from "./child.js";
import type { FallbackChain, ModelSwitch } from "./fallback.js";
import { OutcomeTracker } from "./outcome.js";
import type { SupervisedRun } from "./run-supervision.js";

/** What choosing the next pi process reads and changes of its run (run.ts's WrapperRun has it all). */
export interface AttemptRun extends SupervisedRun {
  readonly fallbacks: FallbackChain;
}

/**
 * After a pi process exited: the switch to the next fallback model when it failed with a
 * provider error that moves the turn on (fallback.ts), with a fresh tracker for the next pi.
 */
export function nextModel(run: AttemptRun): ModelSwitch | undefined {
  const exit = { ...(run.childExit ?? { exitCode: null, signal: null }), stderrTail: run.stderrTail };
  const next = run.fallbacks.afterExit(run.tracker, exit, run.clock.now());
  if (!next) return undefined;
  run.record(next.record);
  freshAttempt(run);
  return next;
}

/**
 * After the pi process that ended the turn: its checks (verification.ts), and the meta of
 * the repair's pi — the same session, the current model, the failure as its prompt — when a
 * check failed and repairs are left.
 */
export async function nextRepair(
  run: AttemptRun,
  bin: string,
  meta: MetaV1,
  options: SpawnOptions,
): Promise<MetaV1 | undefined> {
  if (!run.verifier || !run.meta.verify) return undefined;
  const outcome = run.tracker.finish({ ...exitSeen(run), stderrTail: run.stderrTail });
  const end = { status: outcome.status, limitReached: run.limits?.reached !== undefined };
  // A repair's pi waits loaded at the gate (standby.ts), unless a fallback's took its place:
  // a repair's first model request does not wait for pi's start-up.
  if (end.status === "completed" && run.verifier.repairsLeft) {
    run.standby.prepare(bin, buildChildArgs({ ...meta, task: "" }), options);
  }
  const repair = await run.verifier.afterTurn(end, outcome.finalText, bin);
  if (!repair) return undefined;
  run.fallbacks.carry(run.tracker);
  freshAttempt(run);
  return { ...meta, task: repair.prompt };
}

function exitSeen(run: AttemptRun): { exitCode: number | null; signal: string | null } {
  return run.childExit ?? { exitCode: null, signal: null };
}

/** A fresh tracker and exit for the run's next pi process (a fallback model's, a repair's). */
function freshAttempt(run: AttemptRun): void {
  run.tracker = new OutcomeTracker({ settles: run.tracker.emitsSettled });
  run.childExit = undefined;
  run.stderrTail = "";
  run.forcedExit = run.stopping = false;
  run.cancelGrace?.();
  run.cancelGrace = undefined;
}
