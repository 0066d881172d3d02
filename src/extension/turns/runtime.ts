/**
 * The tree as one process sees it: this agent's direct children, their turns, the turn
 * slots and the mailbox. Every state change is written to the tree directory (the source
 * of truth shared with nested agents' processes) before anything is reported.
 */
import type { ResultV1 } from "../../contracts/result.js";
import type { AgentRecordV1, AgentStatus, Notice, NoticeWorktree, PendingPart } from "../../contracts/tree.js";
import type { UsageTotals } from "../../contracts/usage.js";
import { addUsage } from "../../contracts/usage.js";
import { errorText } from "../../lib/values.js";
import { settledWithin } from "../../lib/clock.js";
import type { Identity, TreeLimits } from "../config.js";
import { parentOf } from "../tree/paths.js";
import { describeDamage, type TreeDir } from "../tree/tree-dir.js";
import { subtreeUsage } from "../tree/usage-rollup.js";
import { TurnSlots } from "./capacity.js";
import type { ChildState, FollowupResult, RuntimeHooks, RuntimeOptions, StopReason } from "./child-state.js";
import { childInstructions, partEnvelope, turnPrompt } from "./envelope.js";
import { type RunningTurn, type TurnOperations, wrapperTurns } from "./launcher.js";
import {
  dropConfirmed,
  liveRuns,
  type MessageDelivery,
  nextMessageId,
  pendingMessageCount,
  queuedPartCount,
} from "./live-messages.js";
import { Mailbox } from "./mailbox.js";
import { messageNotice, turnEndNotice } from "./notices.js";
import { saveReport } from "./reports.js";
import { closeAgent, interruptTurn, STOP_WAIT_MS, type StopContext } from "./stopping.js";
import { applyTurnEnd, lostResultReason, type TurnEndFacts } from "./turn-end.js";
import { finishWorktreeTurn, gitWorktrees, type WorktreeOperations } from "./worktree-turns.js";

export type { ChildState, FollowupResult, MessageDelivery, RuntimeHooks, RuntimeOptions, StopReason };

export class TreeRuntime implements StopContext {
  readonly children = new Map<string, ChildState>();
  /** Direct children whose record is damaged, with why: they are not loaded, and tools say so. */
  readonly damaged = new Map<string, string>();
  readonly mailbox = new Mailbox();
  readonly slots: TurnSlots;
  readonly turns: TurnOperations;
  readonly worktrees: WorktreeOperations;
  private readonly hooks: RuntimeHooks;
  private closing = false;
  private readonly stopHearingDamage: () => void;
  /** Record writes of each agent, one after the other: the last write on disk is the latest state. */
  private readonly writes = new Map<string, Promise<void>>();
  /** Queue files are written one at a time, in order, so the last one on disk is the latest queue. */
  private queuePublished: Promise<void> = Promise.resolve();
  /** The queue the next scheduled write will publish; undefined when no write is waiting. */
  private queueToPublish: string[] | undefined;
  /** Turns taking their slot whose wrapper may not have started yet: shutdown waits for them, then stops what they started. */
  private readonly launching = new Set<Promise<void>>();

  constructor(
    readonly identity: Identity,
    readonly tree: TreeDir,
    readonly limits: TreeLimits,
    readonly cwd: string,
    options: RuntimeOptions = {},
  ) {
    this.hooks = options.hooks ?? {};
    this.turns = options.turns ?? wrapperTurns;
    this.worktrees = options.worktrees ?? gitWorktrees;
    this.slots = new TurnSlots(limits.maxActiveChildTurns, (queued) => this.publishQueue(queued));
    this.stopHearingDamage = tree.onDamage((damage) => this.report(describeDamage(damage)));
  }

  /** Shows the user one line (prefixed with the package's name). */
  report(line: string): void {
    const text = `pi-subagent-tree: ${line}`;
    if (this.hooks.problem) this.hooks.problem(text);
    else console.error(text);
  }

