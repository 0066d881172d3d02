/**
 * Checking a meta.json object read from disk: every problem a line, paths resolved against
 * meta.json's folder, unknown fields listed with the known field each is nearest to. Pure:
 * the checks that need the file system live in the wrapper (load-meta.ts).
 */
import path from "node:path";
import { nearestField } from "./field-suggestion.js";
import { parseLimits } from "./limits.js";
import { MetaError, type MetaV1, THINKING_LEVELS, type ThinkingLevel } from "./meta.js";
import { resolvedRunnerProblems } from "./runners.js";
import { metaVerifyProblems } from "./verify.js";

const REQUIRED_STRINGS = ["runId", "task", "cwd", "resultPath", "eventsPath"] as const;
/** Optional file paths: they resolve against the folder holding meta.json. */
const OPTIONAL_PATHS = [
  "systemPromptPath",
  "sessionPath",
  "stdoutPath",
  "stderrPath",
  "transcriptPath",
  "inboxPath",
  "cwdReadyPath",
  "runnerWorkspacePath",
] as const;
const OPTIONAL_STRINGS = [
  "mode",
  "agent",
  "agentSource",
  "agentPath",
  "requestedModel",
  "resolvedModel",
  "startedAt",
  ...OPTIONAL_PATHS,
] as const;
const PATH_FIELDS = ["cwd", "resultPath", "eventsPath", ...OPTIONAL_PATHS] as const;

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
  const check: FieldCheck = { input: raw as Record<string, unknown>, problems: [], valid: {} };
  // In this order: the problems are listed as the fields are checked.
  for (const step of FIELD_CHECKS) step(check);
  const fields = check.valid as Partial<MetaV1>;
  resolvePaths(fields, baseDir);
  return { fields, problems: check.problems, unknown: unknownFields(check.input) };
}

/** One pass over a meta.json object: the problems found so far, and the valid fields kept. */
interface FieldCheck {
  readonly input: Record<string, unknown>;
  readonly problems: string[];
  readonly valid: Record<string, unknown>;
}

/** Keeps a field that passed its check (an absent one stays absent). */
function accept(check: FieldCheck, key: string): void {
  if (check.input[key] !== undefined) check.valid[key] = check.input[key];
}

function checkVersion({ input, problems }: FieldCheck): void {
  if (input.version !== undefined && input.version !== 1) {
    problems.push(`meta.json version ${JSON.stringify(input.version)} is not supported (this wrapper reads version 1)`);
  }
}

function checkRequiredStrings(check: FieldCheck): void {
  for (const key of REQUIRED_STRINGS) {
    const value = check.input[key];
    if (value === undefined) check.problems.push(`meta.json is missing required field "${key}"`);
    else if (typeof value !== "string")
      check.problems.push(`meta.json field "${key}" must be a string, not ${describe(value)}`);
    else if (key !== "task" && value === "") check.problems.push(`meta.json field "${key}" must not be empty`);
    else accept(check, key);
  }
}

/** Fields of one kind: each that is present must pass `ok`; `problem` says what it must be otherwise. */
interface KindCheck {
  keys: readonly string[];
  ok(value: unknown): boolean;
  problem(key: string, value: unknown): string;
}

const KIND_CHECKS: readonly KindCheck[] = [
  {
    keys: OPTIONAL_STRINGS,
    ok: (value) => typeof value === "string",
    problem: (key, value) => `meta.json field "${key}" must be a string, not ${describe(value)}`,
  },
  {
    keys: ["noExtensions", "noContextFiles"],
    ok: (value) => typeof value === "boolean",
    problem: (key, value) => `meta.json field "${key}" must be a boolean, not ${describe(value)}`,
  },
  {
    keys: ["tools", "extensions", "fallbackModels"],
    ok: (value) => Array.isArray(value) && value.every((item) => typeof item === "string" && item !== ""),
    problem: (key) => `meta.json field "${key}" must be an array of non-empty strings`,
  },
  {
    keys: ["timeoutMs", "graceMs"],
    ok: (value) => typeof value === "number" && Number.isFinite(value) && value > 0,
    problem: (key, value) =>
      `meta.json field "${key}" must be a positive number of milliseconds, not ${JSON.stringify(value)}`,
  },
];

function checkKinds(check: FieldCheck): void {
  for (const { keys, ok, problem } of KIND_CHECKS) {
    for (const key of keys) {
      const value = check.input[key];
      if (value !== undefined && !ok(value)) check.problems.push(problem(key, value));
      else accept(check, key);
    }
  }
}

