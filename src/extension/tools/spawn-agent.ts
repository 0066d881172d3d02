import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";
import { LIMITS } from "../../contracts/tree.js";
import { BUDGET_COST_ENV, BUDGET_TOKENS_ENV, assertBudgetLeft } from "../budget.js";
import { progressOf } from "../progress.js";
import { BUILTIN_CATALOG, type RoleCatalog, describeAgentTypes } from "../roles.js";
import { spawnAgent } from "../spawn.js";
import { type ToolDeps, jsonResult } from "./common.js";

const spawnParameters = (roles: RoleCatalog) => Type.Object({
  task_name: Type.String({ description: "Short name of the task, lowercase letters, digits and underscores; it becomes the last segment of the child's canonical path (/root/<task_name>)." }),
  message: Type.String({ description: "The task for the child, complete and self-contained; delivered verbatim as its first message." }),
  agent_type: Type.Optional(Type.String({ description: describeAgentTypes(roles) })),
  fork_turns: Type.Optional(Type.Union([Type.String(), Type.Integer()], { description: "How much of your conversation the child starts with: `none`, `all` (default), or a positive integer N of your most recent turns. A role (agent_type) needs `none` or N; a scout needs `none`." })),
  model: Type.Optional(Type.String({ description: "Model as provider/id (see list_models); default: the role's model when its definition file names one, else yours." })),
  reasoning_effort: Type.Optional(Type.String({ description: "off, minimal, low, medium, high or xhigh; it must be supported by the child's model. Default: the role's level (clamped to what the model supports) or yours." })),
});

type SpawnParameters = ReturnType<typeof spawnParameters>;

/** `roles` only shapes the description of `agent_type`; each call reads the definition files anew. */
export function spawnAgentTool({ pi, runtime }: ToolDeps, roles: RoleCatalog = BUILTIN_CATALOG): ToolDefinition<SpawnParameters> {
  const parameters = spawnParameters(roles);
  return {
    name: "spawn_agent",
    label: "Spawn agent",
    description: [
      "Start a child agent (a separate pi process) on a task and return at once; collect its result with wait_agent.",
      "Returns agent_name (its canonical path, e.g. /root/scout_one — a coordination id in the agent tree, not a filesystem path), nickname, role, the effective model and reasoning, agent_status, and queue_position (1 = next) when it waits for capacity.",
      `Limits: ${LIMITS.maxActiveChildTurns} of your children run at once (more are queued, not refused), ${LIMITS.maxDepth} levels below the root, ${LIMITS.maxSpawns} spawns per tree, each turn at most 30 minutes.`,
      `When the tree has a budget (${BUDGET_TOKENS_ENV} / ${BUDGET_COST_ENV}) and its agents have spent it, spawning is refused.`,
      `The child's final answer comes back in a notice of at most ${LIMITS.maxMessageChars} characters (a long report keeps its head and tail; get_agent_report pages the full text).`,
    ].join(" "),
    parameters,
    executionMode: "sequential",
    execute: async (_id, params, _signal, onUpdate, ctx) => {
      const rt = runtime();
      await assertBudgetLeft(progressOf(rt));
      const spawned = await spawnAgent(rt, pi, ctx, params);
      // The call returns at once; this one update shows the new child while pi renders the result.
      onUpdate?.({ content: [{ type: "text", text: `${spawned.agent_name} (${spawned.nickname}) ${spawned.agent_status} on ${spawned.model}` }], details: spawned });
      return jsonResult(spawned);
    },
  };
}
