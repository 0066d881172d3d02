import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";
import { LIMITS, summarizeUsage } from "../../contracts/tree.js";
import { resolveTarget } from "../paths.js";
import { type ToolDeps, jsonResult } from "./common.js";

const parameters = Type.Object({
  path_prefix: Type.Optional(Type.String({ description: "Only agents whose canonical path starts with this (a canonical path or one relative to you)." })),
});

export function listAgentsTool({ runtime }: ToolDeps): ToolDefinition<typeof parameters> {
  return {
    name: "list_agents",
    label: "List agents",
    description:
      "List every agent in your subtree (children and their descendants, not you), in spawn order: agent_name (canonical path: a coordination id, not a filesystem path), nickname, agent_status, role, effective model and reasoning, health, queue_position while queued, usage. To wait for results use wait_agent, not repeated list_agents calls. The result stays under 50 KiB.",
    parameters,
    execute: async (_id, params) => {
      const rt = runtime();
      const prefix = params.path_prefix ? (resolveTarget(rt.self, params.path_prefix) ?? params.path_prefix) : undefined;
      const records = (await rt.tree.subtree(rt.self)).filter((record) => !prefix || record.path.startsWith(prefix));
      const agents = records.map((record) => {
        const queuePosition = rt.queuePosition(record.path);
        return {
          agent_name: record.path,
          nickname: record.nickname,
          agent_status: record.status,
          role: record.role,
          model: record.model,
          reasoning: record.reasoning,
          health: record.health,
          ...(queuePosition !== undefined && { queue_position: queuePosition }),
          ...(record.status === "shutdown" && record.lastTurnStatus && { last_outcome: record.lastTurnStatus }),
          usage: summarizeUsage(record.usage),
        };
      });
      const result: { agents: typeof agents; omitted?: number } = { agents };
      while (JSON.stringify(result).length > LIMITS.listAgentsBytes - 64 && result.agents.length > 0) {
        result.agents = result.agents.slice(0, -1);
        result.omitted = agents.length - result.agents.length;
      }
      return jsonResult(result);
    },
  };
}
