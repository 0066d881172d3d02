/**
 * What TreeRuntime holds per direct child and what it is configured with: the shapes the
 * runtime, the tools and the tests share (runtime.ts re-exports them).
 */

import type { Notice } from "../../contracts/notice.js";
import type { AgentRecordV1, AgentStatus } from "../../contracts/tree.js";
import type { Usage } from "../../contracts/usage.js";
import type { Clock } from "../../lib/clock.js";
import type { DeliveryFiles, DeliveryStep } from "./delivery/deliveries.js";
import { IDLE, liveTurnOf, type StopReason, type TurnPhase } from "./lifecycle.js";
import type { RunnerGate } from "./runner-slots.js";
import type { WorktreeOperations } from "./worktree-turns.js";
import type { RunningTurn, TurnOperations } from "./wrapper/launcher.js";

export type { StopReason };

/**
 * Where a test may kill the process (PI_SUBAGENTS_TEST_KILL_AT): a step of a notice's
 * delivery, or of a turn's start — `run_recorded` (the record names the run, nothing made
 * yet) and `wrapper_spawned` (the wrapper runs, the phase not moved on).
 */
export type FaultStep = DeliveryStep | "run_recorded" | "wrapper_spawned";

/** What the runtime holds per direct child: its record and where its turn stands. */
export interface ChildState {
  record: AgentRecordV1;
  /** Where the child's turn stands; every change goes through lifecycle.ts `transition`. */
  phase: TurnPhase;
  /** Resolves once the turn last started is fully recorded (record written, notice given). */
  settled?: Promise<void>;
  /** The last write of the record failed (a full disk): this process holds a newer one. */
  unsaved?: boolean;
}

/** A child with no turn under way (idle), as spawn and restore add it. */
export function childState(record: AgentRecordV1): ChildState {
  return { record, phase: IDLE };
}

/** The running wrapper of the child's turn, if one runs (being stopped included). */
export function runningTurn(state: ChildState): RunningTurn | undefined {
  return liveTurnOf(state.phase)?.turn;
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
  /** Extra environment for each turn's meta.json `env` as it starts (what is left of the tree's budget). */
  turnEnv?(): Promise<Record<string, string>>;
}

export interface RuntimeOptions {
  hooks?: RuntimeHooks;
  /** How turns run (default: one `subagent-wrapper` process per turn). */
  turns?: TurnOperations;
  /** How an isolated agent's worktree is used, committed and removed (default: git). */
  worktrees?: WorktreeOperations;
  /** The delivery record's I/O (tests inject failures; default: atomic, fsynced files). */
  deliveryFiles?: DeliveryFiles;
  /** Fault injection at each step of a notice's delivery or a turn's start (tests): a hook that throws stops the process there. */
  fault?: (step: FaultStep) => void;
  /** The time the runtime reads and waits on: its mailbox's waits and its stop waits (default: the system's). */
  clock?: Clock;
  /** The runners' tree-wide slots (default: leases in the tree directory, runner-slots.ts). */
  runnerGate?: RunnerGate;
  /** A child's own turn so far, counted from before the runtime started (default: none yet). */
  ownRunUsage?: Usage;
}

/** What followup_task tells the model. */
export interface FollowupResult {
  status: AgentStatus;
  /** The child's turn was running or queued: the follow-up starts when that turn ends. */
  queuedBehindRunningTurn: boolean;
  queuePosition?: number;
}
