/**
 * The agent tree's records, version 1: what the extension stores in the tree directory for
 * each agent (read by every process of the tree) and how a record read back is checked.
 * An agent's canonical path is agent-paths.ts; a notice to its parent, notice.ts.
 */

import { errorValue } from "../lib/text.js";
import { isRecord } from "../lib/values.js";
import { isCanonicalPath, ROOT_PATH, splitPath } from "./agent-paths.js";
import { FieldChecks, isString, kindOf, type RecordCheck } from "./fields.js";
import { RUN_NAME_PATTERN } from "./layout.js";
import { parseLimits, type TurnLimits } from "./limits.js";
import { THINKING_LEVELS, type ThinkingLevel } from "./meta.js";
import { RUN_STATUSES, type RunStatus } from "./result.js";
import { type ResolvedRunner, resolvedRunnerProblems } from "./runners.js";
import type { Usage } from "./usage.js";
import { type AgentVerify, isAgentVerify, isVerification, type Verification } from "./verify.js";

export type { RecordCheck };

export const AGENT_STATUSES = [
  "pending_init",
  "running",
  "completed",
  "errored",
  "aborted",
  "interrupted",
  "shutdown",
] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];
export type Health = "healthy" | "unhealthy";

/** Where a child works: the parent's cwd (`none`), or a git worktree of its own (`worktree`). */
export const ISOLATION_MODES = ["none", "worktree"] as const;
export type IsolationMode = (typeof ISOLATION_MODES)[number];

export const LIMITS = {
  /** A task_name (one path segment): well under a file name's 255 bytes, and readable in a list. */
  taskNameChars: 64,
  /** Turns of an agent's direct children running at once; more are queued. */
  maxActiveChildTurns: 3,
  /** Levels below the root an agent may sit at (`/root/a/b/c` is 3). */
  maxDepth: 3,
  /** Spawns per tree, finished agents included. */
  maxSpawns: 64,
  /** Wall-clock limit of one child turn. */
  turnTimeoutMs: 30 * 60 * 1000,
  /** One notice, as compact JSON (`JSON.stringify(notice).length`). */
  maxMessageChars: 8000,
  /** Each side field of a notice (reason, model, …). */
  sideFieldChars: 600,
  /** Thinking kept when whole messages are relayed or forked. */
  thinkingChars: 2000,
  /** A stored report (one turn's final answer). */
  reportChars: 65_536,
  /** Reports kept per agent, newest first. */
  reportsKept: 16,
  /** One page of get_agent_report. */
  reportPageChars: 6000,
  /** list_agents result. */
  listAgentsBytes: 50 * 1024,
  waitDefaultMs: 30_000,
  waitMaxMs: 3_600_000,
  noticesPerWait: 5,
  /** Paths a notice's `worktree.changed_files` lists at most (then `changed_files_total` says how many). */
  changedFilesListed: 50,
  /** Each path in `worktree.changed_files` (its end is kept: the file name says most). */
  changedFilePathChars: 200,
  /** A notice's whole `worktree` field, as compact JSON; the report gets what is left. */
  noticeWorktreeChars: 3000,
} as const;

export type EnvelopeKind = "NEW_TASK" | "MESSAGE" | "FOLLOWUP_TASK";

/** A piece of an agent's next turn, kept (and persisted) until that turn reaches its session. */
export interface PendingPart {
  kind: EnvelopeKind;
  /** Canonical path of the sender. */
  from: string;
  text: string;
  sentAt: string;
  /** A `MESSAGE`'s id (`msg-<n>`, unique in the agent): its envelope shows it, and the run that read it records it. */
  id?: string;
  /**
   * A `MESSAGE` written into a running turn's live inbox: that run's directory name. The part
   * stays in `inbox` until that run's events.jsonl confirms it (`message_delivered`); one the
   * run ended without reading goes with the next turn, like a queued one.
   */
  liveRun?: string;
}

/**
 * The git worktree of an agent spawned with `isolation: "worktree"`, as its record keeps it.
 * Every field is required but `setupPaths`; an agent without isolation has no `worktree`.
 */
export interface AgentWorktreeV1 {
  /** The worktree's top folder: `<tree dir>/worktrees/<path segments below /root joined by "-">`. */
  path: string;
  /** Its branch: `subagent/<tree tag>-<the same segments>`. */
  branch: string;
  /** The full sha the child started from: its parent's working state when it was spawned. */
  baseCommit: string;
  /**
   * The repository's common git directory (a real path), where worktree commands run: it
   * outlives every working tree of the repository, the parent's own worktree included.
   */
  gitDir: string;
  /** The child's cwd below the worktree's top, `/`-separated, "" for the top: the parent's cwd below its own. */
  subdir: string;
  /** Untracked paths (below the top) the setup command created, e.g. a node_modules link: no turn commits them. */
  setupPaths?: string[];
  /** The branch after the latest turn's commit, as that turn's notice told it; absent before a turn has ended. */
  head?: WorktreeHeadV1;
}

