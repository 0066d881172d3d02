/**
 * Verification of a child's turn: the `verify` object (spawn_agent, an agent definition's
 * `verify:` block, the settings default) and the `verification` a result carries. A child's
 * "completed" is only its own word; these checks run where it worked before the turn is
 * reported, and a failing one sends the child back to repair its work in the same session.
 */
import { isRecord } from "../lib/values.js";
import { kindOf } from "./fields.js";

/** The keys of `verify`, in the order the docs and errors list them. */
export const VERIFY_KEYS = ["run", "review", "max_repairs", "timeout"] as const;

/** What holds when `verify` leaves a key out. */
export const VERIFY_DEFAULTS = { maxRepairs: 2, timeoutSeconds: 600 } as const;
/** The most repairs a turn may take: each is a model round trip the turn pays for. */
export const MAX_REPAIRS_LIMIT = 5;
/** How much of a check's output is kept (its end: where a failure says why). */
export const CHECK_OUTPUT_CHARS = 4000;
/** The tools a reviewer gets: it reads the work and never changes it. */
export const REVIEW_TOOLS = ["read", "grep", "find", "ls"] as const;

/** `verify` as written: shell commands, a reviewer's name, the repairs allowed, seconds per check. */
export interface VerifySpec {
  run?: string[];
  review?: string;
  max_repairs?: number;
  timeout?: number;
}

export type CheckKind = "run" | "review";
export type VerificationStatus = "passed" | "failed" | "not_run";

/** One check's last run (result.json `verification.checks`). */
export interface VerificationCheck {
  /** The command as written, or the reviewer's name. */
  name: string;
  kind: CheckKind;
  /**
   * A command's exit code (absent when it was ended by a signal or its time-out).
   * @asType integer
   */
  exit_code?: number;
  /** A review's verdict, when its answer gave one. */
  verdict?: "pass" | "fail";
  /** @minimum 0 */
  duration_ms: number;
  /** The last CHECK_OUTPUT_CHARS characters of its output. */
  output_tail: string;
  /** The result of an earlier run of the same command on the same workspace content. */
  reused?: boolean;
}

/** How a turn's checks ended: `passed`, `failed` after the last repair, or `not_run` (the turn did not complete). */
export interface Verification {
  status: VerificationStatus;
  /**
   * Repair rounds the child was sent back for.
   * @asType integer
   */
  repairs: number;
  checks: VerificationCheck[];
}

export type VerifyParse = { ok: true; verify: VerifySpec | undefined } | { ok: false; problem: string };

const isCommand = (value: unknown): value is string => typeof value === "string" && value.trim().length > 0;

/**
 * Checks a `verify` object from any source; the problem names the field (`verify.max_repairs
 * must be a whole number from 0 to 5, not 9`). `where` prefixes it (`verify`, `subagents.verify`).
 * Absent (undefined or null) is no verification.
 */
export function parseVerify(value: unknown, where = "verify"): VerifyParse {
  if (value === undefined || value === null) return { ok: true, verify: undefined };
  if (!isRecord(value)) return { ok: false, problem: `${where} must be an object, not ${kindOf(value)}` };
  const verify: VerifySpec = {};
  for (const [key, raw] of Object.entries(value)) {
    const parseKey = Object.hasOwn(KEY_PARSERS, key) ? KEY_PARSERS[key] : undefined;
    if (!parseKey) return { ok: false, problem: `${where}: unknown key "${key}" (known: ${VERIFY_KEYS.join(", ")})` };
    const problem = parseKey(raw, verify);
    if (problem) return { ok: false, problem: `${where}.${key} ${problem}` };
  }
  if (!verify.run?.length && verify.review === undefined) {
    return { ok: false, problem: `${where} needs run (shell commands) or review (an agent definition)` };
  }
  return { ok: true, verify };
}

/** Each key of `verify`: sets it on `into`, or says what it must be. */
const KEY_PARSERS: Record<string, (raw: unknown, into: VerifySpec) => string | undefined> = {
  run: (raw, into) => {
    const list = typeof raw === "string" ? [raw] : raw;
    if (!Array.isArray(list) || !list.every(isCommand)) return `must be a list of shell commands, not ${kindOf(raw)}`;
    into.run = list;
    return undefined;
  },
  review: (raw, into) => {
    if (!isCommand(raw)) return `must name an agent definition, not ${kindOf(raw)}`;
    into.review = raw.trim();
    return undefined;
  },
  max_repairs: (raw, into) => {
    if (typeof raw !== "number" || !Number.isInteger(raw) || raw < 0 || raw > MAX_REPAIRS_LIMIT) {
      return `must be a whole number from 0 to ${MAX_REPAIRS_LIMIT}, not ${show(raw)}`;
    }
    into.max_repairs = raw;
    return undefined;
  },
  timeout: (raw, into) => {
    if (typeof raw !== "number" || !Number.isFinite(raw) || raw <= 0) {
      return `must be a positive number of seconds, not ${show(raw)}`;
    }
    into.timeout = raw;
    return undefined;
  },
};

function show(value: unknown): string {
  return typeof value === "number" ? String(value) : typeof value === "string" ? JSON.stringify(value) : kindOf(value);
}

/** The first `verify` that is set: spawn_agent's, else the definition's, else the settings'. */
export function chooseVerify(...layers: Array<VerifySpec | undefined>): VerifySpec | undefined {
  return layers.find((layer) => layer !== undefined);
}

/** A command passes with exit code 0; a review with the verdict `pass`. */
export function checkPassed(check: VerificationCheck): boolean {
  return check.kind === "review" ? check.verdict === "pass" : check.exit_code === 0;
}

