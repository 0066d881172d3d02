/**
 * Every notice a parent's mailbox can hold, built in one place: the end of a child's turn
 * (also when a restarted parent settles a turn its previous process started), an interrupt,
 * a shutdown, and a message a child sends up. Each is bounded to LIMITS.maxMessageChars, so
 * no notice can flood the parent's context. Pure functions, no I/O.
 */

import { branchFactsText } from "../../../contracts/bring.js";
import type { Notice, NoticeType, NoticeWorktree } from "../../../contracts/notice.js";
import type { LimitReport, RunStatus } from "../../../contracts/result.js";
import { runnerSummary } from "../../../contracts/runners.js";
import type { AgentRecordV1 } from "../../../contracts/tree.js";
import { type UsageTotals, usageTotals } from "../../../contracts/usage.js";
import { checkPassed, describeVerification, type Verification } from "../../../contracts/verify.js";
import { headChars, tailChars } from "../../../lib/text.js";
import type { TurnModelReport } from "../fallback-turns.js";
import { boundNotice } from "./bounds.js";

/** How a turn ended, as its notice tells it. */
export interface TurnEnd {
  outcome: RunStatus;
  reason?: string | undefined;
  /** The turn's final answer ("" when it gave none). */
  text: string;
  /** Whether the full answer is stored for get_agent_report. */
  reportStored: boolean;
  /** The agent's usage plus its descendants' (undefined when the tree directory could not be read). */
  subtreeUsage?: UsageTotals | undefined;
  /** Why the turn's end could not be written to the tree directory (a full disk), when it could not. */
  unrecorded?: string | undefined;
  /** An isolated agent's worktree after the turn's commit. */
  worktree?: NoticeWorktree | undefined;
  /** The limit the turn met (result.json `limit`): its report is a wrap-up. */
  limit?: LimitReport | undefined;
  /** The model that finished the turn and those that failed it, when a fallback model ran (fallback-turns.ts). */
  models?: TurnModelReport | undefined;
  /** How the turn's checks ended (result.json `verification`). */
  verification?: Verification | undefined;
}

/** How much of a failed check's output a notice carries (result.json and inspect keep 4 000 characters). */
export const NOTICE_CHECK_OUTPUT_CHARS = 600;

/**
 * A notice's verification: a passed check's output left out, a failed one's cut to its end,
 * so the checks never crowd out the report within the notice's bound.
 */
export function noticeVerification(verification: Verification): Verification {
  return {
    ...verification,
    checks: verification.checks.map((check) => ({
      ...check,
      output_tail: checkPassed(check) ? "" : tailChars(check.output_tail, NOTICE_CHECK_OUTPUT_CHARS),
    })),
  };
}

function agentNotice(
  record: AgentRecordV1,
  type: NoticeType,
  extra: {
    outcome?: RunStatus;
    reason?: string | undefined;
    text?: string;
    reportStored?: boolean;
    subtreeUsage?: UsageTotals | undefined;
    /** Show outcome and reason even for a completed turn. */
    forceOutcome?: boolean;
    worktree?: NoticeWorktree | undefined;
    limit?: LimitReport | undefined;
    models?: TurnModelReport | undefined;
    verification?: Verification | undefined;
  },
): Notice {
  const text = extra.text ?? "";
  const usage = usageTotals(record.usage);
  // subtree_usage only when descendants spent something: for a leaf it would repeat `usage`
  // and take ~90 chars from the report's share of the notice.
  const rolled = extra.subtreeUsage;
  const descendantsSpent =
    rolled !== undefined && (rolled.total_tokens !== usage.total_tokens || rolled.cost !== usage.cost);
  const failed = extra.outcome !== undefined && (extra.outcome !== "completed" || extra.forceOutcome === true);
  // A completed turn whose checks still fail says so first: its status is its own, its work is not done.
  const verification = extra.verification;
  const unverified =
    !failed && verification?.status === "failed" ? `completed — ${describeVerification(verification)}` : undefined;
  return boundNotice({
    agent_name: record.path,
    nickname: record.nickname,
    type,
    agent_status: record.status,
    ...(unverified && { reason: unverified }),
    ...(verification && { verification: noticeVerification(verification) }),
    health: record.health,
    model: extra.models?.model ?? record.model,
    reasoning: extra.models?.reasoning ?? record.reasoning,
    ...(extra.models && extra.models.attempts.length > 0 && { attempts: extra.models.attempts }),
    ...(failed && { outcome: extra.outcome }),
    ...(failed && extra.reason && { reason: extra.reason }),
    usage,
    ...(descendantsSpent && { subtree_usage: rolled }),
    report_chars: text.length,
    report_stored: extra.reportStored ?? false,
    report: text,
    ...(extra.worktree && { worktree: extra.worktree }),
    ...(extra.limit && { limit: extra.limit }),
    ...(record.runner && { runner: runnerSummary(record.runner) }),
  });
}

