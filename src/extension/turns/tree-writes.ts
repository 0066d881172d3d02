/**
 * This process's writes of its children's records and of its queue file to the tree directory
 * (the source of truth shared with nested agents' processes). Each file's writes go one after
 * the other, so the last one on disk is the latest state; shutdown waits for them all.
 */
import type { AgentRecordV1 } from "../../contracts/tree.js";
import type { TreeDir } from "../tree/tree-dir.js";

export class TreeWrites {
  /** Record writes of each agent, one after the other: the last write on disk is the latest state. */
  private readonly writes = new Map<string, Promise<void>>();
  /** Queue files are written one at a time, in order, so the last one on disk is the latest queue. */
  private queuePublished: Promise<void> = Promise.resolve();
  /** The queue the next scheduled write will publish; undefined when no write is waiting. */
  private queueToPublish: string[] | undefined;

  constructor(
    private readonly tree: TreeDir,
    /** The agent whose queue this is. */
    private readonly self: string,
  ) {}

  /**
   * Lets list_agents in any process of the tree show where this agent's queued children stand.
   * Only the latest queue matters, so at most one write is in flight and one waits, and the
   * waiting one takes the newest queue: 30 turns requested at once cost a few durable writes,
   * not 60 that could still be landing long after the last turn ended.
   */
  publishQueue(queued: string[]): void {
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

  /** Writes the record as it is now, after the agent's earlier writes; rejects when this write fails. */
  writeRecord(record: AgentRecordV1): Promise<void> {
    // Chained: two writes in flight could land in either order; each writes the record as it is then.
    const write = (this.writes.get(record.path) ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => this.tree.writeRecord(record));
    this.writes.set(record.path, write);
    return write;
  }

  /** Resolves once every write begun is on disk or has failed, a write begun meanwhile included. Never rejects. */
  async settled(): Promise<void> {
    const begun = () => [this.queuePublished, ...this.writes.values()];
    let awaited: Array<Promise<void>> = [];
    // A write that begins while these are awaited is awaited too.
    for (let writes = begun(); writes.some((write) => !awaited.includes(write)); writes = begun()) {
      awaited = writes;
      await Promise.all(writes.map((write) => write.catch(() => undefined)));
    }
  }
}