  /**
   * Lets list_agents in any process of the tree show where this agent's queued children stand.
   * Only the latest queue matters, so at most one write is in flight and one waits, and the
   * waiting one takes the newest queue: 30 turns requested at once cost a few durable writes,
   * not 60 that could still be landing long after the last turn ended.
   */
  private publishQueue(queued: string[]): void {
    const scheduled = this.queueToPublish !== undefined;
    this.queueToPublish = [...queued];
    if (scheduled) return;
    this.queuePublished = this.queuePublished
      .then(() => {
        const latest = this.queueToPublish ?? [];
        this.queueToPublish = undefined;
        return this.tree.writeQueue(this.self, latest);
      })
      .catch(() => undefined);
  }

  /**
   * Resolves once every record and queue write this runtime has begun is on disk (or has
   * failed): nothing of this process writes to the tree directory after it, unless a new
   * turn starts. Never rejects.
   */
  async writesSettled(): Promise<void> {
    const begun = () => [this.queuePublished, ...this.writes.values()];
    let awaited: Array<Promise<void>> = [];
    // A write that begins while these are awaited is awaited too.
    for (let writes = begun(); writes.some((write) => !awaited.includes(write)); writes = begun()) {
      awaited = writes;
      await Promise.all(writes.map((write) => write.catch(() => undefined)));
    }
  }

  get self(): string {
    return this.identity.self;
  }

  async persist(state: ChildState): Promise<void> {
    const { record } = state;
    // Chained: two writes in flight could land in either order; each writes the record as it is then.
    const write = (this.writes.get(record.path) ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => this.tree.writeRecord(record));
    this.writes.set(record.path, write);
    await write;
    state.unsaved = false;
    this.hooks.recorded?.(record);
  }

  /**
   * persist, for writes nobody waits on (a turn's start and end): a failure is reported in
   * one line and returned, never thrown, and the record this process holds stays the newest.
   */
  private async persistOrReport(state: ChildState, what: string): Promise<string | undefined> {
    try {
      await this.persist(state);
      return undefined;
    } catch (err) {
      state.unsaved = true;
      const failure = errorText(err);
      this.report(`could not record ${what} of ${state.record.path}: ${failure}`);
      return failure;
    }
  }

  /** Queue the record's pending parts as its next turn; starts it when a slot is free. */
  async requestTurn(state: ChildState, kind: "spawn" | "followup"): Promise<void> {
    const { record } = state;
    record.followupQueued = false;
    let launched: Promise<void> | undefined;
    // A queued turn is started by a slot's release, where nobody awaits it: launch reports
    // its own failures, and this catch keeps a bug from becoming an unhandled rejection.
    const started = this.slots.request(record.path, () => {
      const launch = this.launch(state, kind).catch((err: unknown) =>
        this.report(`the turn of ${record.path} failed to start: ${errorText(err)}`),
      );
      this.launching.add(launch);
      void launch.finally(() => this.launching.delete(launch));
      launched = launch;
    });
    if (started) await launched;
    else {
      record.status = "pending_init";
      await this.persist(state);
    }
  }

  queuePosition(agentPath: string): number | undefined {
    return this.slots.position(agentPath);
  }

