/**
 * What every agent of a subtree is doing right now: its record from the tree directory plus
 * the live progress of its latest run, tailed from that run's events.jsonl. Works for the
 * whole subtree, grandchildren included, because every process of a tree shares the tree
 * directory; no wrapper or child cooperates beyond writing its events as they happen.
 */
import path from "node:path";
import { RUN_FILES, TREE_FILES } from "../../contracts/layout.js";
import type { AgentRecordV1 } from "../../contracts/tree.js";
import type { Usage } from "../../contracts/usage.js";
import { addUsage, emptyUsage, type UsageTotals, usageTotals } from "../../contracts/usage.js";
import { type Clock, systemClock } from "../../lib/clock.js";
import { parentOf } from "../tree/paths.js";
import type { TreeDamage, TreeDir } from "../tree/tree-dir.js";
import { rollUp } from "../tree/usage-rollup.js";
import type { RunnerWait } from "../turns/capacity.js";
import type { TreeRuntime } from "../turns/runtime.js";
import { currentTool, EventsTail, type RunProgress } from "./events-tail.js";

export interface AgentProgress {
  record: AgentRecordV1;
  /** The agent's usage: its finished turns plus the running turn so far. */
  usage: Usage;
  /** The agent's usage plus every agent's below it (among the snapshot's agents). */
  subtreeUsage: UsageTotals;
  /** Progress of the agent's latest run, when it has one. */
  run?: RunProgress;
  /** Running: since its turn started; finished: how long its last turn took. */
  elapsedMs?: number;
  /** 1 = next, while queued for capacity (known only for this process's direct children). */
  queuePosition?: number;
  /** While queued because its runner is full across the tree: `runner box (3/3 in use)` (this process's children only). */
  waitingFor?: string;
}

/** The fields tools return for an agent's live progress (wait_agent updates, list_agents). */
export interface ProgressFields {
  elapsed_ms?: number;
  turns?: number;
  tool_calls?: number;
  current_tool?: string;
  retrying?: true;
}

export function progressFields(agent: AgentProgress): ProgressFields {
  const tool = agent.run && currentTool(agent.run);
  return {
    ...(agent.elapsedMs !== undefined && { elapsed_ms: agent.elapsedMs }),
    ...(agent.run && { turns: agent.run.turns, tool_calls: agent.run.toolCalls }),
    ...(tool && agent.record.status === "running" && { current_tool: tool }),
    ...(agent.run?.retrying && agent.record.status === "running" && { retrying: true as const }),
  };
}

function elapsedOf(record: AgentRecordV1, run: RunProgress | undefined, now: number): number | undefined {
  if (record.status === "running") return run?.startedAt !== undefined ? Math.max(0, now - run.startedAt) : undefined;
  if (record.status === "pending_init") return undefined;
  if (run?.startedAt !== undefined && run.endedAt !== undefined) return Math.max(0, run.endedAt - run.startedAt);
  return undefined;
}

function sharedPosition(queues: ReadonlyMap<string, string[]>, record: AgentRecordV1): number | undefined {
  if (record.status !== "pending_init") return undefined;
  const index = queues.get(parentOf(record.path) ?? "")?.indexOf(record.path) ?? -1;
  return index === -1 ? undefined : index + 1;
}

/** The turn this process runs, as an agent of the tree: its path and its usage so far. */
export interface OwnRun {
  path: string;
  usage: Usage;
}

export class TreeProgress {
  /** One tail per agent: its latest run's events.jsonl. */
  private readonly tails = new Map<string, EventsTail>();
  /** The damaged records the latest snapshot came across (list_agents names them). */
  damaged: TreeDamage[] = [];

  /**
   * `held` gives the records this process holds itself (its direct children): they are
   * never older than the disk's, and newer when a write failed (a full disk), so they win.
   */
  constructor(
    readonly tree: TreeDir,
    private readonly queuePosition: (agentPath: string) => number | undefined = () => undefined,
    private readonly held: () => Iterable<AgentRecordV1> = () => [],
    private readonly runnerWait: (agentPath: string) => RunnerWait | undefined = () => undefined,
    private readonly ownRun: () => OwnRun | undefined = () => undefined,
    /** The runtime's clock: what waits on the tree's spend (a spawn held while the person is asked) waits on it. */
    readonly clock: Clock = systemClock,
  ) {}

