/**
 * Every notice a parent's mailbox can hold, built in one place: the end of a child's turn
 * (also when a restarted parent settles a turn its previous process started), an interrupt,
 * a shutdown, and a message a child sends up. Each is bounded to LIMITS.maxMessageChars, so
 * no notice can flood the parent's context. Pure functions, no I/O.
 */
import type { RunStatus } from "../../contracts/result.js";
import type { AgentRecordV1, Notice, NoticeType, NoticeWorktree } from "../../contracts/tree.js";
import { type UsageTotals, usageTotals } from "../../contracts/usage.js";
import { headChars } from "../../lib/text.js";
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
  /** An isolated agent's worktree after the turn's commit. */
  worktree?: NoticeWorktree | undefined;
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
    worktree?: NoticeWorktree | undefined;
  },
): Notice {
  const text = extra.text ?? "";
  const usage = usageTotals(record.usage);
  // subtree_usage only when descendants spent something: for a leaf it would repeat `usage`
  // and take ~90 chars from the report's share of the notice.
  const rolled = extra.subtreeUsage;
  const descendantsSpent = rolled !== undefined && (rolled.total_tokens !== usage.total_tokens || rolled.cost !== usage.cost);
  const failed = extra.outcome !== undefined && extra.outcome !== "completed";
  return boundNotice({
    agent_name: record.path,
    nickname: record.nickname,
    type,
    agent_status: record.status,
    health: record.health,
    model: record.model,
    reasoning: record.reasoning,
    ...(failed && { outcome: extra.outcome }),
    ...(failed && extra.reason && { reason: extra.reason }),
    usage,
    ...(descendantsSpent && { subtree_usage: rolled }),
    report_chars: text.length,
    report_stored: extra.reportStored ?? false,
    report: text,
    ...(extra.worktree && { worktree: extra.worktree }),
  });
}

/** A finished turn: its type is the status the turn left the agent in. */
export function turnEndNotice(record: AgentRecordV1, end: TurnEnd): Notice {
  return agentNotice(record, record.status as NoticeType, end);
}

/** interrupt_agent or close_agent stopped a running or queued turn. */
export function stopNotice(
  record: AgentRecordV1,
  by: "interrupt" | "close",
  subtreeUsage: UsageTotals | undefined,
  worktree?: NoticeWorktree | undefined,
): Notice {
  return by === "interrupt"
    ? agentNotice(record, "interrupted", { outcome: "interrupted", reason: "interrupted by its parent", subtreeUsage, worktree })
    : agentNotice(record, "shutdown", { outcome: "interrupted", reason: "closed by its parent", subtreeUsage, worktree });
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

/** One line for the user (an interactive root shows notices that arrive while it is idle). */
export function describeNotice(notice: Notice): string {
  const head = notice.type === "message" ? `message from ${notice.agent_name}` : `${notice.agent_name} (${notice.nickname}) ${notice.type}`;
  const report = notice.report.length > DESCRIPTION_REPORT_CHARS ? `${headChars(notice.report, DESCRIPTION_REPORT_CHARS)}…` : notice.report;
  return report ? `${head}: ${report}` : head;
}
