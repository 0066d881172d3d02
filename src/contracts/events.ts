/**
 * The records the wrapper writes to events.jsonl (one JSON object a line).
 * Every record carries `type`, `seq` (1, 2, …) and `ts` (ms since epoch).
 */

import type { Usage } from "./usage.js";

/** Canonical stop reasons; `undefined` means pi sent one we do not know (never terminal). */
export type StopReason = "stop" | "length" | "toolUse" | "aborted" | "error";

export type AbortSource = "marker" | "child";

export interface RunStartRecord {
  type: "run_start";
  runId: string;
  pid: number | null;
  /** The child's arguments, without the task text and without secrets. */
  argv: string[];
  /** Present: this pi was the tree's spare pi, started before the turn and handed to it (contracts/spare.ts). */
  spare?: true;
}

export interface AssistantTextRecord {
  type: "assistant_text";
  text: string;
  model?: string;
  stopReason?: StopReason;
  rawStopReason?: string;
  usage?: Usage;
  errorMessage?: string;
}

export interface ToolCallRecord {
  type: "tool_call";
  toolCallId: string;
  toolName: string;
  args: unknown;
}

export interface ToolResultRecord {
  type: "tool_result";
  toolCallId: string;
  toolName: string;
  isError: boolean;
}

export type RetryRecord =
  | {
      type: "retry";
      phase: "start";
      attempt: number;
      maxAttempts?: number;
      delayMs?: number;
      errorMessage?: string;
    }
  | {
      type: "retry";
      phase: "end";
      attempt: number;
      success: boolean;
      finalError?: string;
    };

export interface AbortRecord {
  type: "abort";
  reason: string;
  source: AbortSource;
}

/** pi settled: all its automatic work (retries, continuations, queued messages) is done. */
export interface SettledRecord {
  type: "settled";
  /** pi's own abort ended the run (as pi reported it). */
  aborted?: boolean;
}

/**
 * A live message (meta.json `inboxPath`) reached the child's conversation: pi showed a user
 * message with exactly its text. Written where the child read it, between the records around it.
 */
export interface MessageDeliveredRecord {
  type: "message_delivered";
  /** The message file's `id`. */
  id: string;
  /** Its text, as the child read it. */
  text: string;
}

/**
 * A per-turn limit (meta.json `limits`) was reached (`phase: "reached"`: the child
 * is told to wrap up) or its grace ran out with no answer (`phase: "stopped"`: the run is stopped).
 */
export interface LimitRecord {
  type: "limit";
  phase: "reached" | "stopped";
  /** A key of `limits` (`max_turns`, `max_tokens`, `max_cost`, `time_limit`) or `tree_budget_tokens` / `tree_budget_cost`. */
  name: string;
  value: number;
  used: number;
}

/**
 * The turn's model failed with a provider error that moves it on: the same session
 * goes on with the next fallback model, in a new pi (a `run_start` follows).
 */
export interface ModelSwitchRecord {
  type: "model_switch";
  /** The model that failed (`provider/id`), when known. */
  from?: string;
  /** The model the turn goes on with. */
  to: string;
  errorClass: string;
  /** pi's error message, at most 300 characters. */
  message: string;
}

/**
 * A dialog the child's extension opened (meta.json `dialogs`): `asked` when the wrapper wrote
 * its ask file, `answered` when the answer went to pi. The ask and answer files in the run's
 * `dialogs/` folder hold the whole of both.
 */
export interface DialogRecord {
  type: "dialog";
  phase: "asked" | "answered";
  /** pi's request id. */
  id: string;
  /**
   * Its place in the run's order of asking, from 1: the number in its files' names (`seq` is
   * the record's own place in events.jsonl).
   * @asType integer
   * @minimum 1
   */
  dialogSeq: number;
  method: import("./dialogs.js").DialogMethod;
  title: string;
  /** `answered`: who answered (`timeout`: nobody did in time, and it was cancelled). */
  answeredBy?: import("./dialogs.js").DialogAnswerer;
  /** `answered`: the answer was a cancel. */
  cancelled?: boolean;
}

/** A notice the child's extension showed (`ctx.ui.notify`), with meta.json `dialogs`. */
export interface NotifyRecord {
  type: "notify";
  message: string;
  /** pi's notify type (`info`, `warning`, `error`). */
  level?: string;
}

/** One check of the turn's verification ended (meta.json `verify`). */
export interface CheckRecord {
  type: "check";
  name: string;
  kind: "run" | "review";
  passed: boolean;
  exitCode?: number;
  verdict?: "pass" | "fail";
  durationMs: number;
  reused?: boolean;
}

/** A check failed and the child is sent back to repair its work, in the same session. */
export interface RepairRecord {
  type: "repair";
  /** 1 for the first repair round. */
  round: number;
  /** The failing checks' names. */
  checks: string[];
}

export interface RunEndRecord {
  type: "run_end";
  status: import("./result.js").RunStatus;
  exitCode: number;
}

/** A record before the writer stamps it with `seq` and `ts`. */
export type EventRecordBody =
  | RunStartRecord
  | AssistantTextRecord
  | ToolCallRecord
  | ToolResultRecord
  | RetryRecord
  | AbortRecord
  | SettledRecord
  | MessageDeliveredRecord
  | LimitRecord
  | ModelSwitchRecord
  | DialogRecord
  | NotifyRecord
  | CheckRecord
  | RepairRecord
  | RunEndRecord;

/**
 * One line of events.jsonl. `schemas/event.schema.json` is generated from this type.
 */
export type EventRecord = EventRecordBody & {
  /**
   * 1, 2, … in the order written.
   * @asType integer
   * @minimum 1
   */
  seq: number;
  /**
   * When it was written, ms since epoch.
   * @asType integer
   */
  ts: number;
};
