/**
 * interrupt_agent and close_agent: how a direct child's turn is stopped and recorded. A
 * queued turn is dropped, a running one stopped and its slot freed at once; the parent gets
 * one notice; a follow-up cannot start while the stopped pi may still write its session.
 */
import fs from "node:fs";
import path from "node:path";
import { TREE_FILES } from "../../contracts/layout.js";
import type { Notice } from "../../contracts/notice.js";
import type { AgentRecordV1, AgentStatus } from "../../contracts/tree.js";
import type { UsageTotals } from "../../contracts/usage.js";
import { type Clock, settledWithin } from "../../lib/clock.js";
import type { TreeDir } from "../tree/tree-dir.js";
import type { TurnSlots } from "./capacity.js";
import { type ChildState, runningTurn } from "./child-state.js";
import { type StopOrderedBy, stopNotice } from "./delivery/notices.js";
import type { TurnEvent } from "./lifecycle.js";
import { finishWorktreeTurn, removeWorktrees, type WorktreeOperations } from "./worktree-turns.js";
import type { RunningTurn } from "./wrapper/launcher.js";

/** How long close/shutdown wait for a stopped wrapper (SIGTERM, SIGKILL after 3 s, write-out). */
export const STOP_WAIT_MS = 8000;

/** What stopping a turn needs of the runtime (TreeRuntime is one). */
export interface StopContext {
  readonly slots: TurnSlots;
  readonly clock: Clock;
  readonly tree: TreeDir;
  readonly worktrees: WorktreeOperations;
  persist(state: ChildState): Promise<void>;
  dispatch(state: ChildState, event: TurnEvent): Promise<void>;
  notify(notice: Notice): void;
  subtreeUsageOf(record: AgentRecordV1): Promise<UsageTotals | undefined>;
}

type StopBy = "interrupt" | "close";

/** What the stop of one turn found, for the notice and the wait that follow. */
interface Stopped {
  previous: AgentStatus;
  queued: boolean;
  running: RunningTurn | undefined;
  subtreeUsage: UsageTotals | undefined;
}

/** interrupt_agent: stop the running turn or drop the queued one; the agent stays resumable. */
export async function interruptTurn(
  ctx: StopContext,
  state: ChildState,
  orderedBy: StopOrderedBy = "parent",
): Promise<AgentStatus> {
  const { record } = state;
  const stopped = await stopTurn(ctx, state, "interrupt");
  if (!stopped.running && !stopped.queued) return stopped.previous;
  record.status = "interrupted";
  record.lastTurnStatus = "interrupted";
  await recordStop(ctx, state, { by: "interrupt", orderedBy }, stopped);
  return stopped.previous;
}

/** close_agent: stop the agent and its whole subtree; every agent in it becomes shutdown. */
export async function closeAgent(
  ctx: StopContext,
  state: ChildState,
  orderedBy: StopOrderedBy = "parent",
): Promise<AgentStatus> {
  const { record } = state;
  const stopped = await stopTurn(ctx, state, "close");
  record.lastTurnStatus ??= record.status;
  record.status = "shutdown";
  await recordStop(ctx, state, { by: "close", orderedBy }, stopped);
  // The child's own process stopped its children as it ended; their records become shutdown too.
  const descendants = await ctx.tree.subtree(record.path);
  for (const descendant of descendants) {
    if (descendant.status === "shutdown") continue;
    descendant.lastTurnStatus ??= descendant.status;
    descendant.status = "shutdown";
    await ctx.tree.writeRecord(descendant);
  }
  await removeWorktrees(ctx.worktrees, [record, ...descendants]);
  // What a runner kept of their workspaces between turns (meta.json `runnerWorkspacePath`) goes with them.
  for (const agent of [record, ...descendants]) {
    const kept = path.join(ctx.tree.agentDir(agent.path), TREE_FILES.runnerWorkspace);
    await fs.promises.rm(kept, { recursive: true, force: true }).catch(() => undefined);
  }
  return stopped.previous;
}

/** How interrupt and close begin: drop a queued turn, stop a running one and free its slot at once. */
async function stopTurn(ctx: StopContext, state: ChildState, by: StopBy): Promise<Stopped> {
  const { record } = state;
  // Read first: from here to its notice the stop runs without a pause.
  const subtreeUsage = await ctx.subtreeUsageOf(record);
  const previous = record.status;
  const queued = state.phase.name === "queued";
  const running = state.phase.name === "running" ? runningTurn(state) : undefined;
  // Nothing in it waits on I/O: the slot is free and the wrapper asked to stop before this returns.
  await ctx.dispatch(state, { type: "stop_asked", by });
  return { previous, queued, running, subtreeUsage };
}

/** How interrupt and close end: the record written, the one notice given, the stopped turn recorded. */
async function recordStop(
  ctx: StopContext,
  state: ChildState,
  { by, orderedBy }: { by: StopBy; orderedBy: StopOrderedBy },
  stopped: Stopped,
): Promise<void> {
  state.record.followupQueued = false;
  await ctx.persist(state);
  // An isolated agent's notice tells its branch after the stopped turn's commit, so it waits for that turn first.
  const isolated = state.record.worktree !== undefined;
  if (isolated && stopped.running) await settledWithin(state.settled, STOP_WAIT_MS, ctx.clock);
  if (stopped.running || stopped.queued) {
    const worktree = isolated
      ? await finishWorktreeTurn(
          ctx.worktrees,
          state.record,
          `stopped by ${orderedBy === "user" ? "the user (/agents)" : by === "close" ? "close_agent" : "interrupt_agent"}`,
        )
      : undefined;
    // The record keeps the branch's head the commit gave it (for /agents and inspect); should
    // the write fail, the notice still goes, and the next write carries the head.
    if (worktree)
      await ctx.persist(state).catch(() => {
        state.unsaved = true;
      });
    ctx.notify(stopNotice(state.record, by, stopped.subtreeUsage, worktree, orderedBy));
  }
  // A follow-up must not start while the stopped pi may still write the shared session,
  // and it must see what the stopped turn left undelivered. The wait's timer holds the event
  // loop (the wrapper's handle does not), so pi cannot exit in the middle of the tool.
  if (!isolated && stopped.running) await settledWithin(state.settled, STOP_WAIT_MS, ctx.clock);
  // A turn ends when its result.json is in place, a moment before its wrapper exits: a stop
  // also waits for the wrapper, so nothing of the stopped turn runs once interrupt or close returns.
  if (stopped.running?.exited) await settledWithin(stopped.running.exited, STOP_WAIT_MS, ctx.clock);
}
