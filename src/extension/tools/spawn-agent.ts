import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { LIMITS } from "../../contracts/tree.js";
import { VERIFY_DEFAULTS } from "../../contracts/verify.js";
import { systemClock } from "../../lib/clock.js";
import { type TreeLimits, treeLimits } from "../config.js";
import { BUILTIN_CATALOG, describeAgentTypes, type RoleCatalog } from "../roles/roles.js";
import { jsonResult, loadPart, type ToolDeps } from "./common.js";
import { array, boolean, integer, object, optional, string, union, unsafe } from "./schema.js";
import { clampTimeout, waitForGroup, withDeliveryKeys } from "./wait-agent.js";

/*
 * Every word of these descriptions goes into every model request of every agent that loads the
 * extension (test/e2e/tool-schema-size.test.ts bounds the nine tools): each rule is said once,
 * where the model reads it; docs/tools.md is the full reference.
 */

/**
 * What isolation does and how the parent brings the work in: the notice's merge_hint, because the
 * base commit holds the parent's own uncommitted work, which a plain merge would bring in too.
 */
const ISOLATION_TEXT =
  "none (default or the role's) or worktree: own git worktree and branch, a commit per turn. Take its work with the notice's merge_hint, not git merge.";

/** Each limit once, with its default; a turn that met one ends in a wrap-up, which its notice's `limit` marks. */
const limitsText = (turnLimitMs: number) =>
  `Per turn: max_turns, max_tokens, max_cost (USD), time_limit (s, default ${describeDuration(turnLimitMs)}), grace_turns (2), grace_seconds (60). Reached: it wraps up (notice limit: partial work).`;

/** What verify does, in one sentence: its keys, their defaults, and what a failed check means. */
const VERIFY_TEXT = `{run: [shell cmds], review: agent, max_repairs (${VERIFY_DEFAULTS.maxRepairs}), timeout (s)}: checked after it completes; a failure is sent back to fix.`;

const spawnParameters = (roles: RoleCatalog, turnLimitMs: number) =>
  object({
    task_name: string({
      description: `[a-z0-9_]{1,${LIMITS.taskNameChars}}, unique among your children.`,
    }),
    message: string({ description: "The whole task, verbatim." }),
    agent_type: optional(string({ description: describeAgentTypes(roles) })),
    fork_turns: optional(
      union([string(), integer()], {
        description: "none, all (default) or your N latest turns; any agent_type needs none or N.",
      }),
    ),
    model: optional(string({ description: "provider/id (list_models); default: role's, else yours." })),
    reasoning_effort: optional(string({ description: "A list_models level; default: role's, else yours." })),
    isolation: optional(string({ description: ISOLATION_TEXT })),
    // An object of numbers; its keys are checked by the spawn (a schema per key would cost ~200 characters).
    limits: optional(unsafe<Record<string, number>>({ type: "object", description: limitsText(turnLimitMs) })),
    fallback_models: optional(array(string(), { description: "Tried in order if the provider fails." })),
    runner: optional(string({ description: "local (default) or a settings runner." })),
    // Spawns run one after another (executionMode "sequential"), so on the last spawn of a
    // batch the earlier ones have started: the fan-out and its wait cost one model request.
    wait: optional(
      boolean({
        description: "true: then wait as wait_agent all: true for your working children; on a batch's last spawn.",
      }),
    ),
    // An object whose keys the spawn checks, as for limits (a schema per key costs characters in every request).
    verify: optional(unsafe<Record<string, unknown>>({ type: "object", description: VERIFY_TEXT })),
  });

type SpawnParameters = ReturnType<typeof spawnParameters>;

/** `30 minutes`, `90 seconds`: a turn limit as the description states it. */
export function describeDuration(ms: number): string {
  const [value, unit] =
    ms % 60_000 === 0 ? [ms / 60_000, "minute"] : ms % 1000 === 0 ? [ms / 1000, "second"] : [ms, "millisecond"];
  return `${value} ${unit}${value === 1 ? "" : "s"}`;
}

/**
 * `roles` only shapes the description of `agent_type`; each call reads the definition files
 * anew. `limits` are the ones the runtime applies (the environment can change the defaults),
 * so the model is told the limits it will meet.
 */
export function spawnAgentTool(
  { pi, runtime, spawnPart, clock = systemClock }: ToolDeps,
  roles: RoleCatalog = BUILTIN_CATALOG,
  limits: TreeLimits = treeLimits(),
): ToolDefinition<SpawnParameters> {
  const parameters = spawnParameters(roles, limits.turnTimeoutMs);
  return {
    name: "spawn_agent",
    label: "Spawn agent",
    description: [
      "Start a child; returns at once.",
      `Limits: ${limits.maxActiveChildTurns} running local turns of your children (more queue), depth ${limits.maxDepth}, ${limits.maxSpawns} spawns per tree.`,
      "No spawn or follow-up once the tree budget is spent.",
    ].join(" "),
    parameters,
    executionMode: "sequential",
    execute: async (_id, params, signal, onUpdate, ctx) => {
      const started = runtime();
      const rt = started instanceof Promise ? await started : started;
      const [{ assertBudgetLeft }, { progressOf }, { spawnAgent }] = await loadPart("the spawn", () => {
        if (!spawnPart) throw new Error("this spawn_agent was built without the spawn");
        return Promise.all([import("../progress/budget.js"), import("../progress/progress.js"), spawnPart()]);
      });
      await assertBudgetLeft(progressOf(rt));
      const spawned = await spawnAgent(rt, pi, ctx, params);
      // The call returns at once; this one update shows the new child while pi renders the result.
      onUpdate?.({
        content: [
          {
            type: "text",
            text: `${spawned.agent_name} (${spawned.nickname}) ${spawned.agent_status} on ${spawned.model}`,
          },
        ],
        details: spawned,
      });
      if (params.wait !== true) return jsonResult(spawned);
      // The child is started whatever the wait gives: its spawn result comes first, the wait's beside it.
      const waited = await waitForGroup(rt, {
        timeoutMs: clampTimeout(undefined),
        signal,
        ctx,
        clock,
        onUpdate: onUpdate as Parameters<typeof waitForGroup>[1]["onUpdate"],
      });
      // Its notices are read once pi holds this result, as for wait_agent's.
      return withDeliveryKeys(rt, jsonResult({ ...spawned, wait: waited.details }), waited.details.notices);
    },
  };
}