/** What an isolated agent's branch holds against its base after a turn: kept so a person sees what the model saw. */
export interface WorktreeHeadV1 {
  /** The branch's tip (the base commit while nothing was committed). */
  commit: string;
  /** Paths changed since the base, sorted, at most LIMITS.changedFilesListed. */
  changedFiles: string[];
  /** How many paths changed, when changedFiles does not list them all. */
  changedFilesTotal?: number;
  insertions: number;
  deletions: number;
}

/** One agent as stored in the tree directory (`agents/<path>/agent.json`). */
export interface AgentRecordV1 {
  version: 1;
  kind: "agent";
  /** Canonical path, e.g. `/root/mid/leaf`: a coordination id, not a file path. */
  path: string;
  parent: string;
  taskName: string;
  nickname: string;
  /** `default` for a plain child. */
  role: string;
  /** Where the role comes from: an agent-definition file (`user`, `project`); absent = built-in. */
  agentSource?: "builtin" | "user" | "project";
  /** Effective `provider/id`. */
  model: string;
  /** Effective reasoning level. */
  reasoning: ThinkingLevel;
  activeTools: string[];
  extensions: string[];
  status: AgentStatus;
  health: Health;
  /** The wrapper status of the last finished turn (kept when the agent is shut down). */
  lastOutcome?: RunStatus;
  lastReason?: string;
  /** The status the last turn ended with, before any `close_agent`. */
  lastTurnStatus?: AgentStatus;
  sessionPath: string;
  /** Run directories, oldest first, relative to the agent's folder. */
  runs: string[];
  usage: Usage;
  /** Order of spawn in the tree (1, 2, …). */
  spawnSeq: number;
  spawnedAt: string;
  updatedAt: string;
  /**
   * send_message and followup_task texts not yet in the child's conversation, in the order
   * sent: queued ones wait for the next turn; live ones (`liveRun`) were written to the
   * running turn and wait for its confirmation.
   */
  inbox: PendingPart[];
  /** The number of the last message id given (`msg-<n>`); absent before the first. */
  messageSeq?: number;
  /** A followup_task is waiting: the next turn starts when the running one ends. */
  followupQueued: boolean;
  /** The parts of an interrupted turn that never reached the session; they go first next time. */
  undelivered: PendingPart[];
  /** The parts of the turn now running (restore keeps them when the turn left no trace). */
  runningParts?: PendingPart[];
  /** Fork history to put at the head of the first prompt (no assistant message to continue). */
  forkTranscript?: string;
  /** Run directory whose result has been turned into a notice (restore never repeats it). */
  notifiedRun?: string;
  /** Set when the agent runs in its own git worktree (`isolation: "worktree"`). */
  worktree?: AgentWorktreeV1;
  /** Where the agent's turns run when not here: the runner, resolved at spawn. */
  runner?: ResolvedRunner;
  /** Per-turn limits from spawn_agent, the role and the settings, merged at spawn: every turn (follow-ups too) runs with them. */
  limits?: TurnLimits;
  /**
   * The models its turns move to, in order, when `model` fails with a provider error,
   * each with the reasoning level nearest to `reasoning` that it supports.
   */
  fallbacks?: FallbackModel[];
  /** The checks every turn of the agent runs after it completes, settled at spawn. */
  verify?: AgentVerify;
  /** How the checks of its last finished turn ended (result.json `verification`). */
  lastVerification?: Verification;
}

/** A fallback model of an agent, and the reasoning level it runs at. */
export interface FallbackModel {
  /** `provider/id`. */
  model: string;
  reasoning: ThinkingLevel;
}

/** Maps a wrapper outcome to the agent status it leaves. */
export function statusForOutcome(outcome: RunStatus): AgentStatus {
  switch (outcome) {
    case "completed":
      return "completed";
    case "aborted":
      return "aborted";
    case "interrupted":
      return "interrupted";
    default:
      return "errored";
  }
}

/** Unhealthy only when the child could not produce an answer at all. */
export function healthForOutcome(outcome: RunStatus): Health {
  return outcome === "failed" || outcome === "timed_out" ? "unhealthy" : "healthy";
}

// --- reading records back -----------------------------------------------------------------

const ENVELOPE_KINDS: readonly EnvelopeKind[] = ["NEW_TASK", "MESSAGE", "FOLLOWUP_TASK"];
export const HEALTHS: readonly Health[] = ["healthy", "unhealthy"];
const AGENT_SOURCES = ["builtin", "user", "project"] as const;

const isPart = (value: unknown): boolean =>
  isRecord(value) &&
  ENVELOPE_KINDS.includes(value.kind as EnvelopeKind) &&
  isString(value.from) &&
  isString(value.text) &&
  isString(value.sentAt);
