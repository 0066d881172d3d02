/**
 * A notice: one entry of a parent's mailbox (a child's turn ended, or a child sent a message),
 * as `wait_agent` returns it, and how one read back from an inbox file is checked.
 */

import { isRecord } from "../lib/values.js";
import { isCanonicalPath } from "./agent-paths.js";
import { FieldChecks, isString, kindOf, type RecordCheck } from "./fields.js";
import type { LimitReport } from "./result.js";
import type { RunnerSummary } from "./runners.js";
import { AGENT_STATUSES, type AgentStatus, HEALTHS, type Health } from "./tree.js";
import type { UsageTotals } from "./usage.js";
import type { Verification } from "./verify.js";

/** What a notice reports: the status a turn ended with, or a message from a child. */
export type NoticeType = "completed" | "errored" | "aborted" | "interrupted" | "shutdown" | "message" | "question";

/** A failed model of a turn, as its notice names it (result.json `attempts`, shortened). */
export interface NoticeAttempt {
  model: string;
  error_class: string;
  message: string;
}

/**
 * What a notice says about an isolated agent's worktree after a turn: the turn's work is
 * committed on `branch` (one commit per turn that changed something), and the counts are of
 * the whole branch against `base_commit`. The parent brings the work in itself.
 */
export interface NoticeWorktree {
  path: string;
  branch: string;
  base_commit: string;
  /** The branch's tip after this turn's commit (`base_commit` while nothing was committed). */
  head_commit: string;
  /** Paths changed between base_commit and head_commit, sorted, at most LIMITS.changedFilesListed. */
  changed_files: string[];
  /** How many paths changed, when changed_files does not list them all. */
  changed_files_total?: number;
  insertions: number;
  deletions: number;
  /** `<subagent-wrapper> bring <base_commit> <head_commit>`: the child's changes into the parent's tree, its uncommitted work kept (when there are any). */
  merge_hint?: string;
  /** Why this turn's changes could not be committed (they are still in the worktree). */
  error?: string;
}

/** One entry of a parent's mailbox, as `wait_agent` returns it. */
export interface Notice {
  agent_name: string;
  nickname: string;
  type: NoticeType;
  agent_status: AgentStatus;
  health: Health;
  model: string;
  reasoning: string;
  /** The wrapper's status and why, when the turn did not complete. */
  outcome?: string;
  reason?: string;
  usage?: UsageTotals;
  /** The agent's usage plus that of every agent below it (its whole subtree). */
  subtree_usage?: UsageTotals;
  /** Length of the full answer; `get_agent_report` pages it when stored. */
  report_chars: number;
  report_stored: boolean;
  report: string;
  /** The child's worktree after its turn, for an agent spawned with `isolation: "worktree"`. */
  worktree?: NoticeWorktree;
  /** Where the child ran, when not here. */
  runner?: RunnerSummary;
  /** The turn met a limit and was wrapped up: its report is partial work, not finished work. */
  limit?: LimitReport;
  /** The models that failed this turn with a provider error before `model` finished it. */
  attempts?: NoticeAttempt[];
  /** A `question` notice: a child's extension asks; send_message `answer` names this id. */
  question_id?: string;
  /** A `question` notice: pi's dialog kind (`select`, `confirm`, `input`, `editor`). */
  method?: string;
  /** A `question` notice: the extension's question. */
  title?: string;
  /** A `question` notice of a `select`: the answers to choose from. */
  options?: string[];
  /** How the turn's checks ended (the agent's `verify`); `agent_status` stays the turn's own. */
  verification?: Verification;
}

const NOTICE_TYPES: readonly NoticeType[] = [
  "completed",
  "errored",
  "aborted",
  "interrupted",
  "shutdown",
  "message",
  "question",
];

/** A notice read back from an inbox file (a child's send_message), checked against Notice; unknown fields kept. */
export function checkNotice(raw: unknown): RecordCheck<Notice> {
  if (!isRecord(raw)) return { ok: false, problem: `it holds ${kindOf(raw)}, not a JSON object` };
  const fields = new FieldChecks(raw)
    .string("agent_name")
    .string("nickname")
    .oneOf("type", NOTICE_TYPES)
    .oneOf("agent_status", AGENT_STATUSES)
    .oneOf("health", HEALTHS)
    .string("model")
    .string("reasoning")
    .count("report_chars")
    .boolean("report_stored")
    .string("report");
  if (isString(raw.agent_name) && !isCanonicalPath(raw.agent_name))
    fields.problems.unshift(`field "agent_name" is not a canonical agent path`);
  const problem = fields.summary();
  return problem ? { ok: false, problem } : { ok: true, record: raw as unknown as Notice };
}
