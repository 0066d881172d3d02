/**
 * Live progress of one child run, read from the events.jsonl its wrapper writes as things
 * happen. `applyRecord` is the pure fold (one record at a time); `EventsTail` folds the whole
 * lines appended since its last poll (lib/jsonl-follower.ts), so a record the wrapper is
 * still writing is never parsed half-way.
 */
import type { RunStatus } from "../../contracts/result.js";
import { addUsage, emptyUsage, normalizeUsage, type Usage } from "../../contracts/usage.js";
import { JsonlFollower } from "../../lib/jsonl-follower.js";
import { isRecord } from "../../lib/values.js";

export interface RunProgress {
  /** `ts` of run_start (ms since epoch). */
  startedAt?: number;
  /** `ts` of run_end; set once the wrapper has finished the run. */
  endedAt?: number;
  status?: RunStatus;
  /** Assistant messages so far (LLM responses, failed attempts included). */
  turns: number;
  toolCalls: number;
  /** Tools started and not finished yet, by toolCallId, in start order. */
  openTools: Map<string, string>;
  /** Summed over the run's assistant messages so far. */
  usage: Usage;
  /** pi is waiting to retry a provider error. */
  retrying: boolean;
  /** The limit the run met (events.jsonl `limit`): the child is wrapping up. */
  limitReached?: string;
  /** The model the run's pi was started on (its latest `run_start`; a fallback after a `model_switch`). */
  model?: string;
  /** The latest `notify` of the child's extensions shown, at most one a second (events.jsonl `notify`, with meta.json `dialogs`). */
  notified?: { message: string; at: number };
}

/** A child's notifies replace each other on its progress line at most this often. */
export const NOTIFY_EVERY_MS = 1000;

export function emptyRunProgress(): RunProgress {
  return { turns: 0, toolCalls: 0, openTools: new Map(), usage: emptyUsage(), retrying: false };
}

/** The tool the run is in now (the latest one started and not finished). */
export function currentTool(progress: RunProgress): string | undefined {
  return [...progress.openTools.values()].at(-1);
}

/** The `--model` value of a run_start's argv, when it has one. */
function modelArgument(argv: unknown): string | undefined {
  if (!Array.isArray(argv)) return undefined;
  const value = argv[argv.indexOf("--model") + 1];
  return argv.includes("--model") && typeof value === "string" ? value : undefined;
}

/** Folds one events.jsonl record into the run's progress. Unknown records change nothing. */
export function applyRecord(progress: RunProgress, record: unknown): void {
  if (!isRecord(record)) return;
  const ts = typeof record.ts === "number" ? record.ts : undefined;
  switch (record.type) {
    case "run_start":
      progress.startedAt ??= ts;
      progress.model = modelArgument(record.argv) ?? progress.model;
      break;
    case "model_switch":
      if (typeof record.to === "string") progress.model = record.to;
      break;
    case "assistant_text":
      progress.turns += 1;
      progress.retrying = false;
      if (isRecord(record.usage)) addUsage(progress.usage, normalizeUsage(record.usage));
      break;
    case "tool_call":
      progress.toolCalls += 1;
      if (typeof record.toolCallId === "string" && typeof record.toolName === "string")
        progress.openTools.set(record.toolCallId, record.toolName);
      break;
    case "tool_result":
      if (typeof record.toolCallId === "string") progress.openTools.delete(record.toolCallId);
      break;
    case "retry":
      progress.retrying = record.phase === "start";
      break;
    case "limit":
      if (typeof record.name === "string") progress.limitReached ??= record.name;
      break;
    case "notify": {
      const since = ts === undefined ? undefined : ts - (progress.notified?.at ?? Number.NEGATIVE_INFINITY);
      if (typeof record.message === "string" && since !== undefined && since >= NOTIFY_EVERY_MS)
        progress.notified = { message: record.message, at: ts! };
      break;
    }
    case "run_end":
      progress.endedAt = ts;
      if (typeof record.status === "string") progress.status = record.status as RunStatus;
      progress.openTools.clear();
      progress.retrying = false;
      break;
  }
}

/** At most this much is read per poll, so one huge file cannot stall a refresh. */
const MAX_READ_BYTES = 4 * 1024 * 1024;

export class EventsTail {
  private readonly follower: JsonlFollower;
  private reading: Promise<RunProgress> | undefined;
  progress: RunProgress = emptyRunProgress();

  constructor(readonly file: string) {
    this.follower = new JsonlFollower(file, MAX_READ_BYTES);
  }

  /** Whether the run is over: nothing more will be appended. */
  get done(): boolean {
    return this.progress.endedAt !== undefined;
  }

  /**
   * Reads what was appended since the last poll; a missing file is a run not started yet.
   * Callers that poll at once (the widget's timer, a wait_agent update) share one read, so
   * no record is folded twice.
   */
  poll(): Promise<RunProgress> {
    this.reading ??= this.read().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  private async read(): Promise<RunProgress> {
    const { lines, restarted } = await this.follower.read();
    if (restarted) this.progress = emptyRunProgress(); // replaced or truncated: start over
    for (const { text } of lines) {
      try {
        applyRecord(this.progress, JSON.parse(text));
      } catch {
        // not JSON: the wrapper writes whole lines, so this is damage; skip it
      }
    }
    return this.progress;
  }
}