function checkThinking(check: FieldCheck): void {
  const { input } = check;
  if (input.thinking !== undefined && !THINKING_LEVELS.includes(input.thinking as ThinkingLevel)) {
    check.problems.push(
      `meta.json field "thinking" must be one of ${THINKING_LEVELS.join(", ")}, not ${JSON.stringify(input.thinking)}`,
    );
  } else accept(check, "thinking");
}

function checkEnv(check: FieldCheck): void {
  const env = check.input.env;
  if (env === undefined) return;
  if (typeof env !== "object" || env === null || Array.isArray(env)) {
    check.problems.push(`meta.json field "env" must be an object of strings, not ${describe(env)}`);
    return;
  }
  const bad = Object.entries(env as Record<string, unknown>).filter(([, value]) => typeof value !== "string");
  for (const [name, value] of bad)
    check.problems.push(`meta.json field "env.${name}" must be a string, not ${describe(value)}`);
  if (bad.length === 0) accept(check, "env");
}

function checkRunner(check: FieldCheck): void {
  const runner = check.input.runner;
  if (runner === undefined) return;
  const problems = resolvedRunnerProblems(runner, 'meta.json field "runner"');
  if (problems.length > 0) check.problems.push(...problems);
  else accept(check, "runner");
}

/** `limits`: the keys and values of contracts/limits.ts; each bad key is a problem naming it. */
function checkLimits(check: FieldCheck): void {
  if (check.input.limits === undefined) return;
  const { problems } = parseLimits(check.input.limits, "limits");
  for (const problem of problems) check.problems.push(`meta.json field ${problem}`);
  if (problems.length === 0) accept(check, "limits");
}

/** `dialogs`: `{timeoutMs}`, a whole number of milliseconds above 0. */
function checkDialogs(check: FieldCheck): void {
  const dialogs = check.input.dialogs;
  if (dialogs === undefined) return;
  if (typeof dialogs !== "object" || dialogs === null || Array.isArray(dialogs)) {
    check.problems.push(
      `meta.json field "dialogs" must be an object like {"timeoutMs": 300000}, not ${describe(dialogs)}`,
    );
    return;
  }
  const { timeoutMs, ...rest } = dialogs as Record<string, unknown>;
  const problems: string[] = [];
  if (typeof timeoutMs !== "number" || !Number.isInteger(timeoutMs) || timeoutMs <= 0)
    problems.push(`meta.json field "dialogs.timeoutMs" must be a whole number of milliseconds above 0`);
  for (const key of Object.keys(rest)) problems.push(`meta.json field "dialogs.${key}" is not a known field`);
  check.problems.push(...problems);
  if (problems.length === 0) accept(check, "dialogs");
}

/** `verify`: the checks a completed turn runs (contracts/verify.ts). */
function checkVerify(check: FieldCheck): void {
  if (check.input.verify === undefined) return;
  const problems = metaVerifyProblems(check.input.verify, 'meta.json field "verify"');
  if (problems.length > 0) check.problems.push(...problems);
  else accept(check, "verify");
}

const FIELD_CHECKS: ReadonlyArray<(check: FieldCheck) => void> = [
  checkVersion,
  checkRequiredStrings,
  checkKinds,
  checkThinking,
  checkEnv,
  checkLimits,
  checkDialogs,
  checkRunner,
  checkVerify,
];

/** Paths resolve against the folder holding meta.json; so do extension entries that are paths. */
function resolvePaths(fields: Partial<MetaV1>, baseDir: string): void {
  for (const key of PATH_FIELDS) {
    const value = fields[key];
    if (typeof value === "string") fields[key] = path.resolve(baseDir, value);
  }
  if (fields.extensions) fields.extensions = fields.extensions.map((entry) => resolveExtensionEntry(entry, baseDir));
  const verify = fields.verify;
  if (verify) {
    fields.verify = {
      ...verify,
      ...(verify.statePath && { statePath: path.resolve(baseDir, verify.statePath) }),
      ...(verify.review?.systemPromptPath && {
        review: { ...verify.review, systemPromptPath: path.resolve(baseDir, verify.review.systemPromptPath) },
      }),
    };
  }
}

/** The fields this version does not know, each with the known field it is nearest to. */
function unknownFields(input: Record<string, unknown>): MetaCheck["unknown"] {
  return Object.keys(input)
    .filter((key) => key !== "version" && !(KNOWN_KEYS as readonly string[]).includes(key))
    .map((field) => {
      const nearest = nearestKnownField(field);
      return nearest ? { field, nearest } : { field };
    });
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

/** The known field an unknown one most likely meant, if one is that close (field-suggestion.ts). */
export function nearestKnownField(field: string): string | undefined {
  return nearestField(field, [...KNOWN_KEYS, "version"]);
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
  "limits",
  "fallbackModels",
  "runner",
  "dialogs",
  "verify",
];
