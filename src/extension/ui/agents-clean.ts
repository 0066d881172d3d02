/**
 * `/agents clean [branch or agent …]`: the worktrees of this tree's agents that ended, and
 * their branches with no commit beyond their base, listed, confirmed, then removed — the same
 * decision and removal as `subagent-wrapper clean` (lib/worktree-clean.ts). Inside the session
 * the runtime knows more than the records: a direct child whose turn is still being stopped or
 * recorded is in use whatever its record says.
 */
import path from "node:path";
import type { ExtensionCommandContext } from "@mariozechner/pi-coding-agent";
import { TREE_FILES } from "../../contracts/layout.js";
import {
  type CleanPlan,
  type CleanRecord,
  type CleanResult,
  carryOutClean,
  cleanFacts,
  cleanSubjects,
  planClean,
  planLines,
  resultLines,
  unknownNames,
} from "../../lib/worktree-clean.js";
import { isActive } from "../turns/lifecycle.js";
import type { TreeRuntime } from "../turns/runtime.js";

/** The tree below this agent as clean sees it, the runtime's own records first (they may be newer than the disk's). */
async function records(rt: TreeRuntime): Promise<CleanRecord[]> {
  return (await rt.tree.subtree(rt.self)).map((stored) => {
    const record = rt.children.get(stored.path)?.record ?? stored;
    const keptWorkspace = path.join(rt.tree.agentDir(record.path), TREE_FILES.runnerWorkspace);
    return {
      path: record.path,
      status: record.status,
      ...(record.worktree && { worktree: record.worktree }),
      keptWorkspace,
    };
  });
}

/** What clean would do now; `unknown` holds the names that match no agent or branch of the tree. */
export async function treeCleanPlan(
  rt: TreeRuntime,
  named: ReadonlySet<string> = new Set(),
): Promise<{ plan: CleanPlan; unknown: string[] }> {
  const busy = (agent: string): string | undefined => {
    const state = rt.children.get(agent);
    return state && isActive(state.phase) ? `its turn is ${state.phase.name}` : undefined;
  };
  const subjects = cleanSubjects(await records(rt), busy);
  const unknown = unknownNames(subjects, named);
  return { plan: planClean(await cleanFacts(subjects), named), unknown };
}

/** Carries out a plan (the temp tree's removal at shutdown uses it too). */
export function cleanTree(plan: CleanPlan): Promise<CleanResult[]> {
  return carryOutClean(plan);
}

/** The dialog: the list, a confirm, the removal and what it did. */
export async function agentsClean(
  rt: TreeRuntime,
  words: readonly string[],
  ctx: ExtensionCommandContext,
): Promise<void> {
  const { plan, unknown } = await treeCleanPlan(rt, new Set(words));
  if (unknown.length > 0)
    return ctx.ui.notify(`/agents clean: no agent or branch ${unknown.join(", ")} in this tree`, "error");
  const listed = planLines(plan);
  if (plan.steps.length === 0) return ctx.ui.notify(listed.join("\n"), "info");
  if (!(await ctx.ui.confirm("Remove these worktrees and branches?", listed.join("\n")))) return;
  const results = await cleanTree(plan);
  const failed = results.some((result) => result.error !== undefined);
  ctx.ui.notify(resultLines(results).join("\n"), failed ? "error" : "info");
}