const isRunName = (value: unknown): boolean => isString(value) && RUN_NAME_PATTERN.test(value);
const isAbsolute = (value: unknown): boolean => isString(value) && value.startsWith("/");
/** Where an isolated agent works: the extension runs git and starts turns there, so every part must be sound. */
const isWorktree = (value: unknown): boolean =>
  isRecord(value) &&
  isAbsolute(value.path) &&
  isString(value.branch) &&
  value.branch.startsWith("subagent/") &&
  isString(value.baseCommit) &&
  /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(value.baseCommit) &&
  isAbsolute(value.gitDir) &&
  isString(value.subdir) &&
  !value.subdir.startsWith("/") &&
  !value.subdir.split("/").includes("..") &&
  (value.setupPaths === undefined || (Array.isArray(value.setupPaths) && value.setupPaths.every(isString)));

/**
 * An agent.json read back from disk, checked against AgentRecordV1: every required field with
 * its type, the optional fields this version knows with theirs, and the identity fields
 * against each other (and against the folder it was read from, `expectedPath`), because the
 * extension builds folder names from them. Unknown fields are kept as they are.
 */
export function checkAgentRecord(raw: unknown, expectedPath?: string): RecordCheck<AgentRecordV1> {
  if (!isRecord(raw)) return { ok: false, problem: `it holds ${kindOf(raw)}, not a JSON object` };
  if (raw.version !== 1) {
    return {
      ok: false,
      problem:
        raw.version === undefined ? 'field "version" is missing' : `version ${errorValue(raw.version, 40)} is not 1`,
    };
  }
  if (raw.kind !== "agent")
    return { ok: false, problem: `field "kind" must be "agent", not ${errorValue(raw.kind, 40)}` };
  const agentPath = raw.path;
  if (!isString(agentPath) || agentPath === ROOT_PATH || !isCanonicalPath(agentPath)) {
    return {
      ok: false,
      problem: `field "path" must be a canonical agent path below /root, not ${errorValue(agentPath, 80)}`,
    };
  }
  if (expectedPath !== undefined && agentPath !== expectedPath) {
    return {
      ok: false,
      problem: `its path ${errorValue(agentPath, 80)} is not the path of its folder (${expectedPath})`,
    };
  }
  const { parent, name } = splitPath(agentPath);
  const fields = new FieldChecks(raw)
    .string("nickname")
    .string("role")
    .oneOf("agentSource", AGENT_SOURCES, false)
    .string("model")
    .oneOf("reasoning", THINKING_LEVELS)
    .list("activeTools", isString, "a list of strings")
    .list("extensions", isString, "a list of strings")
    .oneOf("status", AGENT_STATUSES)
    .oneOf("health", HEALTHS)
    .oneOf("lastOutcome", RUN_STATUSES, false)
    .string("lastReason", false)
    .oneOf("lastTurnStatus", AGENT_STATUSES, false)
    .string("sessionPath")
    .list("runs", isRunName, "a list of run names (0001-spawn, …)")
    .usage("usage")
    .count("spawnSeq")
    .string("spawnedAt")
    .string("updatedAt")
    .list("inbox", isPart, "a list of pending messages")
    .boolean("followupQueued")
    .list("undelivered", isPart, "a list of pending messages")
    .list("runningParts", isPart, "a list of pending messages", false)
    .string("forkTranscript", false)
    .string("notifiedRun", false)
    .check(
      "worktree",
      false,
      isWorktree,
      "a worktree (absolute path, subagent/ branch, base commit sha, absolute gitDir, relative subdir)",
    )
    .check(
      "limits",
      false,
      (value) => parseLimits(value).problems.length === 0,
      "limits (positive numbers of known keys)",
    )
    .list("fallbacks", isFallbackModel, "a list of {model, reasoning}", false)
    .check("runner", false, (value) => resolvedRunnerProblems(value, "runner").length === 0, "a runner definition")
    .check("verify", false, isAgentVerify, "checks {run?, review?, max_repairs, timeout}")
    .check("lastVerification", false, isVerification, "a verification {status, repairs, checks}");
  if (raw.parent !== parent)
    fields.problems.unshift(
      `field "parent" must be ${errorValue(parent, 80)}, the parent of its path, not ${errorValue(raw.parent, 80)}`,
    );
  if (raw.taskName !== name)
    fields.problems.unshift(
      `field "taskName" must be ${errorValue(name, 80)}, the last segment of its path, not ${errorValue(raw.taskName, 80)}`,
    );
  const problem = fields.summary();
  return problem ? { ok: false, problem } : { ok: true, record: raw as unknown as AgentRecordV1 };
}

function isFallbackModel(value: unknown): boolean {
  return isRecord(value) && isString(value.model) && THINKING_LEVELS.includes(value.reasoning as ThinkingLevel);
}
