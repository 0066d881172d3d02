/**
 * The tree as one process sees it: this agent's direct children, their turns, the turn
 * slots and the mailbox. Every state change is written to the tree directory (the source
 * of truth shared with nested agents' processes) before anything is reported.
 */
import type { ResultV1, RunStatus } from "../../contracts/result.js";
import type { AgentRecordV1, AgentStatus, Notice, NoticeType, PendingPart } from "../../contracts/tree.js";
import { healthForOutcome, statusForOutcome } from "../../contracts/tree.js";
import type { UsageTotals } from "../../contracts/usage.js";
import { addUsage, usageTotals } from "../../contracts/usage.js";
import { errorText } from "../../lib/values.js";
import type { Identity, TreeLimits } from "../config.js";
import { parentOf } from "../tree/paths.js";
import type { TreeDir } from "../tree/tree-dir.js";
import { subtreeUsage } from "../tree/usage-rollup.js";
import { boundNotice } from "./bounds.js";
import { TurnSlots } from "./capacity.js";
import { childInstructions, turnPrompt } from "./envelope.js";
import { type RunningTurn, startTurn } from "./launcher.js";
import { Mailbox } from "./mailbox.js";
import { saveReport } from "./reports.js";

/** How long close/shutdown wait for a stopped wrapper (SIGTERM, SIGKILL after 3 s, write-out). */
const STOP_WAIT_MS = 8000;

export interface ChildState {
  record: AgentRecordV1;
  running?: RunningTurn & { parts: PendingPart[] };
  /** Resolves once the running turn is fully recorded (record written, notice given). */
  settled?: Promise<void>;
  /** Why this process stopped the running turn, if it did. */
  stopping?: "interrupt" | "close" | "shutdown";
  /** A turn has ended and is being recorded: its notice is not in the mailbox yet. */
  settling?: boolean;
}

export interface RuntimeHooks {
  /** Called after every write of a direct child's record (the root records it in its session). */
  recorded?(record: AgentRecordV1): void;
  /** Called for every notice that reaches this process's mailbox. */
  noticed?(notice: Notice): void;
}

export class TreeRuntime {
  readonly children = new Map<string, ChildState>();
  readonly mailbox = new Mailbox();
  readonly slots: TurnSlots;
  private closing = false;
  /** Queue files are written one at a time, in order, so the last one on disk is the latest queue. */
  private queuePublished: Promise<void> = Promise.resolve();

  constructor(
    readonly identity: Identity,
    readonly tree: TreeDir,
    readonly limits: TreeLimits,
    readonly cwd: string,
    private readonly hooks: RuntimeHooks = {},
  ) {
    this.slots = new TurnSlots(limits.maxActiveChildTurns, (queued) => this.publishQueue(queued));
  }

  /** Lets list_agents in any process of the tree show where this agent's queued children stand. */
  private publishQueue(queued: string[]): void {
    this.queuePublished = this.queuePublished.then(() => this.tree.writeQueue(this.self, queued)).catch(() => undefined);
  }

  get self(): string {
    return this.identity.self;
  }

  async persist(state: ChildState): Promise<void> {
    await this.tree.writeRecord(state.record);
    this.hooks.recorded?.(state.record);
  }

