import path from "node:path";

export const THINKING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh"] as const;
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

/** A meta.json problem: `message` is the one line shown to the user. */
export class MetaError extends Error {
  constructor(
    message: string,
    /** Where result.json goes, when meta got far enough to say so. */
    readonly resultPath?: string,
    /** The runId, when meta names one. */
    readonly runId?: string,
  ) {
    super(message);
    this.name = "MetaError";
  }
}

const REQUIRED_STRINGS = ["runId", "task", "cwd", "resultPath", "eventsPath"] as const;
const OPTIONAL_STRINGS = [
  "mode",
  "agent",
  "agentSource",
  "agentPath",
  "requestedModel",
  "resolvedModel",
  "systemPromptPath",
  "sessionPath",
  "startedAt",
  "stdoutPath",
  "stderrPath",
  "transcriptPath",
  "inboxPath",
] as const;
const PATH_FIELDS = ["cwd", "resultPath", "eventsPath", "systemPromptPath", "sessionPath", "stdoutPath", "stderrPath", "transcriptPath", "inboxPath"] as const;

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/** The raw resultPath of a parsed-but-maybe-invalid meta object, resolved, if it is usable. */
export function peekResultPath(raw: unknown, baseDir: string): string | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  const value = (raw as Record<string, unknown>).resultPath;
  return typeof value === "string" && value.length > 0 ? path.resolve(baseDir, value) : undefined;
}

/**
 * Validate a parsed meta.json object and resolve its paths against `baseDir` (the folder
 * holding meta.json). Pure: checks that need the file system live in the wrapper.
 * Unknown fields are ignored so newer writers keep working with this reader.
 */
export function parseMeta(raw: unknown, baseDir: string): MetaV1 {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new MetaError(`meta.json must hold a JSON object, not ${describe(raw)}`);
  }
  const input = raw as Record<string, unknown>;
  const resultPath = peekResultPath(raw, baseDir);
  const runId = typeof input.runId === "string" ? input.runId : undefined;
  const fail = (message: string): never => {
    throw new MetaError(message, resultPath, runId);
  };

  if (input.version !== undefined && input.version !== 1) {
    fail(`meta.json version ${JSON.stringify(input.version)} is not supported (this wrapper reads version 1)`);
  }
  for (const key of REQUIRED_STRINGS) {
    const value = input[key];
    if (value === undefined) fail(`meta.json is missing required field "${key}"`);
    if (typeof value !== "string") fail(`meta.json field "${key}" must be a string, not ${describe(value)}`);
    if (key !== "task" && value === "") fail(`meta.json field "${key}" must not be empty`);
  }
  for (const key of OPTIONAL_STRINGS) {
    const value = input[key];
    if (value !== undefined && typeof value !== "string") {
      fail(`meta.json field "${key}" must be a string, not ${describe(value)}`);
    }
  }
  for (const key of ["noExtensions", "noContextFiles"] as const) {
    const value = input[key];
    if (value !== undefined && typeof value !== "boolean") {
      fail(`meta.json field "${key}" must be a boolean, not ${describe(value)}`);
    }
  }
  for (const key of ["tools", "extensions"] as const) {
    const value = input[key];
    if (value === undefined) continue;
    if (!Array.isArray(value) || value.some((item) => typeof item !== "string" || item === "")) {
      fail(`meta.json field "${key}" must be an array of non-empty strings`);
    }
  }
  for (const key of ["timeoutMs", "graceMs"] as const) {
    const value = input[key];
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
      fail(`meta.json field "${key}" must be a positive number of milliseconds, not ${JSON.stringify(value)}`);
    }
  }
  if (input.thinking !== undefined && !THINKING_LEVELS.includes(input.thinking as ThinkingLevel)) {
    fail(`meta.json field "thinking" must be one of ${THINKING_LEVELS.join(", ")}, not ${JSON.stringify(input.thinking)}`);
  }
  if (input.env !== undefined) {
    const env = input.env;
    if (typeof env !== "object" || env === null || Array.isArray(env)) {
      fail(`meta.json field "env" must be an object of strings, not ${describe(env)}`);
    }
    for (const [name, value] of Object.entries(env as Record<string, unknown>)) {
      if (typeof value !== "string") fail(`meta.json field "env.${name}" must be a string, not ${describe(value)}`);
    }
  }

  const meta = { ...input } as unknown as MetaV1;
  for (const key of PATH_FIELDS) {
    const value = meta[key];
    if (typeof value === "string") meta[key] = path.resolve(baseDir, value);
  }
  if (meta.extensions) meta.extensions = meta.extensions.map((entry) => resolveExtensionEntry(entry, baseDir));
  return pickKnown(meta);
}

/** Paths starting with `.` or `/` resolve like other paths; package specs pass through. */
export function resolveExtensionEntry(entry: string, baseDir: string): string {
  return entry.startsWith(".") || entry.startsWith("/") ? path.resolve(baseDir, entry) : entry;
}

const KNOWN_KEYS: ReadonlyArray<keyof MetaV1> = [
  ...REQUIRED_STRINGS,
  ...OPTIONAL_STRINGS,
  "thinking",
  "tools",
  "extensions",
  "noExtensions",
  "noContextFiles",
  "timeoutMs",
  "graceMs",
  "env",
];

function pickKnown(meta: MetaV1): MetaV1 {
  const out: Record<string, unknown> = {};
  for (const key of KNOWN_KEYS) if (meta[key] !== undefined) out[key] = meta[key];
  return out as unknown as MetaV1;
}

/** The model the child runs: resolved, else requested, else pi's default (undefined). */
export function effectiveModel(meta: Pick<MetaV1, "resolvedModel" | "requestedModel">): string | undefined {
  return meta.resolvedModel || meta.requestedModel || undefined;
}
