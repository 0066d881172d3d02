/**
 * Who a `wait_agent` with `all: true` waits for: a group of the caller's direct children,
 * fixed when the wait starts. Only direct children: their notices are the ones that reach
 * the caller's mailbox (a grandchild's go to its own parent).
 */
import { errorValue } from "../../lib/text.js";
import { isStrictDescendant, parentOf, resolveTarget } from "../tree/paths.js";
import type { TreeRuntime } from "../turns/runtime.js";

/** One `targets` entry: a direct child of the caller, given as a canonical path or relative to it. */
function groupMember(rt: TreeRuntime, given: unknown): string {
  const resolved = typeof given === "string" ? resolveTarget(rt.self, given) : undefined;
  if (resolved && rt.children.has(resolved)) return resolved;
  if (!resolved || !isStrictDescendant(rt.self, resolved) || !rt.tree.exists(resolved))
    throw new Error(`agent not found: ${errorValue(given)}`);
  const parent = parentOf(resolved);
  if (parent !== rt.self)
    throw new Error(`${resolved} is not a direct child of ${rt.self}; its notices go to its parent ${parent}`);
  const damage = rt.damaged.get(resolved);
  const why = damage === undefined ? "could not be read when this session started" : `is damaged (${damage})`;
  throw new Error(`${resolved}'s record ${why}; it cannot be waited for`);
}

/**
 * The children an all-wait waits for: the `targets` given (each must be a direct child), else
 * every child whose turn is under way now or whose notice waits in the mailbox — so a child
 * that ended just before the wait started is still collected with the others.
 */
export function waitGroup(rt: TreeRuntime, targets: readonly unknown[] | undefined): Set<string> {
  if (targets && targets.length > 0) return new Set(targets.map((given) => groupMember(rt, given)));
  const group = rt.mailbox.senders();
  for (const agentPath of rt.children.keys()) if (rt.turnUnderWay(agentPath)) group.add(agentPath);
  return group;
}

/** The members of the group whose turn has yet to end, in the group's order. */
export function stillWorking(rt: TreeRuntime, group: ReadonlySet<string>): string[] {
  return [...group].filter((agentPath) => rt.turnUnderWay(agentPath));
}