  private async launch(state: ChildState, kind: "spawn" | "followup"): Promise<void> {
    const { record } = state;
    if (this.closing) return this.slots.release(record.path);
    const parts = [...record.undelivered, ...record.inbox];
    const forkTranscript = record.forkTranscript;
    record.undelivered = [];
    record.inbox = [];
    record.forkTranscript = undefined;
    // A follow-up that joined this turn while it was queued is delivered now, not again later.
    record.followupQueued = false;
    let turn: RunningTurn;
    try {
      const place = record.worktree ? await this.worktrees.turnCwd(record.worktree) : { cwd: this.cwd };
      turn = await this.turns.start({
        record,
        agentDir: this.tree.agentDir(record.path),
        treeDir: this.tree.root,
        prompt: turnPrompt(parts, record.taskName, forkTranscript),
        kind,
        cwd: place.cwd,
        ...(place.readyPath && { cwdReadyPath: place.readyPath }),
        instructions: childInstructions(record, record.activeTools.includes("spawn_agent")),
        timeoutMs: this.limits.turnTimeoutMs,
      });
    } catch (err) {
      // Nothing ran: keep the parts for the next turn and report the failure like a turn's.
      // It has no answer and no turn number, so no report is stored: the previous turn's stays.
      record.undelivered = parts;
      state.settling = true;
      state.owesNotice = true;
      this.slots.release(record.path);
      try {
        await this.settle(state, { failure: `could not start the turn: ${errorText(err)}` });
      } finally {
        state.settling = false;
      }
      return;
    }
    state.running = { ...turn, parts };
    state.stopping = undefined;
    record.runningParts = parts;
    record.runs.push(turn.runName);
    record.status = "running";
    // The wrapper is at work whether or not this write succeeds: failing the call would drop
    // an agent that runs. Its end is recorded (or reported) when it comes.
    await this.persistOrReport(state, "the start of a turn");
    state.settled = turn.finished
      .then((result) => this.finishTurn(state, turn.runName, result))
      .catch((err: unknown) => this.lostTurn(state, turn.runName, err));
  }

  private async finishTurn(state: ChildState, runName: string, result: ResultV1 | undefined): Promise<void> {
    const { record } = state;
    if (state.running && state.running.runName !== runName) {
      // A stopped turn that took longer than STOP_WAIT_MS to end, after a newer turn started:
      // it only adds its usage; the newer turn owns the status, the slot and the notice.
      if (result) addUsage(record.usage, result.usage);
      await this.persistOrReport(state, "a stopped turn's usage");
      return;
    }
    const running = state.running;
    const stopping = state.stopping;
    // Until its notice is in the mailbox the turn still counts as active, or a wait_agent
    // running meanwhile would answer `idle` with the notice about to arrive.
    state.settling = true;
    state.owesNotice = !stopping;
    state.running = undefined;
    state.stopping = undefined;
    record.runningParts = undefined;
    this.slots.release(record.path);
    if (result) addUsage(record.usage, result.usage);
    // pi writes a session only once an assistant message exists: a stopped turn that got
    // none never reached it, so its prompt goes first next time (never lost), and so do the
    // live messages it read.
    const leftNoTrace = running !== undefined && (!result || result.turns === 0) && stopping !== undefined;
    if (leftNoTrace) record.undelivered = [...running.parts, ...record.undelivered];
    // The wrapper has exited: what its run confirmed is final. The live messages it did not
    // read stay in the inbox, in their place, for the next turn.
    else if (running && liveRuns(record).includes(runName)) {
      dropConfirmed(record, runName, await this.turns.deliveredIds(running.runDir).catch(() => new Set<string>()));
    }
    record.notifiedRun = runName;
    try {
      const lost = lostResultReason(running?.howExited?.(), running?.damagedResult?.());
      // Whatever the outcome, an isolated turn's work is committed (a follow-up's start waits for it).
      const worktree = await finishWorktreeTurn(
        this.worktrees,
        record,
        result?.status ?? (stopping ? "interrupted" : "failed"),
      );
      await this.settle(state, {
        result,
        failure: result || stopping ? undefined : lost,
        stopping,
        turn: record.runs.length,
        worktree,
      });
    } finally {
      state.settling = false;
    }
  }

