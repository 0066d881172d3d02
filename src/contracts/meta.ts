import path from "node:path";

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
  "cwdReadyPath",
] as const;
const PATH_FIELDS = [
  "cwd",
  "resultPath",
  "eventsPath",
  "systemPromptPath",
  "sessionPath",
  "stdoutPath",
  "stderrPath",
  "transcriptPath",
  "inboxPath",
  "cwdReadyPath",
] as const;

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

/** What checking a meta.json object found. */
export interface MetaCheck {
  /** The fields that are valid, paths resolved: the whole MetaV1 when `problems` is empty. */
  fields: Partial<MetaV1>;
  /** Every problem, one line each, in the order the fields are checked. */
  problems: string[];
  /** Fields this version does not know (ignored), each with the known field it is nearest to, if one is close. */
  unknown: Array<{ field: string; nearest?: string }>;
}

/**
 * Check a parsed meta.json object and resolve its paths against `baseDir` (the folder
 * holding meta.json), reporting every problem rather than the first. Pure: checks that need
 * the file system live in the wrapper. Unknown fields are ignored so newer writers keep
 * working with this reader; they are listed so the wrapper can warn about a likely typo.
 */
export function checkMeta(raw: unknown, baseDir: string): MetaCheck {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    return { fields: {}, problems: [`meta.json must hold a JSON object, not ${describe(raw)}`], unknown: [] };
  }
  const input = raw as Record<string, unknown>;
  const problems: string[] = [];
  const valid: Record<string, unknown> = {};
  const accept = (key: string) => {
    if (input[key] !== undefined) valid[key] = input[key];
  };

  if (input.version !== undefined && input.version !== 1) {
    problems.push(`meta.json version ${JSON.stringify(input.version)} is not supported (this wrapper reads version 1)`);
  }
  for (const key of REQUIRED_STRINGS) {
    const value = input[key];
    if (value === undefined) problems.push(`meta.json is missing required field "${key}"`);
    else if (typeof value !== "string")
      problems.push(`meta.json field "${key}" must be a string, not ${describe(value)}`);
    else if (key !== "task" && value === "") problems.push(`meta.json field "${key}" must not be empty`);
    else accept(key);
  }
  for (const key of OPTIONAL_STRINGS) {
    const value = input[key];
    if (value !== undefined && typeof value !== "string")
      problems.push(`meta.json field "${key}" must be a string, not ${describe(value)}`);
    else accept(key);
  }
  for (const key of ["noExtensions", "noContextFiles"] as const) {
    const value = input[key];
    if (value !== undefined && typeof value !== "boolean")
      problems.push(`meta.json field "${key}" must be a boolean, not ${describe(value)}`);
    else accept(key);
  }
  for (const key of ["tools", "extensions"] as const) {
    const value = input[key];
    if (
      value !== undefined &&
      (!Array.isArray(value) || value.some((item) => typeof item !== "string" || item === ""))
    ) {
      problems.push(`meta.json field "${key}" must be an array of non-empty strings`);
    } else accept(key);
  }
  for (const key of ["timeoutMs", "graceMs"] as const) {
    const value = input[key];
    if (value !== undefined && (typeof value !== "number" || !Number.isFinite(value) || value <= 0)) {
      problems.push(`meta.json field "${key}" must be a positive number of milliseconds, not ${JSON.stringify(value)}`);
    } else accept(key);
  }
  if (input.thinking !== undefined && !THINKING_LEVELS.includes(input.thinking as ThinkingLevel)) {
    problems.push(
      `meta.json field "thinking" must be one of ${THINKING_LEVELS.join(", ")}, not ${JSON.stringify(input.thinking)}`,
    );
  } else accept("thinking");
  if (input.env !== undefined) {
    const env = input.env;
    if (typeof env !== "object" || env === null || Array.isArray(env)) {
      problems.push(`meta.json field "env" must be an object of strings, not ${describe(env)}`);
    } else {
      const bad = Object.entries(env as Record<string, unknown>).filter(([, value]) => typeof value !== "string");
      for (const [name, value] of bad)
        problems.push(`meta.json field "env.${name}" must be a string, not ${describe(value)}`);
      if (bad.length === 0) accept("env");
    }
  }

  const fields = valid as Partial<MetaV1>;
  for (const key of PATH_FIELDS) {
    const value = fields[key];
    if (typeof value === "string") fields[key] = path.resolve(baseDir, value);
  }
  if (fields.extensions) fields.extensions = fields.extensions.map((entry) => resolveExtensionEntry(entry, baseDir));
  const unknown = Object.keys(input)
    .filter((key) => key !== "version" && !(KNOWN_KEYS as readonly string[]).includes(key))
    .map((field) => {
      const nearest = nearestKnownField(field);
      return nearest ? { field, nearest } : { field };
    });
  return { fields, problems, unknown };
}

/**
 * Validate a parsed meta.json object and resolve its paths against `baseDir`. Throws a
 * MetaError holding every problem.
 */
export function parseMeta(raw: unknown, baseDir: string): MetaV1 {
  const { fields, problems } = checkMeta(raw, baseDir);
  if (problems.length > 0) {
    throw new MetaError(
      problems,
      peekResultPath(raw, baseDir),
      typeof fields.runId === "string" ? fields.runId : undefined,
    );
  }
  return fields as MetaV1;
}

/** The line the wrapper prints for a field it does not know. */
export function unknownFieldWarning({ field, nearest }: { field: string; nearest?: string }): string {
  const name = JSON.stringify(field);
  return nearest
    ? `meta.json field ${name} is not a known field and is ignored; did you mean "${nearest}"?`
    : `meta.json field ${name} is not a known field and is ignored`;
}

/** Edit distance (insertions, deletions, substitutions) between two short strings. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * The known field an unknown one most likely meant: the same name in another case
 * (`timeoutMS`), a known name it begins (`stdout` → `stdoutPath`), or one within two edits
 * (one for short names). None when nothing is that close.
 */
export function nearestKnownField(field: string): string | undefined {
  const lower = field.toLowerCase();
  const known = [...KNOWN_KEYS, "version"];
  const sameName = known.find((key) => key.toLowerCase() === lower);
  if (sameName) return sameName;
  if (lower.length >= 4) {
    const begun = known.find((key) => key.toLowerCase().startsWith(lower));
    if (begun) return begun;
  }
  const limit = lower.length >= 5 ? 2 : 1;
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const key of known) {
    const distance = editDistance(lower, key.toLowerCase());
    if (distance < bestDistance) {
      best = key;
      bestDistance = distance;
    }
  }
  return best;
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

/** The model the child runs: resolved, else requested, else pi's default (undefined). */
export function effectiveModel(meta: Pick<MetaV1, "resolvedModel" | "requestedModel">): string | undefined {
  return meta.resolvedModel || meta.requestedModel || undefined;
}
