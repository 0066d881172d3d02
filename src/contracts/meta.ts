import type { DialogSettingsV1 } from "./dialogs.js";
import type { TurnLimits } from "./limits.js";
import type { ResolvedRunner } from "./runners.js";
import type { MetaVerify } from "./verify.js";

/** pi's thinking levels, lowest first. `max` is pi 1.x's (0.80.6 and later); pi 0.73.1 warns about it and keeps its default. */
export const THINKING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "max"] as const;
export type ThinkingLevel = (typeof THINKING_LEVELS)[number];

/** Default time a child may linger after its terminal message before it is stopped. */
export const DEFAULT_GRACE_MS = 1000;

/**
 * A string that must not be empty.
 * @minLength 1
 */
export type NonEmptyString = string;

/**
 * A positive number of milliseconds.
 * @exclusiveMinimum 0
 */
export type PositiveMs = number;

/**
 * meta.json, version 1. Paths here are already resolved to absolute paths.
 * `schemas/meta.schema.json` is generated from this type (`npm run schemas`).
 */
export interface MetaV1 {
  /** Id of this run. */
  runId: NonEmptyString;
  /** The prompt for the child, delivered verbatim (may be empty). */
  task: string;
  /** Working directory of the child (an existing directory). */
  cwd: NonEmptyString;
  /** Where result.json goes. */
  resultPath: NonEmptyString;
  /** Where events.jsonl goes. */
  eventsPath: NonEmptyString;
  /** `single` (default), `followup`, …: informational. */
  mode?: string;
  /** Role name, e.g. `scout`. */
  agent?: string;
  /** `builtin`, `user` or `project`. */
  agentSource?: string;
  /** Canonical tree path, e.g. `/root/scout_one`. */
  agentPath?: string;
  /** `provider/id` the parent asked for. */
  requestedModel?: string;
  /** `provider/id` the child runs (wins over requestedModel). */
  resolvedModel?: string;
  thinking?: ThinkingLevel;
  /** Tool allowlist for the child (`[]` = no tools). */
  tools?: NonEmptyString[];
  /** Extension paths or package specs loaded into the child (`-e`). */
  extensions?: NonEmptyString[];
  /** The child does not discover installed extensions (`-ne`); only `extensions` load. */
  noExtensions?: boolean;
  /** The child skips AGENTS.md / CLAUDE.md discovery. */
  noContextFiles?: boolean;
  /** File whose text is appended to the child's system prompt (must exist). */
  systemPromptPath?: string;
  /** pi session file: a follow-up continues that conversation. */
  sessionPath?: string;
  /** ISO time the parent asked for the run. */
  startedAt?: string;
  /** Raw stdout of the child. */
  stdoutPath?: string;
  /** The child's stderr. */
  stderrPath?: string;
  /** Readable transcript. */
  transcriptPath?: string;
  /** Wall-clock limit of the run; absent = no limit. */
  timeoutMs?: PositiveMs;
  /**
   * Per-turn limits the wrapper enforces from the child's stream: at a limit the
   * child is told to wrap up, then has a grace (`grace_turns`, `grace_seconds`); with no answer
   * in it the run is stopped and ends `interrupted`. Absent = no limits (keys left out take the
   * defaults of contracts/limits.ts, `time_limit` 30 minutes, once any key is set).
   */
  limits?: TurnLimits;
  /** How long a child may linger after its terminal message (default 1000). */
  graceMs?: PositiveMs;
  /** Extra environment for the child. */
  env?: Record<string, string>;
  /**
   * A folder of live messages for the running child, one `{"id","text"}` JSON file each,
   * written whole, names sorting in send order: each is handed to pi as a steering message
   * (before its next model request) and moved to `delivered/` once pi shows it in the
   * conversation. Created (one level) when missing.
   */
  inboxPath?: string;
  /**
   * A file that says when `cwd` is ready, for a caller that writes the cwd (a checkout)
   * while the child starts: the child starts at once, but its tool calls wait until the
   * file exists. Holding `ready` lets them go on; anything else stops the child at once and
   * ends the run as an error with that text. What pi reads before its first tool call (context files, `.pi`,
   * `.agents`) must be there before the run starts. Once pi's own start-up is over (its
   * first model request is on its way) the child creates `cwdStartedPath(cwdReadyPath)`,
   * so the caller can leave heavy work until then.
   */
  cwdReadyPath?: string;
  /**
   * Where the child runs: a runner's name and definition, resolved. Absent (or
   * `local`) runs pi here; any other runs `<prefix> <remote_command…> serve` and speaks the
   * runner protocol with it (docs/runners.md). `cwd` must then be inside a git repository.
   */
  runner?: ResolvedRunner;
  /**
   * A folder of the parent's for this agent's runner workspace: the runner protocol
   * names the workspace by it, so a far side keeps the agent's workspace between turns and a
   * follow-up sends only what changed; a sandbox keeps it in this folder (bound writable as its
   * scratch root). Removed with the agent (close_agent) or the tree. Absent: nothing is kept.
   */
  runnerWorkspacePath?: string;
  /**
   * Models (`provider/id`) the turn moves to, in order, when its model fails with a provider
   * error after pi's own retries: the same session goes on with the next one.
   */
  fallbackModels?: NonEmptyString[];
  /**
   * Let the child's extensions open dialogs: pi runs in its RPC mode (its extensions see a
   * UI), and each dialog is written to the run's `dialogs/` folder beside the result file for
   * whoever answers it (contracts/dialogs.ts); unanswered, it is cancelled after `timeoutMs`.
   * Absent: the child runs with no UI, and its extensions take their "no UI" path.
   */
  dialogs?: DialogSettingsV1;
  /**
   * Checks run after the turn ends `completed` (never after an error, a stop or a limit), where
   * the child worked: a failing one goes back to the same session as a message, and the turn
   * goes on, up to `maxRepairs` times; result.json `verification` says how they ended.
   */
  verify?: MetaVerify;
}

/** The file the child creates once its start-up is over, beside meta.json `cwdReadyPath`. */
export function cwdStartedPath(cwdReadyPath: string): string {
  return `${cwdReadyPath}.started`;
}

/**
 * meta.json as a writer puts it on disk: relative paths resolve against the folder holding
 * it, `version` is 1 when present, and unknown fields are ignored (forward compatible).
 * The file-system checks (cwd is a directory, systemPromptPath exists, resultPath can be
 * written) are not expressible in JSON Schema and live in the wrapper.
 */
export interface MetaFileV1 extends MetaV1 {
  version?: 1;
  [field: string]: unknown;
}

/**
 * meta.json's problems. `problems` holds every one, a line each (what the CLI prints, one per
 * stderr line); `message` is them all on one line, `; `-separated (result.json's errorMessage).
 */
export class MetaError extends Error {
  readonly problems: readonly string[];

  constructor(
    problems: string | readonly string[],
    /** Where result.json goes, when meta got far enough to say so (and it can be written). */
    readonly resultPath?: string,
    /** The runId, when meta names one. */
    readonly runId?: string,
  ) {
    const list = typeof problems === "string" ? [problems] : [...problems];
    super(list.join("; "));
    this.name = "MetaError";
    this.problems = list;
  }
}

/** The model the child runs: resolved, else requested, else pi's default (undefined). */
export function effectiveModel(meta: Pick<MetaV1, "resolvedModel" | "requestedModel">): string | undefined {
  return meta.resolvedModel || meta.requestedModel || undefined;
}