  /** Every agent below `under` (not `under` itself), in spawn order, with live progress. */
  async snapshot(under: string, clock: Pick<Clock, "now"> = systemClock): Promise<AgentProgress[]> {
    const scan = await this.tree.scan(under);
    this.damaged = scan.damaged;
    const records = withHeld(scan.records, this.held(), under);
    const agents = await Promise.all(records.map((record) => this.progressOf(record)));
    const queues = await this.sharedQueues(records);
    const at = clock.now();
    const rolled = rollUp(new Map(agents.map(({ record, usage }) => [record.path, usageTotals(usage)])));
    return agents.map(({ record, usage, run }) => {
      const elapsedMs = elapsedOf(record, run, at);
      const queuePosition = this.queuePosition(record.path) ?? sharedPosition(queues, record);
      const wait = queuePosition !== undefined ? this.runnerWait(record.path) : undefined;
      return {
        record,
        usage,
        subtreeUsage: rolled.get(record.path)!,
        ...(run && { run }),
        ...(elapsedMs !== undefined && { elapsedMs }),
        ...(queuePosition !== undefined && { queuePosition }),
        ...(wait && { waitingFor: `runner ${wait.runner} (${wait.inUse}/${wait.capacity} in use)` }),
      };
    });
  }

  /**
   * The queues of the parents of queued agents this process does not schedule itself
   * (grandchildren and below): each parent's process publishes its queue in the tree directory.
   */
  private async sharedQueues(records: AgentRecordV1[]): Promise<Map<string, string[]>> {
    const parents = new Set<string>();
    for (const record of records) {
      if (record.status !== "pending_init" || this.queuePosition(record.path) !== undefined) continue;
      const parent = parentOf(record.path);
      if (parent) parents.add(parent);
    }
    const queues = new Map<string, string[]>();
    await Promise.all([...parents].map(async (parent) => queues.set(parent, await this.tree.readQueue(parent))));
    return queues;
  }

  private async progressOf(record: AgentRecordV1): Promise<{ record: AgentRecordV1; usage: Usage; run?: RunProgress }> {
    const usage = structuredClone(record.usage ?? emptyUsage());
    const latest = record.runs.at(-1);
    if (!latest) return { record, usage };
    const file = path.join(this.tree.agentDir(record.path), TREE_FILES.runs, latest, RUN_FILES.events);
    let tail = this.tails.get(record.path);
    if (!tail || tail.file !== file) {
      tail = new EventsTail(file);
      this.tails.set(record.path, tail);
    }
    // Read until the run's run_end: after it nothing more is appended.
    if (!tail.done) await tail.poll();
    // The parent adds a turn's usage to the record in the same write that ends its
    // `running` status: until then the run's own usage is not in the record.
    if (record.status === "running") addUsage(usage, this.runUsage(record.path, tail.progress.usage));
    return { record, usage, run: tail.progress };
  }

  /**
   * A running turn's usage so far. The agent this process is knows its own turn first hand:
   * the wrapper writes an answer to events.jsonl a moment after pi gives it, and a tool the
   * answer called (spawn_agent under a budget) runs in that moment.
   */
  private runUsage(agentPath: string, fromEvents: Usage): Usage {
    const own = this.ownRun();
    if (own?.path !== agentPath) return fromEvents;
    return own.usage.totalTokens > fromEvents.totalTokens ? own.usage : fromEvents;
  }
}

/** The disk's records with the held ones in their place (or added), in spawn order. */
function withHeld(records: AgentRecordV1[], held: Iterable<AgentRecordV1>, under: string): AgentRecordV1[] {
  const byPath = new Map(records.map((record) => [record.path, record]));
  for (const record of held) if (record.path.startsWith(`${under}/`)) byPath.set(record.path, record);
  return [...byPath.values()].sort((a, b) => a.spawnSeq - b.spawnSeq);
}

const trackers = new WeakMap<TreeRuntime, TreeProgress>();

/** The one progress tracker of a runtime (its tails live as long as the runtime). */
export function progressOf(runtime: TreeRuntime): TreeProgress {
  let tracker = trackers.get(runtime);
  if (!tracker) {
    tracker = new TreeProgress(
      runtime.tree,
      (agentPath) => runtime.queuePosition(agentPath),
      () => [...runtime.children.values()].map((state) => state.record),
      (agentPath) => runtime.runnerWait(agentPath),
      // Empty in a root, whose own path is never in a snapshot (the extension feeds only children's).
      () => ({ path: runtime.self, usage: runtime.ownRunUsage }),
      runtime.clock,
    );
    trackers.set(runtime, tracker);
  }
  return tracker;
}
