import type { AbortSource, StopReason } from "./events.js";
import type { Usage } from "./usage.js";

export const RESULT_VERSION = 1 as const;

/** Every outcome a run can record in result.json. */
export const RUN_STATUSES = ["completed", "truncated", "aborted", "interrupted", "timed_out", "incomplete", "failed"] as const;
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
}

export function exitCodeForStatus(status: RunStatus): number {
  return status === "completed" ? WRAPPER_EXIT.completed : WRAPPER_EXIT.outcome;
}
