import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";
import { ENV } from "../../contracts/env.js";
import { LIMITS } from "../../contracts/tree.js";
import { type TreeLimits, treeLimits } from "../config.js";
import { assertBudgetLeft } from "../progress/budget.js";
import { progressOf } from "../progress/progress.js";
import { BUILTIN_CATALOG, describeAgentTypes, type RoleCatalog } from "../roles/roles.js";
import { spawnAgent } from "../spawn/spawn.js";
import { jsonResult, type ToolDeps } from "./common.js";

const spawnParameters = (roles: RoleCatalog) =>
  Type.Object({
    task_name: Type.String({
      description: `Short name of the task (lowercase letters, digits and underscores, at most ${LIMITS.taskNameChars} characters, unique among your children) that becomes the last segment of the child's canonical path, <your path>/<task_name>.`,
    }),
    message: Type.String({ description: "The task for the child, complete, self-contained and not empty, delivered verbatim as its first message." }),
    agent_type: Type.Optional(Type.String({ description: describeAgentTypes(roles) })),
    fork_turns: Type.Optional(
      Type.Union([Type.String(), Type.Integer()], {
        description:
          "How much of your conversation the child starts with — `none`, `all` (default) or a positive integer N of your most recent turns — where a role (agent_type) needs `none` or N and a scout needs `none`.",
      }),
    ),
    model: Type.Optional(
      Type.String({ description: "Model as provider/id, one list_models shows (default: the role's model when its definition file names one, else yours)." }),
    ),
    reasoning_effort: Type.Optional(
      Type.String({
        description:
          "off, minimal, low, medium, high or xhigh, supported by the child's model (default: the role's level, else yours, clamped silently to what the model supports).",
      }),
    ),
    isolation: Type.Optional(
      Type.String({
        description:
          "`none` (default, or the role's default): the child works in your cwd. `worktree`: it works in its own git worktree of the repository holding your cwd, on branch subagent/<tree tag>-<its path>, starting from what you see (HEAD plus uncommitted and untracked files; ignored files such as node_modules are not copied) — for children that write in parallel. Each of its turns is committed on its branch; nothing is merged for you.",
      }),
    ),
  });

type SpawnParameters = ReturnType<typeof spawnParameters>;

/** How a parent brings an isolated child's work in (spawn_agent and wait_agent say it). */
export const ISOLATION_MERGE_TEXT =
  "An isolated child's notices carry worktree (path, branch, base_commit, head_commit, changed_files, insertions, deletions, merge_hint); bring its work into your working tree with `git diff <base_commit> <head_commit> | git apply --3way` (merge_hint) — a plain `git merge <branch>` would also bring the uncommitted work its base holds, so it suits only when base_commit is your HEAD.";

/** `30 minutes`, `90 seconds`: a turn limit as the description states it. */
export function describeDuration(ms: number): string {
  const [value, unit] = ms % 60_000 === 0 ? [ms / 60_000, "minute"] : ms % 1000 === 0 ? [ms / 1000, "second"] : [ms, "millisecond"];
  return `${value} ${unit}${value === 1 ? "" : "s"}`;
}

/**
 * `roles` only shapes the description of `agent_type`; each call reads the definition files
 * anew. `limits` are the ones the runtime applies (the environment can change the defaults),
 * so the model is told the limits it will meet.
 */
export function spawnAgentTool(
  { pi, runtime }: ToolDeps,
  roles: RoleCatalog = BUILTIN_CATALOG,
  limits: TreeLimits = treeLimits(),
): ToolDefinition<SpawnParameters> {
  const parameters = spawnParameters(roles);
  return {
    name: "spawn_agent",
    label: "Spawn agent",
    description: [
      "Start a child agent (a separate pi process) on a task and return at once; collect its result with wait_agent.",
      "Returns agent_name (its canonical path, e.g. /root/scout_one — a coordination id in the agent tree, not a filesystem path), nickname, role, the effective model and reasoning, agent_status, and queue_position (1 = next) when it waits for capacity.",
      `Limits: ${limits.maxActiveChildTurns} turns of your children run at once (more are queued, not refused), ${limits.maxDepth} levels below the root, ${limits.maxSpawns} spawns per tree (finished agents count), each turn at most ${describeDuration(limits.turnTimeoutMs)} (then it ends errored, timed_out).`,
      `When the tree has a budget (${ENV.budgetTokens} / ${ENV.budgetCost}) and its agents have spent it, spawning is refused.`,
      `The child's final answer comes back in a notice of at most ${LIMITS.maxMessageChars} characters (a long report keeps its head and tail; get_agent_report pages the full text).`,
      ISOLATION_MERGE_TEXT,
    ].join(" "),
    parameters,
    executionMode: "sequential",
    execute: async (_id, params, _signal, onUpdate, ctx) => {
      const rt = runtime();
      await assertBudgetLeft(progressOf(rt));
      const spawned = await spawnAgent(rt, pi, ctx, params);
      // The call returns at once; this one update shows the new child while pi renders the result.
      onUpdate?.({
        content: [{ type: "text", text: `${spawned.agent_name} (${spawned.nickname}) ${spawned.agent_status} on ${spawned.model}` }],
        details: spawned,
      });
      return jsonResult(spawned);
    },
  };
}
