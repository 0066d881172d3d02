/**
 * The tree as one process sees it: this agent's direct children, their turns, the turn
 * slots and the mailbox. Every state change is written to the tree directory (the source
 * of truth shared with nested agents' processes) before anything is reported.
 */
import type { DialogSettingsV1 } from "../../contracts/dialogs.js";
import { TREE_FILES } from "../../contracts/layout.js";
import type { Notice } from "../../contracts/notice.js";
import type { AgentRecordV1, AgentStatus } from "../../contracts/tree.js";
import { emptyUsage, type Usage, type UsageTotals } from "../../contracts/usage.js";
import { type Clock, settledWithin, systemClock } from "../../lib/clock.js";
import { errorText } from "../../lib/values.js";
import type { Identity, TreeLimits } from "../config.js";
import { parentOf } from "../tree/paths.js";
import { describeDamage, type TreeDir } from "../tree/tree-dir.js";
import { subtreeUsage } from "../tree/usage-rollup.js";
import { type RunnerWait, runnerPool, TurnSlots } from "./capacity.js";
import type { ChildState, FaultStep, FollowupResult, RuntimeHooks, RuntimeOptions, StopReason } from "./child-state.js";
import { followupChild, messageChild } from "./delivery/child-requests.js";
import { DeliveryLog, deliverOnce, recordTaken } from "./delivery/deliveries.js";
import type { MessageDelivery } from "./delivery/live-messages.js";
import { Mailbox } from "./delivery/mailbox.js";
import { messageNotice, type StopOrderedBy } from "./delivery/notices.js";
import type { DialogDesk } from "./dialogs/dialogs.js";
import {
  awaitedByParent,
  childAwaited,
  isActive,
  type TurnEvent,
  type TurnKind,
  transition,
  turnCount,
} from "./lifecycle.js";
import { treeRunnerGate } from "./runner-slots.js";
import { closeAgent, interruptTurn, STOP_WAIT_MS, type StopContext } from "./stopping.js";
import { TreeWrites } from "./tree-writes.js";
import { type EffectContext, perform } from "./turn-effects.js";
import { gitWorktrees, type WorktreeOperations } from "./worktree-turns.js";
import { type TurnOperations, wrapperTurns } from "./wrapper/launcher.js";

export type { ChildState, FaultStep, FollowupResult, MessageDelivery, RuntimeHooks, RuntimeOptions, StopReason };

/** Whether a parent waiting on this child still waits (lifecycle's childAwaited). */
function stillAwaited(state: ChildState): boolean {
  return childAwaited(state.phase, state.record.followupQueued);
}

export class TreeRuntime implements StopContext, EffectContext {
  readonly children = new Map<string, ChildState>();
  /** Direct children whose record is damaged, with why: they are not loaded, and tools say so. */
  readonly damaged = new Map<string, string>();
  readonly mailbox: Mailbox;
  readonly clock: Clock;
  readonly slots: TurnSlots;
  readonly turns: TurnOperations;
  readonly worktrees: WorktreeOperations;
  private readonly hooks: RuntimeHooks;
  private closing = false;
  private readonly stopHearingDamage: () => void;
  /** This process's writes to the tree directory, each file's in order (tree-writes.ts). */
  private readonly writes: TreeWrites;
  /** Turns taking their slot whose wrapper may not have started yet: shutdown waits for them, then stops what they started. */
  private readonly launching = new Set<Promise<void>>();
  /** Which turn-end notices this agent was given and took, on disk (deliveries.ts). */
  readonly deliveries: DeliveryLog;
  /** Fault injection at each step of a delivery or a turn's start (tests): a hook that throws stops the process there. */
  readonly fault: ((step: FaultStep) => void) | undefined;
  /**
   * The process left with its turns detached (onExit `detach`): their ends belong to the next
   * root that takes the tree, so nothing here moves a turn on any more.
   */
  private detached = false;
  /**
   * The pid of the live process that drives this tree, when it is not this one (one owner
   * per tree): this process only reads the tree then — it starts, stops and waits on nothing.
   */
  readOnly: number | undefined;
  /** A child's own turn so far, summed from its session's answers (the extension feeds it; progress.ts says why). */
  readonly ownRunUsage: Usage;
  /** Set: every turn's meta.json asks for dialogs, and `dialogDesk` answers its children's (dialogs.ts). */
  dialogSettings: DialogSettingsV1 | undefined;
  dialogDesk: DialogDesk | undefined;

