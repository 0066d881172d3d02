/**
 * Usage per agent and rolled up per subtree. An agent's record holds the usage of its
 * finished turns (its parent adds each result's usage); a subtree's usage is the agent's
 * own plus every agent below it, read from the tree directory that every process shares.
 */
import type { AgentRecordV1 } from "../../contracts/tree.js";
import { addTotals, emptyTotals, type UsageTotals, usageTotals } from "../../contracts/usage.js";
import type { TreeDir } from "./tree-dir.js";

/** Whether `agentPath` is `root` or below it. */
export function inSubtree(root: string, agentPath: string): boolean {
  return agentPath === root || agentPath.startsWith(`${root}/`);
}

/**
 * For every agent of `usages` (path → its own totals), the sum over itself and its
 * descendants among them.
 */
export function rollUp(usages: ReadonlyMap<string, UsageTotals>): Map<string, UsageTotals> {
  const rolled = new Map<string, UsageTotals>();
  for (const [agentPath] of usages) {
    const sum = emptyTotals();
    for (const [other, totals] of usages) if (inSubtree(agentPath, other)) addTotals(sum, totals);
    rolled.set(agentPath, sum);
  }
  return rolled;
}

/**
 * The usage of `record`'s whole subtree as recorded in the tree directory: `record` itself
 * (as this process holds it, possibly newer than on disk) plus its descendants' records.
 */
export async function subtreeUsage(tree: TreeDir, record: AgentRecordV1): Promise<UsageTotals> {
  const sum = usageTotals(record.usage);
  for (const descendant of await tree.subtree(record.path)) addTotals(sum, usageTotals(descendant.usage));
  return sum;
}
