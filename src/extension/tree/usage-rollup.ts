/**
 * Usage per agent and rolled up per subtree. An agent's record holds the usage of its
 * finished turns (its parent adds each result's usage); a subtree's usage is the agent's
 * own plus every agent below it, read from the tree directory that every process shares.
 */
import type { AgentRecordV1 } from "../../contracts/tree.js";
import { addTotals, type UsageTotals, usageTotals } from "../../contracts/usage.js";
import type { TreeDir } from "./tree-dir.js";

// The pure roll-up lives with the usage arithmetic (the CLI's `cost` uses it too); the
// extension's modules keep importing it from here.
export { inSubtree, rollUp } from "../../contracts/usage.js";

/**
 * The usage of `record`'s whole subtree as recorded in the tree directory: `record` itself
 * (as this process holds it, possibly newer than on disk) plus its descendants' records.
 */
export async function subtreeUsage(tree: TreeDir, record: AgentRecordV1): Promise<UsageTotals> {
  const sum = usageTotals(record.usage);
  for (const descendant of await tree.subtree(record.path)) addTotals(sum, usageTotals(descendant.usage));
  return sum;
}