  constructor(
    readonly identity: Identity,
    readonly tree: TreeDir,
    readonly limits: TreeLimits,
    readonly cwd: string,
    options: RuntimeOptions = {},
  ) {
    this.hooks = options.hooks ?? {};
    this.clock = options.clock ?? systemClock;
    this.fault = options.fault;
    this.ownRunUsage = options.ownRunUsage ?? emptyUsage();
    this.deliveries = DeliveryLog.in(
      tree.agentDir(identity.self),
      TREE_FILES.deliveries,
      options.deliveryFiles,
      (line) => this.report(line),
    );
    this.writes = new TreeWrites(tree, identity.self);
    this.mailbox = new Mailbox(this.clock);
    this.turns = options.turns ?? wrapperTurns;
    this.worktrees = options.worktrees ?? gitWorktrees;
    this.slots = new TurnSlots(
      limits.maxActiveChildTurns,
      (queued) => this.writes.publishQueue(queued),
      options.runnerGate ?? treeRunnerGate(tree.root, { clock: this.clock, report: (line) => this.report(line) }),
    );
    this.stopHearingDamage = tree.onDamage((damage) => this.report(describeDamage(damage)));
  }

  /** Refuses what would start, stop or message a turn while another process drives the tree (one owner). */
  private assertDriver(): void {
    if (this.readOnly !== undefined)
      throw new Error(
        `pid ${this.readOnly} drives this agent tree; this pi only reads it (list_agents, get_agent_report, /agents)`,
      );
  }

  /** Shows the user one line (prefixed with the package's name). */
  report(line: string): void {
    const text = `pi-subagent-tree: ${line}`;
    if (this.hooks.problem) this.hooks.problem(text);
    else console.error(text);
  }

  /**
   * Resolves once every record and queue write this runtime has begun is on disk (or has
   * failed): nothing of this process writes to the tree directory after it, unless a new
   * turn starts. Never rejects.
   */
  async writesSettled(): Promise<void> {
    await this.writes.settled();
  }

  get self(): string {
    return this.identity.self;
  }

  async persist(state: ChildState): Promise<void> {
    const { record } = state;
    await this.writes.writeRecord(record);
    state.unsaved = false;
    this.hooks.recorded?.(record);
  }