  /**
   * Records a finished turn and gives the parent its one notice. `turn` is the number of the
   * turn whose answer is stored; a turn that never started has none.
   */
  private async settle(
    state: ChildState,
    end: TurnEndFacts & { turn?: number; worktree?: NoticeWorktree | undefined },
  ): Promise<void> {
    const { record } = state;
    const { stopping } = end;
    const { outcome, reason, text } = applyTurnEnd(record, end);
    const report =
      end.turn === undefined
        ? undefined
        : await saveReport(this.tree.agentDir(record.path), {
            runId: end.result?.runId ?? "none",
            turn: end.turn,
            outcome,
            text,
          }).catch(() => undefined);
    const unrecorded = await this.persistOrReport(state, `the end of a turn (${outcome})`);
    if (stopping) return;
    // The parent still learns how the turn ended, and that the tree directory does not say
    // so: errored, with the write's failure as the reason. The report text is in the notice.
    if (unrecorded) {
      record.status = "errored";
      record.lastTurnStatus = "errored";
    }
    // Messages a child sent up during its turn precede the notice of that turn's end.
    await this.collectInbox().catch((err: unknown) =>
      this.report(`could not read the inbox of ${this.self}: ${errorText(err)}`),
    );
    const subtreeUsage = await this.subtreeUsageOf(record);
    this.notify(
      turnEndNotice(record, {
        outcome,
        reason,
        text,
        reportStored: report !== undefined,
        subtreeUsage,
        unrecorded,
        worktree: end.worktree,
      }),
    );
    state.owesNotice = false;
    if (record.followupQueued) {
      await this.requestTurn(state, "followup").catch((err: unknown) =>
        this.report(`could not queue the follow-up of ${record.path}: ${errorText(err)}`),
      );
    }
  }

  /**
   * The last guard of a turn's end, for what recording it did not foresee: the slot is freed,
   * the wait released and the notice that is owed given, so a parent never waits forever.
   */
  private lostTurn(state: ChildState, runName: string, err: unknown): void {
    const { record } = state;
    const failure = errorText(err);
    this.report(`recording the end of ${record.path}'s turn ${runName} failed: ${failure}`);
    if (!state.running || state.running.runName === runName) {
      state.running = undefined;
      this.slots.release(record.path);
    }
    state.settling = false;
    if (!state.owesNotice) return;
    state.owesNotice = false;
    record.status = "errored";
    this.notify(
      turnEndNotice(record, {
        outcome: "failed",
        reason: `recording the end of the turn failed: ${failure}`,
        text: "",
        reportStored: false,
      }),
    );
  }

  /** The agent's usage plus its descendants' (undefined when the tree directory cannot be read). */
  async subtreeUsageOf(record: AgentRecordV1): Promise<UsageTotals | undefined> {
    return subtreeUsage(this.tree, record).catch(() => undefined);
  }

  notify(notice: Notice): void {
    this.mailbox.push(notice);
    this.hooks.noticed?.(notice);
  }

  /** Moves messages that children posted to this agent's inbox into the mailbox. */
  async collectInbox(): Promise<void> {
    for (const notice of await this.tree.drainInbox(this.self)) this.notify(notice);
  }

  /** Whether any direct child has a turn running, starting, being recorded or queued. */
  hasActiveTurns(): boolean {
    for (const { running, settling, record } of this.children.values()) {
      if (running || settling || this.slots.isActive(record.path) || this.slots.position(record.path)) return true;
    }
    return false;
  }

  /** Direct children with a turn running (or being recorded) and those queued for a slot. */
  activeTurns(): { running: ChildState[]; queued: ChildState[] } {
    const running: ChildState[] = [];
    const queued: ChildState[] = [];
    for (const state of this.children.values()) {
      if (state.running || state.settling) running.push(state);
      else if (this.slots.position(state.record.path) !== undefined) queued.push(state);
    }
    return { running, queued };
  }

  /**
   * followup_task: a new turn in the child's own conversation. Behind a running or queued
   * turn it waits for that turn's end; else it starts now (or queues for a slot). `admit`
   * runs once the child is known to take follow-ups, before anything changes, and refuses by
   * throwing (the tree's budget).
   */
  async followup(state: ChildState, text: string, admit?: () => Promise<void>): Promise<FollowupResult> {
    const { record } = state;
    if (record.status === "shutdown") throw new Error(`${record.path} is shut down; it takes no follow-up`);
    await admit?.();
    record.inbox.push({ kind: "FOLLOWUP_TASK", from: this.self, text, sentAt: new Date().toISOString() });
    const busy = state.running !== undefined || this.queuePosition(record.path) !== undefined;
    if (busy) record.followupQueued = true;
    await this.persist(state);
    if (!busy) await this.requestTurn(state, "followup");
    const queuePosition = this.queuePosition(record.path);
    return {
      status: record.status,
      queuedBehindRunningTurn: busy,
      ...(queuePosition !== undefined && { queuePosition }),
    };
  }

