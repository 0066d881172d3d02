import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";
import { LIMITS } from "../../contracts/tree.js";
import { readReportPage } from "../turns/reports.js";
import { jsonResult, subtreeTarget, type ToolDeps } from "./common.js";

const parameters = Type.Object({
  target: Type.String({ description: "An agent in your subtree (canonical path or relative to you)." }),
  offset: Type.Optional(
    Type.Number({ description: "Character offset to read from, a non-negative integer (default 0; pass the previous page's next_offset)." }),
  ),
  turn: Type.Optional(Type.Number({ description: "Which turn's report, a non-negative integer: 0 = the latest (default), 1 = the one before, …" })),
});

export function getAgentReportTool({ runtime }: ToolDeps): ToolDefinition<typeof parameters> {
  return {
    name: "get_agent_report",
    label: "Get agent report",
    description: `Read an agent's full final answer when its notice was truncated: pages of at most ${LIMITS.reportPageChars} characters (text, offset, next_offset — null on the last page, total_chars, original_chars, complete). Reports are stored up to ${LIMITS.reportChars} characters, the newest ${LIMITS.reportsKept} per agent. Every turn's answer is stored, whatever its outcome; turn_number says which turn a page belongs to, and available: false when there is no such report (yet).`,
    parameters,
    execute: async (_id, params) => {
      const rt = runtime();
      const target = subtreeTarget(rt, params.target);
      const page = await readReportPage(rt.tree.agentDir(target), {
        ...(params.turn !== undefined && { turn: params.turn }),
        ...(params.offset !== undefined && { offset: params.offset }),
      });
      return jsonResult({ agent_name: target, ...page });
    },
  };
}