  /**
   * persist, for writes nobody waits on (a turn's start and end): a failure is reported in
   * one line and returned, never thrown, and the record this process holds stays the newest.
   */
  async persistOrReport(state: ChildState, what: string): Promise<string | undefined> {
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

  /**
   * Moves a child's turn on by one event (lifecycle.ts decides) and carries out what that
   * makes this process do, in order. Effects that need no I/O run at once, so a stop frees
   * its slot and stops its wrapper without a pause in between.
   */
  async dispatch(state: ChildState, event: TurnEvent): Promise<void> {
    if (this.detached) return;
    const { phase, effects } = transition(state.phase, event);
    // A turn's notice reaches the mailbox just before it stops being awaited: wake the waits then
    // (they resume after the phase is set), or an all-wait holding it sees its group end late.
    if (awaitedByParent(state.phase) && !awaitedByParent(phase)) this.mailbox.wakeAll();
    state.phase = phase;
    for (const effect of effects) {
      const pending = perform(this, state, effect);
      if (pending) await pending;
    }
  }

  /** Queue the record's pending parts as its next turn; starts it when a slot is free. */
  async requestTurn(state: ChildState, kind: TurnKind): Promise<void> {
    this.assertDriver();
    const { record } = state;
    record.followupQueued = false;
    let launched: Promise<void> | undefined;
    // A queued turn is started by a slot's release, where nobody awaits it: the launch
    // reports its own failures, and this catch keeps a bug from becoming an unhandled rejection.
    const started = this.slots.request(
      record.path,
      () => {
        const launch = this.dispatch(state, { type: "slot_granted", kind, closing: this.closing }).catch(
          (err: unknown) => this.report(`the turn of ${record.path} failed to start: ${errorText(err)}`),
        );
        this.launching.add(launch);
        void launch.finally(() => this.launching.delete(launch));
        launched = launch;
      },
      runnerPool(record),
    );
    if (started) await launched;
    else await this.dispatch(state, { type: "queued" });
  }

  queuePosition(agentPath: string): number | undefined {
    return this.slots.position(agentPath);
  }

  /** When a queued turn waits because its runner is full across the tree: the runner and its slots in use. */
  runnerWait(agentPath: string): RunnerWait | undefined {
    return this.slots.runnerWait(agentPath);
  }

  /** Extra meta.json `env` for a turn that starts now: the hook's (the tree's budget left), else none. */
  async turnEnv(): Promise<Record<string, string>> {
    return (await this.hooks.turnEnv?.().catch(() => undefined)) ?? {};
  }

  /** The agent's usage plus its descendants' (undefined when the tree directory cannot be read). */
  async subtreeUsageOf(record: AgentRecordV1): Promise<UsageTotals | undefined> {
    return subtreeUsage(this.tree, record).catch(() => undefined);
  }

  notify(notice: Notice): void {
    this.mailbox.push(notice);
    this.hooks.noticed?.(notice);
  }

  /**
   * A turn's notice, given once across restarts: recorded as given (deliveries.ts) before it
   * reaches the mailbox; a notice of `key` given before (by any process of this agent) is not
   * given again. A record that cannot be written is reported, and the notice given all the
   * same: better once unrecorded than never.
   */
  async deliver(key: string, notice: Notice): Promise<void> {
    await deliverOnce(this.deliveries, key, notice, { fault: this.fault, report: (line) => this.report(line) }, () =>
      this.notify(notice),
    );
  }

  /**
   * The delivery keys of notices taken from the mailbox, for the details of the message that
   * hands them to pi (deliveries.ts): a restore finds there what pi held.
   */
  deliveryKeysOf(notices: readonly Notice[]): string[] {
    return notices.flatMap((notice) => this.deliveries.keyOf(notice) ?? []);
  }

  /** pi holds these notices durably (its session has the message): recorded as taken, never given again. */
  noticesHeld(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return Promise.resolve();
    return recordTaken(this.deliveries, keys, { fault: this.fault, report: (line) => this.report(line) });
  }

  /** Notices whose hand-over to pi failed: back at the head of the mailbox, offered again. */
  giveBack(notices: readonly Notice[]): void {
    this.mailbox.putBack(notices);
  }

  /** Moves messages that children posted to this agent's inbox into the mailbox. */
  async collectInbox(): Promise<void> {
    // The inbox is the owner's to drain.
    if (this.readOnly !== undefined) return;
    for (const notice of await this.tree.drainInbox(this.self)) this.notify(notice);
  }

  /** Whether any direct child has a turn running, starting, being recorded or queued. */
  hasActiveTurns(): boolean {
    for (const { phase } of this.children.values()) if (isActive(phase)) return true;
    return false;
  }

  /**
   * Whether any direct child's turn may still give this agent a notice: running, starting,
   * queued, or ended with its notice not given yet. A turn whose notice was given and is only
   * being recorded gives nothing more, so a wait has nobody to wait for.
   */
  hasAwaitedTurns(): boolean {
    for (const state of this.children.values()) if (stillAwaited(state)) return true;
    return false;
  }

  /**
   * Whether this direct child's turn has yet to end for a parent waiting on it: running,
   * queued, starting, or ended with its notice not in the mailbox yet.
   */
  turnUnderWay(agentPath: string): boolean {
    const state = this.children.get(agentPath);
    return state !== undefined && stillAwaited(state);
  }

  /** Direct children with a turn running and those queued for a slot, as turnCount counts them. */
  activeTurns(): { running: ChildState[]; queued: ChildState[] } {
    const running: ChildState[] = [];
    const queued: ChildState[] = [];
    for (const state of this.children.values()) {
      const count = turnCount(state.phase);
      if (count === "running") running.push(state);
      else if (count === "queued") queued.push(state);
    }
    return { running, queued };
  }

  /** followup_task: a new turn in the child's own conversation (child-requests.ts). */
  async followup(state: ChildState, text: string, admit?: () => Promise<void>): Promise<FollowupResult> {
    this.assertDriver();
    return followupChild(this, state, text, admit);
  }

  /** send_message to a child: live into a running turn, else queued for the next (child-requests.ts). */
  async queueMessage(state: ChildState, text: string): Promise<MessageDelivery> {
    this.assertDriver();
    return messageChild(this, state, text);
  }

  /**
   * interrupt_agent: stop the running turn or drop the queued one; the agent stays resumable
   * (stopping.ts). `orderedBy` "user": the person did it (/agents), and the notice says so.
   */
  async interrupt(state: ChildState, orderedBy: StopOrderedBy = "parent"): Promise<AgentStatus> {
    this.assertDriver();
    return interruptTurn(this, state, orderedBy);
  }

  /** close_agent: stop the agent and its whole subtree; every agent in it becomes shutdown (stopping.ts). */
  async close(state: ChildState, orderedBy: StopOrderedBy = "parent"): Promise<AgentStatus> {
    this.assertDriver();
    return closeAgent(this, state, orderedBy);
  }

  /**
   * session_shutdown. `stop`: stop every running or queued turn. Finished agents keep their
   * status: a parent that ends is no verdict on its children's work, and a restarted parent
   * resumes them. `detach` (onExit): running turns go on to their own end and queued ones
   * stay queued, for the next root on this session to take back; turns being started or
   * recorded are let finish that first.
   */
  async shutdown(how: "stop" | "detach" = "stop"): Promise<void> {
    this.closing = true;
    // Queued runner turns are no longer retried from here: they stay queued for the next root.
    this.slots.close();
    // A turn whose wrapper is starting right now is running once its launch is done: stopped below like the others.
    await Promise.all([...this.launching].map((launch) => settledWithin(launch, STOP_WAIT_MS, this.clock)));
    if (how === "detach") await this.detach();
    else await this.stopAll();
    // Records a failed write left newer in memory than on disk: one more try before leaving.
    for (const state of this.children.values())
      if (state.unsaved) await this.persistOrReport(state, "the latest state");
    this.stopHearingDamage();
    await this.writesSettled();
    this.mailbox.wakeAll();
  }

  /** Whether this process left its turns running for the next root (shutdown `detach`). */
  get isDetached(): boolean {
    return this.detached;
  }

  private async detach(): Promise<void> {
    const settling = [...this.children.values()].filter((state) => state.phase.name === "settling");
    await Promise.all(
      settling.map((state) => settledWithin(state.settled ?? Promise.resolve(), STOP_WAIT_MS, this.clock)),
    );
    this.detached = true;
  }

  private async stopAll(): Promise<void> {
    const waits: Array<Promise<unknown>> = [];
    for (const state of this.children.values()) {
      const running = state.phase.name === "running";
      waits.push(this.dispatch(state, { type: "stop_asked", by: "shutdown" }));
      // A held timer: pi exits as soon as nothing holds its event loop, and the wrapper's
      // handle does not, so an unref'd wait would let pi exit before the turn is recorded.
      if (running) waits.push(settledWithin(state.settled, STOP_WAIT_MS, this.clock));
    }
    await Promise.all(waits);
  }

  /** send_message to the parent: a `message` notice dropped in the parent's inbox. */
  async messageParent(parent: string, text: string): Promise<void> {
    await this.tree.postToInbox(parent, messageNotice(this.self, await this.tree.readRecord(this.self), text));
  }

  parentPath(): string | undefined {
    return this.identity.isRoot ? undefined : parentOf(this.self);
  }
}
