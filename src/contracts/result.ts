import { errorValue } from "../lib/text.js";
import { isRecord } from "../lib/values.js";
import type { AbortSource, StopReason } from "./events.js";
import { FieldChecks, isString, kindOf, type RecordCheck } from "./fields.js";
import type { AttemptErrorClass } from "./provider-errors.js";
import type { RunnerSummary } from "./runners.js";
import type { Usage } from "./usage.js";
import { isVerification, type Verification } from "./verify.js";

export const RESULT_VERSION = 1 as const;

/** Every outcome a run can record in result.json. */
export const RUN_STATUSES = [
  "completed",
  "truncated",
  "aborted",
  "interrupted",
  "timed_out",
  "incomplete",
  "failed",
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** The wrapper's own process exit codes. */
export const WRAPPER_EXIT = {
  /** The run completed. */
  completed: 0,
  /** The run ended with any other recorded outcome. */
  outcome: 1,
  /** Usage or meta.json error; no child was started. */
  usage: 2,
  /**
   * result.json could not be written, not even into the space reserved for it before the
   * child started (or that space could not be reserved, and no child was started): the
   * outcome is on stderr only.
   */
  noResult: 3,
} as const;

/**
 * A per-turn limit that was reached: its name (a `limits` key, or
 * `tree_budget_tokens` / `tree_budget_cost`), its value, and what the turn had used when it
 * was reached. A turn carrying it was wrapped up: its answer is partial work, not finished work.
 */
export interface LimitReport {
  name: string;
  value: number;
  used: number;
}

/** result.json, version 1. `schemas/result.schema.json` is generated from this type. */
export interface ResultV1 {
  version: typeof RESULT_VERSION;
  runId: string;
  agent?: string;
  agentPath?: string;
  status: RunStatus;
  /**
   * The wrapper's exit code: 0 when `status` is `completed`, else non-zero.
   * @asType integer
   */
  exitCode: number;
  stopReason?: StopReason;
  rawStopReason?: string;
  /** Text of the message that decided the outcome (else the last assistant message). */
  finalText: string;
  abortReason?: string;
  abortSource?: AbortSource;
  usage: Usage;
  /**
   * Assistant messages received (LLM responses, failed attempts included).
   * @asType integer
   */
  turns: number;
  /**
   * Tool executions started.
   * @asType integer
   */
  toolCalls: number;
  requestedModel?: string;
  /** What the child reported (`provider/id`). */
  resolvedModel?: string;
  /** @format date-time */
  startedAt: string;
  /** @format date-time */
  endedAt: string;
  /** @minimum 0 */
  durationMs: number;
  childExitCode: number | null;
  childSignal: string | null;
  /** True when the wrapper had to signal the child to make it exit. */
  forcedExit: boolean;
  errorMessage?: string;
  /** Where the child ran, when not here: `{name, kind, host?}`. */
  runner?: RunnerSummary;
  /** Set when a limit was reached and the child was told to wrap up. */
  limit?: LimitReport;
  /** Each model that failed with a provider error, in order: fallbacks and the last failure. */
  attempts?: ModelAttempt[];
  /**
   * How the turn's checks (meta.json `verify`) ended; present when it had checks. `status`
   * stays the turn's own: a `completed` turn whose checks failed is still `completed`.
   */
  verification?: Verification;
}

function isLimitReport(value: unknown): boolean {
  return (
    isRecord(value) &&
    typeof value.name === "string" &&
    typeof value.value === "number" &&
    Number.isFinite(value.value) &&
    typeof value.used === "number" &&
    Number.isFinite(value.used)
  );
}

/** One model's failed attempt at a turn (result.json `attempts`). */
export interface ModelAttempt {
  /** `provider/id`. */
  model: string;
  error_class: AttemptErrorClass;
  /** pi's error message, one line, at most 300 characters. */
  message: string;
  /** @format date-time */
  at: string;
  /**
   * The retry delay the provider named, in ms (a rate limit's cool-down).
   * @minimum 0
   */
  retry_after_ms?: number;
}

/** Whether a value is a well-formed `attempts` entry. */
export function isModelAttempt(value: unknown): value is ModelAttempt {
  if (!isRecord(value)) return false;
  const retry = value.retry_after_ms;
  return (
    isString(value.model) &&
    isString(value.error_class) &&
    isString(value.message) &&
    isString(value.at) &&
    (retry === undefined || (typeof retry === "number" && retry >= 0))
  );
}

export function exitCodeForStatus(status: RunStatus): number {
  return status === "completed" ? WRAPPER_EXIT.completed : WRAPPER_EXIT.outcome;
}

const STOP_REASONS: readonly StopReason[] = ["stop", "length", "toolUse", "aborted", "error"];
const ABORT_SOURCES: readonly AbortSource[] = ["marker", "child"];

/**
 * A result.json read back (by the extension, the CLI), checked against ResultV1: every
 * required field with its type and the optional ones this version knows; unknown fields kept.
 * The extension adds `usage`, stores `finalText` and maps `status`, so a result that fails
 * here is reported as damaged rather than trusted.
 */
export function checkResult(raw: unknown): RecordCheck<ResultV1> {
  if (!isRecord(raw)) return { ok: false, problem: `it holds ${kindOf(raw)}, not a JSON object` };
  if (raw.version !== RESULT_VERSION) {
    return {
      ok: false,
      problem:
        raw.version === undefined ? 'field "version" is missing' : `version ${errorValue(raw.version, 40)} is not 1`,
    };
  }
  const nullable = (ok: (value: unknown) => boolean) => (value: unknown) => value === null || ok(value);
  const problem = new FieldChecks(raw)
    .string("runId")
    .string("agent", false)
    .string("agentPath", false)
    .oneOf("status", RUN_STATUSES)
    .check("exitCode", true, Number.isSafeInteger, "an integer")
    .oneOf("stopReason", STOP_REASONS, false)
    .string("rawStopReason", false)
    .string("finalText")
    .string("abortReason", false)
    .oneOf("abortSource", ABORT_SOURCES, false)
    .usage("usage")
    .count("turns")
    .count("toolCalls")
    .string("requestedModel", false)
    .string("resolvedModel", false)
    .string("startedAt")
    .string("endedAt")
    .number("durationMs")
    .check("childExitCode", true, nullable(Number.isSafeInteger), "an integer or null")
    .check("childSignal", true, nullable(isString), "a signal name or null")
    .boolean("forcedExit")
    .string("errorMessage", false)
    .check("limit", false, isLimitReport, "an object {name, value, used}")
    .list("attempts", isModelAttempt, "a list of {model, error_class, message, at}", false)
    .check("verification", false, isVerification, "a verification {status, repairs, checks}")
    .check(
      "runner",
      false,
      (value) => isRecord(value) && isString(value.name) && isString(value.kind),
      "a runner summary",
    )
    .summary();
  return problem ? { ok: false, problem } : { ok: true, record: raw as unknown as ResultV1 };
}
