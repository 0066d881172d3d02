/**
 * Pure: what a turn's verification does next. After a pi process of the run ends, the turn
 * is checked only when it ended `completed` by itself (an error, a stop or a limit's wrap-up
 * is not finished work, and checking it would only send the child back into what stopped it);
 * after a round of checks, a failure with repairs left sends the child back, else the
 * verification ends. verification.ts runs the checks; run.ts starts the pi processes.
 */
import type { RunStatus } from "../contracts/result.js";
import { checkPassed, VERIFY_DEFAULTS, type Verification, type VerificationCheck } from "../contracts/verify.js";

export { checkPassed };

/** How a pi process of the run ended, as far as verification cares. */
export interface TurnEnd {
  status: RunStatus;
  /** A per-turn limit was reached (the child was told to wrap up): its answer is partial work. */
  limitReached: boolean;
}

/** What follows a round of checks. */
export type VerifyStep =
  | { kind: "done"; verification: Verification }
  | { kind: "repair"; round: number; failed: VerificationCheck[]; prompt: string };

/** Whether a turn that ended like this is checked at all. */
export function shouldCheck(end: TurnEnd): boolean {
  return end.status === "completed" && !end.limitReached;
}

/**
 * After a round: passed when every check passed; a repair when one failed, repairs are left
 * and nothing stopped the run meanwhile (`stopped`: a signal, a time-out or a limit during the
 * checks); else failed, with the checks as they ran.
 */
export function afterRound(
  checks: VerificationCheck[],
  repairsDone: number,
  maxRepairs: number = VERIFY_DEFAULTS.maxRepairs,
  stopped = false,
): VerifyStep {
  const failed = checks.filter((check) => !checkPassed(check));
  if (failed.length === 0) return { kind: "done", verification: { status: "passed", repairs: repairsDone, checks } };
  if (stopped || repairsDone >= maxRepairs) {
    return { kind: "done", verification: { status: "failed", repairs: repairsDone, checks } };
  }
  return { kind: "repair", round: repairsDone + 1, failed, prompt: repairPrompt(failed) };
}

/** The verification of a turn that was not checked (it did not end `completed` by itself). */
export function notRun(repairsDone: number, checks: VerificationCheck[] = []): Verification {
  return { status: "not_run", repairs: repairsDone, checks };
}

/** How a failed check is described to the child: its name, its exit code or verdict, and its output's end. */
function describeFailure(check: VerificationCheck): string {
  const how =
    check.kind === "review"
      ? check.verdict
        ? "the reviewer's verdict is fail"
        : "the reviewer gave no verdict"
      : check.exit_code === undefined
        ? "it did not finish (ended by its time-out or a signal)"
        : `exit code ${check.exit_code}`;
  const output = check.output_tail.trim() ? `\n\`\`\`\n${check.output_tail}\n\`\`\`` : " (no output)";
  return `the check \`${check.name}\` failed (${how}); its output ends:${output}`;
}

/** The message that sends the child back: every failed check, then what to do. */
export function repairPrompt(failed: VerificationCheck[]): string {
  return `[subagent] ${failed.map(describeFailure).join("\n\n")}\n\nFix it and answer again: the checks run again when you answer.`;
}