  /**
   * send_message to a child: live into a running turn's inbox, else queued for the next turn.
   * It is in the record first and leaves it only once the child's conversation has it
   * (finishTurn, restore), so a crash of either process loses nothing (live-messages.ts).
   */
  async queueMessage(state: ChildState, text: string): Promise<MessageDelivery> {
    const { record } = state;
    if (record.status === "shutdown") throw new Error(`${record.path} is shut down; it takes no messages`);
    const { id, seq } = nextMessageId(record);
    // A turn being stopped reads nothing more: the message waits for the next one.
    const running = state.running && !state.stopping ? state.running : undefined;
    const part: PendingPart = {
      kind: "MESSAGE",
      from: this.self,
      text,
      sentAt: new Date().toISOString(),
      id,
      ...(running && { liveRun: running.runName }),
    };
    record.inbox.push(part);
    await this.persist(state);
    let delivered: MessageDelivery["delivered"] = "queued";
    if (running) {
      try {
        await this.turns.postLive(running.runDir, seq, { id, text: partEnvelope(part, record.taskName) });
        delivered = "live";
      } catch {
        // The run's inbox cannot be written: the message waits for the next turn instead.
        delete part.liveRun;
        await this.persist(state);
      }
    }
    return {
      delivered,
      messageId: id,
      pendingMessages: pendingMessageCount(record),
      queuedMessages: queuedPartCount(record, state.running?.runName),
      status: record.status,
    };
  }

  /** interrupt_agent: stop the running turn or drop the queued one; the agent stays resumable (stopping.ts). */
  interrupt(state: ChildState): Promise<AgentStatus> {
    return interruptTurn(this, state);
  }

  /** close_agent: stop the agent and its whole subtree; every agent in it becomes shutdown (stopping.ts). */
  close(state: ChildState): Promise<AgentStatus> {
    return closeAgent(this, state);
  }

  /**
   * session_shutdown: stop every running or queued turn. Finished agents keep their status:
   * a parent that ends is no verdict on its children's work, and a restarted parent resumes them.
   */
  async shutdown(): Promise<void> {
    this.closing = true;
    // A turn whose wrapper is starting right now is running once its launch is done: stopped below like the others.
    await Promise.all([...this.launching].map((launch) => settledWithin(launch, STOP_WAIT_MS)));
    const waits: Array<Promise<unknown>> = [];
    for (const state of this.children.values()) {
      const queued = this.slots.dequeue(state.record.path);
      if (state.running) {
        state.stopping = "shutdown";
        state.running.stop();
        // A held timer: pi exits as soon as nothing holds its event loop, and the wrapper's
        // handle does not, so an unref'd wait would let pi exit before the turn is recorded.
        waits.push(settledWithin(state.settled, STOP_WAIT_MS));
      } else if (queued) {
        state.record.status = "interrupted";
        waits.push(this.persistOrReport(state, "a queued turn's stop"));
      }
    }
    await Promise.all(waits);
    // Records a failed write left newer in memory than on disk: one more try before leaving.
    for (const state of this.children.values())
      if (state.unsaved) await this.persistOrReport(state, "the latest state");
    this.stopHearingDamage();
    await this.writesSettled();
    this.mailbox.wakeAll();
  }

  /** send_message to the parent: a `message` notice dropped in the parent's inbox. */
  async messageParent(parent: string, text: string): Promise<void> {
    await this.tree.postToInbox(parent, messageNotice(this.self, await this.tree.readRecord(this.self), text));
  }

  parentPath(): string | undefined {
    return this.identity.isRoot ? undefined : parentOf(this.self);
  }
}
