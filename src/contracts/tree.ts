/**
 * The agent tree's shared language, version 1: what the extension stores in the tree
 * directory (read by every process of the tree) and what its tools return.
 */

import type { ThinkingLevel } from "./meta.js";
import type { RunStatus } from "./result.js";
import type { Usage, UsageTotals } from "./usage.js";

export const AGENT_STATUSES = ["pending_init", "running", "completed", "errored", "aborted", "interrupted", "shutdown"] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];
export type Health = "healthy" | "unhealthy";

/** What a notice reports: the status a turn ended with, or a message from a child. */
export type NoticeType = "completed" | "errored" | "aborted" | "interrupted" | "shutdown" | "message";

/** The root's canonical path; children are `/root/<task_name>`, `/root/<a>/<b>`, … */
export const ROOT_PATH = "/root";

export const LIMITS = {
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