/** Whether a value read back is a well-formed `verification`. */
export function isVerification(value: unknown): value is Verification {
  return (
    isRecord(value) &&
    (value.status === "passed" || value.status === "failed" || value.status === "not_run") &&
    typeof value.repairs === "number" &&
    Array.isArray(value.checks) &&
    value.checks.every(
      (check) =>
        isRecord(check) &&
        typeof check.name === "string" &&
        (check.kind === "run" || check.kind === "review") &&
        typeof check.duration_ms === "number" &&
        typeof check.output_tail === "string",
    )
  );
}

/** The one-line head of a turn's verification, as a notice and the lists show it. */
export function describeVerification(verification: Verification): string {
  const repairs = `${verification.repairs} repair${verification.repairs === 1 ? "" : "s"}`;
  if (verification.status === "passed") {
    return verification.repairs > 0 ? `verification passed after ${repairs}` : "verification passed";
  }
  if (verification.status === "failed") return `verification failed after ${repairs}`;
  return "verification not run";
}

/**
 * The reviewer a turn's `review` names, resolved by the caller: the wrapper starts it as a pi
 * with REVIEW_TOOLS only, in the child's cwd, without a session.
 */
export interface MetaReview {
  /** The agent definition's (or role's) name: the check's name. */
  name: string;
  /** `provider/id`; absent: the child's model. */
  model?: string;
  /** A file whose text is appended to the reviewer's system prompt (the definition's text). */
  systemPromptPath?: string;
}

/**
 * meta.json `verify`: the checks the wrapper runs after a `completed` turn, resolved by the
 * caller (defaults applied, the reviewer found).
 */
export interface MetaVerify {
  /** Shell commands, each run with `sh -c` in the child's cwd, in order. */
  run?: string[];
  review?: MetaReview;
  /**
   * Repair rounds allowed (0 to 5).
   * @asType integer
   */
  maxRepairs: number;
  /**
   * Each check's time limit, in milliseconds.
   * @exclusiveMinimum 0
   */
  timeoutMs: number;
  /** A file of the agent's where each command's last result is kept, for reuse on unchanged content. */
  statePath?: string;
}

/** meta.json `verify`'s problems, each naming the field. */
export function metaVerifyProblems(value: unknown, where: string): string[] {
  if (!isRecord(value)) return [`${where} must be an object, not ${kindOf(value)}`];
  const problems: string[] = [];
  if (value.run !== undefined && !(Array.isArray(value.run) && value.run.every(isCommand))) {
    problems.push(`${where}.run must be an array of shell commands`);
  }
  const review = value.review;
  if (review !== undefined) {
    if (!isRecord(review) || !isCommand(review.name)) problems.push(`${where}.review must be an object with a name`);
    else {
      for (const key of ["model", "systemPromptPath"] as const) {
        if (review[key] !== undefined && !isCommand(review[key]))
          problems.push(`${where}.review.${key} must be a string`);
      }
    }
  }
  const repairs = value.maxRepairs;
  if (typeof repairs !== "number" || !Number.isInteger(repairs) || repairs < 0 || repairs > MAX_REPAIRS_LIMIT) {
    problems.push(`${where}.maxRepairs must be a whole number from 0 to ${MAX_REPAIRS_LIMIT}`);
  }
  const timeout = value.timeoutMs;
  if (typeof timeout !== "number" || !Number.isFinite(timeout) || timeout <= 0) {
    problems.push(`${where}.timeoutMs must be a positive number of milliseconds`);
  }
  if (value.statePath !== undefined && !isCommand(value.statePath)) problems.push(`${where}.statePath must be a path`);
  return problems;
}

/** An agent definition's `verify:` block (frontmatter), or its problem. */
export function verifyField(fm: Record<string, unknown>): VerifySpec | undefined | { problem: string } {
  if (!("verify" in fm)) return undefined;
  const parsed = parseVerify(fm.verify);
  return parsed.ok ? parsed.verify : { problem: parsed.problem };
}

/**
 * An agent's checks as its record keeps them (agent.json `verify`), settled at spawn: every
 * turn of the agent (follow-ups too) runs them. The reviewer is kept resolved, so an edited
 * definition file does not change what an agent's later turns are checked by.
 */
export interface AgentVerify {
  run?: string[];
  review?: { name: string; model?: string; prompt?: string };
  max_repairs: number;
  /** Seconds per check. */
  timeout: number;
}

/** Whether a value read back is a well-formed AgentVerify. */
export function isAgentVerify(value: unknown): value is AgentVerify {
  if (!isRecord(value)) return false;
  const review = value.review;
  return (
    (value.run === undefined || (Array.isArray(value.run) && value.run.every(isCommand))) &&
    (review === undefined || (isRecord(review) && isCommand(review.name))) &&
    typeof value.max_repairs === "number" &&
    typeof value.timeout === "number"
  );
}

/** One check in one line: `npm test: failed (exit 1, 2.1 s)`, `reviewer: passed (verdict pass, reused)`. */
export function describeCheck(check: VerificationCheck): string {
  const how =
    check.kind === "review"
      ? check.verdict
        ? `verdict ${check.verdict}`
        : "no verdict"
      : check.exit_code === undefined
        ? "ended before it finished"
        : `exit ${check.exit_code}`;
  const took = check.reused ? "reused" : `${(check.duration_ms / 1000).toFixed(1)} s`;
  return `${check.name}: ${checkPassed(check) ? "passed" : "failed"} (${how}, ${took})`;
}

/** A verification without its outputs: what a list shows of it. */
export function verificationSummary(verification: Verification): Verification {
  return { ...verification, checks: verification.checks.map((check) => ({ ...check, output_tail: "" })) };
}