  /** Queue the record's pending parts as its next turn; starts it when a slot is free. */
  async requestTurn(state: ChildState, kind: "spawn" | "followup"): Promise<void> {
    const { record } = state;
    record.followupQueued = false;
    let launched: Promise<void> | undefined;
    const started = this.slots.request(record.path, () => {
      launched = this.launch(state, kind);
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
    try {
      const turn = await startTurn({
        record,
        agentDir: this.tree.agentDir(record.path),
        treeDir: this.tree.root,
        prompt: turnPrompt(parts, record.taskName, forkTranscript),
        kind,
        cwd: this.cwd,
        instructions: childInstructions(record, record.activeTools.includes("spawn_agent")),
        timeoutMs: this.limits.turnTimeoutMs,
      });
      state.running = { ...turn, parts };
      state.stopping = undefined;
      record.runningParts = parts;
      record.runs.push(turn.runName);
      record.status = "running";
      await this.persist(state);
      state.settled = turn.finished.then((result) => this.finishTurn(state, turn.runName, result));
    } catch (err) {
      // Nothing ran: keep the parts for the next turn and report the failure like a turn's.
      record.undelivered = parts;
      state.settling = true;
      this.slots.release(record.path);
      try {
        await this.settle(state, undefined, `could not start the turn: ${errorText(err)}`);
      } finally {
        state.settling = false;
      }
    }
  }

  private async finishTurn(state: ChildState, runName: string, result: ResultV1 | undefined): Promise<void> {
    const { record } = state;
    if (state.running && state.running.runName !== runName) {
      // A stopped turn that took longer than STOP_WAIT_MS to end, after a newer turn started:
      // it only adds its usage; the newer turn owns the status, the slot and the notice.
      if (result) addUsage(record.usage, result.usage);
      await this.persist(state);
      return;
    }
    const running = state.running;
    const stopping = state.stopping;
    // Until its notice is in the mailbox the turn still counts as active, or a wait_agent
    // running meanwhile would answer `idle` with the notice about to arrive.
    state.settling = true;
    state.running = undefined;
    state.stopping = undefined;
    record.runningParts = undefined;
    this.slots.release(record.path);
    if (result) addUsage(record.usage, result.usage);
    // pi writes a session only once an assistant message exists: a stopped turn that got
    // none never reached it, so its prompt goes first next time (never lost).
    if (running && (!result || result.turns === 0) && stopping) record.undelivered = [...running.parts, ...record.undelivered];
    record.notifiedRun = runName;
    try {
      // Not stopped by this process and no result: the wrapper was killed (SIGKILL, OOM) or
      // crashed. That is an error of the turn, never an interruption.
      const lost = `wrapper exited (${running?.howExited?.() ?? "unknown"}) without writing result.json`;
      await this.settle(state, result, result || stopping ? undefined : lost, stopping);
    } finally {
      state.settling = false;
    }
  }

  /** Records a finished turn and gives the parent its one notice. */
  private async settle(state: ChildState, result: ResultV1 | undefined, failure?: string, stopping?: ChildState["stopping"]): Promise<void> {
    const { record } = state;
    // A wrapper stopped in its first milliseconds dies before it can write a result (and
    // before it starts pi): for a turn this process stopped, that is an interruption.
    const outcome: RunStatus = result?.status ?? (stopping ? "interrupted" : "failed");
    const reason = failure ?? result?.errorMessage ?? result?.abortReason;
    record.lastOutcome = outcome;
    record.lastReason = reason;
    const text = result?.finalText ?? "";
    const report = await saveReport(this.tree.agentDir(record.path), {
      runId: result?.runId ?? "none",
      turn: record.runs.length,
      outcome,
      text,
    }).catch(() => undefined);
    if (stopping === "close") {
      record.lastTurnStatus = statusForOutcome(outcome);
    } else if (stopping) {
      // interrupt_agent already reported; a process that is ending reports nothing.
      record.status = "interrupted";
      record.lastTurnStatus = "interrupted";
    } else {
      record.status = statusForOutcome(outcome);
      record.health = healthForOutcome(outcome);
      record.lastTurnStatus = record.status;
    }
    await this.persist(state);
    if (!stopping) {
      // Messages a child sent up during its turn precede the notice of that turn's end.
      await this.collectInbox();
      const rolled = await this.subtreeUsage(record);
      this.notify(this.noticeFor(record, record.status as NoticeType, { outcome, reason, text, reportStored: report !== undefined, subtreeUsage: rolled }));
      if (record.followupQueued) await this.requestTurn(state, "followup");
    }
  }

  /** The agent's usage plus its descendants' (undefined when the tree directory cannot be read). */
  private async subtreeUsage(record: AgentRecordV1): Promise<UsageTotals | undefined> {
    return subtreeUsage(this.tree, record).catch(() => undefined);
  }

  noticeFor(
    record: AgentRecordV1,
    type: NoticeType,
    extra: { outcome?: RunStatus; reason?: string; text?: string; reportStored?: boolean; subtreeUsage?: UsageTotals | undefined } = {},
  ): Notice {
    const text = extra.text ?? "";
    const usage = usageTotals(record.usage);
    // subtree_usage only when descendants spent something: for a leaf it would repeat `usage`
    // and take ~90 chars from the report's share of the 8 000.
    const rolled = extra.subtreeUsage;
    const descendantsSpent = rolled !== undefined && (rolled.total_tokens !== usage.total_tokens || rolled.cost !== usage.cost);
    return boundNotice({
      agent_name: record.path,
      nickname: record.nickname,
      type,
      agent_status: record.status,
      health: record.health,
      model: record.model,
      reasoning: record.reasoning,
      ...(extra.outcome && extra.outcome !== "completed" && { outcome: extra.outcome }),
      ...(extra.outcome && extra.outcome !== "completed" && extra.reason && { reason: extra.reason }),
      usage,
      ...(descendantsSpent && { subtree_usage: rolled }),
      report_chars: text.length,
      report_stored: extra.reportStored ?? false,
      report: text,
    });
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

  /** interrupt_agent: stop the running turn or drop the queued one; the agent stays resumable. */
  async interrupt(state: ChildState): Promise<AgentStatus> {
    const { record } = state;
    // Read first: from here to its notice the interrupt runs without a pause.
    const rolled = await this.subtreeUsage(record);
    const previous = record.status;
    const queued = this.slots.dequeue(record.path);
    if (!state.running && !queued) return previous;
    record.status = "interrupted";
    record.lastTurnStatus = "interrupted";
    record.followupQueued = false;
    const running = state.running;
    if (running) {
      state.stopping = "interrupt";
      running.stop();
      this.slots.release(record.path);
    }
    await this.persist(state);
    this.notify(this.noticeFor(record, "interrupted", { outcome: "interrupted", reason: "interrupted by its parent", subtreeUsage: rolled }));
    // A follow-up must not start while the stopped pi may still write the shared session,
    // and it must see what the stopped turn left undelivered.
    if (running) await settledWithin(state.settled, STOP_WAIT_MS);
    return previous;
  }

  /** close_agent: stop the agent and its whole subtree; every agent in it becomes shutdown. */
  async close(state: ChildState): Promise<AgentStatus> {
    const { record } = state;
    const rolled = await this.subtreeUsage(record);
    const previous = record.status;
    const queued = this.slots.dequeue(record.path);
    const running = state.running;
    if (running) {
      state.stopping = "close";
      running.stop();
      this.slots.release(record.path);
    }
    record.lastTurnStatus ??= record.status;
    record.status = "shutdown";
    record.followupQueued = false;
    await this.persist(state);
    if (running || queued) this.notify(this.noticeFor(record, "shutdown", { outcome: "interrupted", reason: "closed by its parent", subtreeUsage: rolled }));
    if (running) await settledWithin(state.settled, STOP_WAIT_MS);
    // The child's own process stopped its children as it ended; their records become shutdown too.
    for (const descendant of await this.tree.subtree(record.path)) {
      if (descendant.status === "shutdown") continue;
      descendant.lastTurnStatus ??= descendant.status;
      descendant.status = "shutdown";
      await this.tree.writeRecord(descendant);
    }
    return previous;
  }

  /** session_shutdown: stop every running or queued turn; terminal statuses are kept (F-01). */
  async shutdown(): Promise<void> {
    this.closing = true;
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
        waits.push(this.persist(state));
      }
    }
    await Promise.all(waits);
    await this.queuePublished;
    this.mailbox.wakeAll();
  }

  /** send_message to the parent: a `message` notice dropped in the parent's inbox. */
  async messageParent(parent: string, text: string): Promise<void> {
    const own = await this.tree.readRecord(this.self);
    await this.tree.postToInbox(
      parent,
      boundNotice({
        agent_name: this.self,
        nickname: own?.nickname ?? this.self,
        type: "message",
        agent_status: "running",
        health: own?.health ?? "healthy",
        model: own?.model ?? "",
        reasoning: own?.reasoning ?? "",
        report_chars: text.length,
        report_stored: false,
        report: text,
      }),
    );
  }

  parentPath(): string | undefined {
    return this.identity.isRoot ? undefined : parentOf(this.self);
  }
}

/**
 * Waits for a stopped turn to be recorded, at most `ms`. Used inside a tool call: the timer
 * holds the event loop (the wrapper's handle is unref'd, so without it pi could find nothing
 * left to do and exit in the middle of the tool) and is cleared as soon as the turn settles.
 */
async function settledWithin(settled: Promise<void> | undefined, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([settled, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
