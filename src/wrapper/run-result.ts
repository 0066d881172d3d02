/** result.json of a finished run: what meta.json asked for, the outcome, and what the run saw. */
import { effectiveModel, type MetaV1 } from "../contracts/meta.js";
import {
  type LimitReport,
  type ModelAttempt,
  RESULT_VERSION,
  type ResultV1,
  WRAPPER_EXIT,
} from "../contracts/result.js";
import { runnerSummary } from "../contracts/runners.js";
import type { Usage } from "../contracts/usage.js";
import type { Verification } from "../contracts/verify.js";
import { errorText } from "../lib/values.js";
import { type ResultReserve, writeResult } from "./artifacts.js";
import type { Outcome } from "./outcome.js";
import { runnerFailureText } from "./remote/far-lines.js";
import type { RunWarnings } from "./run-warnings.js";

/** What explainOutcome reads of the run besides the outcome. */
export interface OutcomeContext {
  exitCode: number | null;
  /** The one-line hint when pi crashed on a Node too old for it (pi-version.ts). */
  crashHint: () => string | undefined;
  /** meta.json `limits` at work, if any (limits.ts). */
  limits: { reached: LimitReport | undefined; lastAssistantText: string } | undefined;
  /** The end of the child's stderr: a runner's own failure line there names the runner. */
  stderrTail?: string;
}

/**
 * The outcome as result.json says it: pi that crashed on a Node too old for it gets doctor's
 * one-line hint rather than Node's stack; a runner that could not start, or a far side that
 * said why pi did not run there, is the error in its own words (not `pi exited with code 1`);
 * and a turn stopped after a limit's grace keeps what it last said as its report.
 */
export function explainOutcome(outcome: Outcome, context: OutcomeContext): Outcome {
  const hint = outcome.status === "failed" && context.exitCode ? context.crashHint() : undefined;
  if (hint) return { ...outcome, errorMessage: `pi could not start: ${hint}` };
  const runnerFailure =
    outcome.status === "failed" && !outcome.finalText ? runnerFailureText(context.stderrTail ?? "") : undefined;
  if (runnerFailure) return { ...outcome, errorMessage: runnerFailure };
  if (context.limits?.reached && !outcome.finalText) return { ...outcome, finalText: context.limits.lastAssistantText };
  return outcome;
}

export interface RunReport {
  result: ResultV1;
  /** The wrapper's process exit code. */
  exitCode: number;
}

/** What the run knows at its end, besides meta.json and the outcome. */
export interface RunFacts {
  startedAt: number;
  endedAt: number;
  usage: Usage;
  turns: number;
  toolCalls: number;
  /** The model pi said it used, when it said. */
  resolvedModel: string | undefined;
  childExit: { exitCode: number | null; signal: string | null } | undefined;
  /** The wrapper had to signal the child. */
  forcedExit: boolean;
  /** The run's warnings, after the outcome's own error in errorMessage. */
  warnings: readonly string[];
  /** The limit reached (meta.json `limits`), if one was. */
  limit?: LimitReport | undefined;
  /** Each model that failed with a provider error (fallback.ts). */
  attempts?: readonly ModelAttempt[];
  /** How the turn's checks ended (meta.json `verify`), when it has any. */
  verification?: Verification | undefined;
}

export function buildResult(meta: MetaV1, outcome: Outcome, exitCode: number, facts: RunFacts): ResultV1 {
  const errors = [outcome.errorMessage, ...facts.warnings].filter((text): text is string => Boolean(text));
  const requestedModel = meta.requestedModel ?? effectiveModel(meta);
  const resolvedModel = facts.resolvedModel ?? meta.resolvedModel;
  return {
    version: RESULT_VERSION,
    runId: meta.runId,
    ...(meta.agent !== undefined && { agent: meta.agent }),
    ...(meta.agentPath !== undefined && { agentPath: meta.agentPath }),
    status: outcome.status,
    exitCode,
    ...(outcome.stopReason !== undefined && { stopReason: outcome.stopReason }),
    ...(outcome.rawStopReason !== undefined && { rawStopReason: outcome.rawStopReason }),
    finalText: outcome.finalText,
    ...(outcome.abortReason !== undefined && { abortReason: outcome.abortReason }),
    ...(outcome.abortSource !== undefined && { abortSource: outcome.abortSource }),
    usage: facts.usage,
    turns: facts.turns,
    toolCalls: facts.toolCalls,
    ...(requestedModel !== undefined && { requestedModel }),
    ...(resolvedModel !== undefined && { resolvedModel }),
    startedAt: new Date(facts.startedAt).toISOString(),
    endedAt: new Date(facts.endedAt).toISOString(),
    durationMs: facts.endedAt - facts.startedAt,
    childExitCode: facts.childExit?.exitCode ?? null,
    childSignal: facts.childExit?.signal ?? null,
    forcedExit: facts.forcedExit,
    ...(errors.length > 0 && { errorMessage: errors.join("; ") }),
    ...(facts.limit && { limit: facts.limit }),
    ...(facts.attempts && facts.attempts.length > 0 && { attempts: [...facts.attempts] }),
    ...(facts.verification && { verification: facts.verification }),
    ...(meta.runner && meta.runner.kind !== undefined && { runner: runnerSummary(meta.runner) }),
  };
}

/**
 * Writes result.json (into its reserve when the disk is full: artifacts.ts). A result that
 * cannot be written at all still returns, with the wrapper's exit code for a missing result.
 */
export async function deliverResult(
  resultPath: string,
  result: ResultV1,
  exitCode: number,
  reserve: ResultReserve | undefined,
  /** The result's reserve in use is a warning; a result not written at all is said as it is. */
  lines: Pick<RunWarnings, "warn" | "say">,
): Promise<RunReport> {
  try {
    const { written, fromReserve } = await writeResult(resultPath, result, reserve);
    if (fromReserve)
      lines.warn(`result ${resultPath} went into the space reserved for it: the disk is full or failing`);
    return { result: written, exitCode };
  } catch (err) {
    lines.say(`result ${resultPath} could not be written: ${errorText(err)}`);
    return { result, exitCode: WRAPPER_EXIT.noResult };
  }
}
