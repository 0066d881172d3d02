import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { LIMITS } from "../../contracts/tree.js";
import { addTotals, emptyTotals, usageTotals } from "../../contracts/usage.js";
import { verificationSummary } from "../../contracts/verify.js";
import { systemClock } from "../../lib/clock.js";
import { resolveTarget } from "../tree/paths.js";
import { jsonResult, loadPart, type ToolDeps } from "./common.js";
import { object, optional, string } from "./schema.js";

/** Damaged records named in one result (each problem is one bounded line). */
const DAMAGED_LISTED = 20;

const parameters = object({
  path_prefix: optional(string({ description: "Only paths starting with this." })),
});

/** What list_agents reads the tree with, imported at its first call (common.ts's loadPart says why). */
const progressParts = () =>
  loadPart("the tree's progress", () =>
    Promise.all([
      import("../progress/budget.js"),
      import("../progress/limits-used.js"),
      import("../progress/progress.js"),
      import("../turns/delivery/live-messages.js"),
      import("../turns/fallback-turns.js"),
    ]),
  );

export function listAgentsTool({ runtime, clock = systemClock }: ToolDeps): ToolDefinition<typeof parameters> {
  return {
    name: "list_agents",
    label: "List agents",
    description: `Your subtree's agents: status, usage, progress, pending_messages (unread). ≤${LIMITS.listAgentsBytes / 1024} KiB; omitted counts the rest. Agents in damaged cannot be acted on.`,
    parameters,
    execute: async (_id, params) => {
      const started = runtime();
      const rt = started instanceof Promise ? await started : started;
      const [{ budgetState }, { limitsUsed }, { progressFields, progressOf }, { pendingMessageCount }, { modelInUse }] =
        await progressParts();
      const prefix = params.path_prefix
        ? (resolveTarget(rt.self, params.path_prefix) ?? params.path_prefix)
        : undefined;
      const progress = progressOf(rt);
      const snapshot = (await progress.snapshot(rt.self, clock)).filter(
        (agent) => !prefix || agent.record.path.startsWith(prefix),
      );
      const totalUsage = emptyTotals();
      const agents = snapshot.map((agent) => {
        const { record } = agent;
        const usage = usageTotals(agent.usage);
        addTotals(totalUsage, usage);
        const pendingMessages = pendingMessageCount(record);
        const inUse = modelInUse(record, agent.run?.model);
        return {
          agent_name: record.path,
          nickname: record.nickname,
          agent_status: record.status,
          role: record.role,
          model: inUse.model,
          reasoning: inUse.reasoning,
          health: record.health,
          ...(record.worktree && { branch: record.worktree.branch }),
          ...(record.runner && { runner: record.runner.name }),
          ...(agent.queuePosition !== undefined && { queue_position: agent.queuePosition }),
          ...(agent.waitingFor && { waiting_for: agent.waitingFor }),
          ...(pendingMessages > 0 && { pending_messages: pendingMessages }),
          ...(record.status === "shutdown" && record.lastTurnStatus && { last_outcome: record.lastTurnStatus }),
          ...(record.lastVerification && { verification: verificationSummary(record.lastVerification) }),
          ...(record.status === "running" && progressFields(agent)),
          ...(record.status === "running" &&
            agent.run && {
              limits_used: limitsUsed(record.limits, rt.limits.turnTimeoutMs, agent.run, agent.elapsedMs),
            }),
          usage,
          subtree_usage: agent.subtreeUsage,
        };
      });
      // A damaged record is named, so the agent is neither listed as sound nor silently missing.
      const damaged = progress.damaged
        .filter((damage) => damage.agentPath && (!prefix || damage.agentPath.startsWith(prefix)))
        .slice(0, DAMAGED_LISTED)
        .map((damage) => ({ agent_name: damage.agentPath!, problem: damage.problem }));
      const budget = await budgetState(progress).catch((err: unknown) => ({
        error: err instanceof Error ? err.message : String(err),
      }));
      const result: {
        agents: typeof agents;
        omitted?: number;
        damaged?: typeof damaged;
        total_usage: typeof totalUsage;
        budget?: object;
      } = {
        agents,
        ...(damaged.length > 0 && { damaged }),
        total_usage: totalUsage,
        ...(budget && {
          budget:
            "error" in budget
              ? { error: budget.error }
              : {
                  ...budget.budget,
                  spent_tokens: budget.spent.total_tokens,
                  spent_cost: budget.spent.cost,
                  exhausted: budget.refusal !== undefined,
                },
        }),
      };
      // The limit is on bytes as the model's context receives them: a non-ASCII name counts 2–4 times.
      while (
        Buffer.byteLength(JSON.stringify(result), "utf8") > LIMITS.listAgentsBytes - 64 &&
        result.agents.length > 0
      ) {
        result.agents = result.agents.slice(0, -1);
        result.omitted = agents.length - result.agents.length;
      }
      return jsonResult(result);
    },
  };
}
