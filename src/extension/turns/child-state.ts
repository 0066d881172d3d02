/**
 * What TreeRuntime holds per direct child and what it is configured with: the shapes the
 * runtime, the tools and the tests share (runtime.ts re-exports them).
 */
import type { AgentRecordV1, AgentStatus, Notice, PendingPart } from "../../contracts/tree.js";
import type { RunningTurn, TurnOperations } from "./launcher.js";
import type { WorktreeOperations } from "./worktree-turns.js";

/** Why this process stopped a running turn. */
export type StopReason = "interrupt" | "close" | "shutdown";

export interface ChildState {
  record: AgentRecordV1;
  running?: RunningTurn & { parts: PendingPart[] };
  /** Resolves once the running turn is fully recorded (record written, notice given). */
  settled?: Promise<void>;
  /** Why this process stopped the running turn, if it did. */
  stopping?: StopReason;
  /** A turn has ended and is being recorded: its notice is not in the mailbox yet. */
  settling?: boolean;
  /** The turn that ended owes its parent a notice that has not been given yet. */
  owesNotice?: boolean;
  /** The last write of the record failed (a full disk): this process holds a newer one. */
  unsaved?: boolean;
}

export interface RuntimeHooks {
  /** Called after every write of a direct child's record (the root records it in its session). */
  recorded?(record: AgentRecordV1): void;
  /** Called for every notice that reaches this process's mailbox. */
  noticed?(notice: Notice): void;
  /**
   * A line the user should see (a record that could not be written, damage in the tree
   * directory); default: stderr. pi's UI shows it in interactive and RPC mode.
   */
  problem?(line: string): void;
}

export interface RuntimeOptions {
  hooks?: RuntimeHooks;
  /** How turns run (default: one `subagent-wrapper` process per turn). */
  turns?: TurnOperations;
  /** How an isolated agent's worktree is used, committed and removed (default: git). */
  worktrees?: WorktreeOperations;
}

/** What followup_task tells the model. */
export interface FollowupResult {
  status: AgentStatus;
  /** The child's turn was running or queued: the follow-up starts when that turn ends. */
  queuedBehindRunningTurn: boolean;
  queuePosition?: number;
}