/**
 * A finished turn: its type is the status the turn left the agent in. One whose end could not
 * be recorded is `errored` whatever it did, with the write's failure in its reason and the
 * wrapper's outcome kept, so the parent gets the answer and knows the tree directory lacks it.
 */
export function turnEndNotice(record: AgentRecordV1, end: TurnEnd): Notice {
  if (end.unrecorded === undefined) return agentNotice(record, record.status as NoticeType, end);
  const unrecorded = `the turn ended ${end.outcome}, but its record could not be written: ${end.unrecorded}`;
  return agentNotice(record, "errored", {
    ...end,
    reason: end.reason ? `${unrecorded}; ${end.reason}` : unrecorded,
    forceOutcome: true,
  });
}

/** Who ordered a stop: the parent's model (a tool) or the person at the terminal (`/agents`). */
export type StopOrderedBy = "parent" | "user";

/** The reason a stop's notice gives, as the parent's model reads it. */
export const STOP_REASONS = {
  interrupt: { parent: "interrupted by its parent", user: "interrupted by the user" },
  close: { parent: "closed by its parent", user: "closed by the user" },
} as const;

/** interrupt_agent or close_agent (or the person, through /agents) stopped a running or queued turn. */
export function stopNotice(
  record: AgentRecordV1,
  by: "interrupt" | "close",
  subtreeUsage: UsageTotals | undefined,
  worktree?: NoticeWorktree | undefined,
  orderedBy: StopOrderedBy = "parent",
): Notice {
  return agentNotice(record, by === "interrupt" ? "interrupted" : "shutdown", {
    outcome: "interrupted",
    reason: STOP_REASONS[by][orderedBy],
    subtreeUsage,
    worktree,
  });
}

/**
 * send_message from a child to its parent: the text is the report. `sender` is the child's
 * own record when it can be read (a child's process does not hold it), for nickname and model.
 */
export function messageNotice(from: string, sender: AgentRecordV1 | undefined, text: string): Notice {
  return boundNotice({
    agent_name: from,
    nickname: sender?.nickname ?? from,
    type: "message",
    agent_status: "running",
    health: sender?.health ?? "healthy",
    model: sender?.model ?? "",
    reasoning: sender?.reasoning ?? "",
    report_chars: text.length,
    report_stored: false,
    report: text,
  });
}

/** How many chars of the report a one-line description shows. */
const DESCRIPTION_REPORT_CHARS = 200;
/** How many chars of the reason a one-line description shows. */
const DESCRIPTION_REASON_CHARS = 160;

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/**
 * What the person is shown of an isolated child's branch — the facts the model gets: the
 * branch, base and head commits, the changed files, and the command that brings the work in.
 */
export function describeWorktree(worktree: NoticeWorktree): string {
  const parts = [`branch ${worktree.branch}`, branchFactsText(worktree)];
  if (worktree.merge_hint) parts.push(`bring it in: ${worktree.merge_hint}`);
  if (worktree.error) parts.push(oneLine(worktree.error));
  return parts.join(" · ");
}

/** One line for the user: the notice's own description, then its worktree's facts when it carries one. */
export function describeNotice(notice: Notice): string {
  const worktree = notice.worktree;
  const text = describeNoticeOnly(notice);
  return worktree && typeof worktree.branch === "string" ? `${text} · ${describeWorktree(worktree)}` : text;
}

/**
 * One line for the user: who, how the turn ended (and why, when it did not complete), the
 * head of the report. Shown for every notice that reaches an interactive root.
 */
function describeNoticeOnly(notice: Notice): string {
  const who = `${notice.agent_name} (${notice.nickname})`;
  // A child's message or question carries no turn's end: no outcome, no reason.
  const said = notice.type === "message" || notice.type === "question";
  let head = said ? `${notice.type} from ${notice.agent_name}` : `${who} ${notice.type}`;
  if (!said && notice.outcome && notice.outcome !== notice.type) head += ` (${notice.outcome})`;
  if (notice.limit) head += ` [wrap-up: ${notice.limit.name} ${notice.limit.used}/${notice.limit.value}]`;
  const unverified = notice.verification?.status === "failed" && notice.type === "completed";
  if (notice.verification) head += unverified ? " — " : " (";
  if (notice.verification) head += `${describeVerification(notice.verification)}${unverified ? "" : ")"}`;
  const reason = notice.reason && !said && !unverified ? oneLine(notice.reason) : "";
  if (reason)
    head += `: ${reason.length > DESCRIPTION_REASON_CHARS ? `${headChars(reason, DESCRIPTION_REASON_CHARS)}…` : reason}`;
  const text = oneLine(notice.report);
  const report = text.length > DESCRIPTION_REPORT_CHARS ? `${headChars(text, DESCRIPTION_REPORT_CHARS)}…` : text;
  if (!report) return head;
  return reason ? `${head} — ${report}` : `${head}: ${report}`;
}
