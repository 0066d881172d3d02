import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { LIMITS } from "../../contracts/tree.js";
import { jsonResult, loadPart, subtreeTarget, type ToolDeps } from "./common.js";
import { number, object, optional, string } from "./schema.js";

const parameters = object({
  target: string({ description: "Agent of your subtree." }),
  offset: optional(number({ description: "The previous page's next_offset (default 0)." })),
  turn: optional(number({ description: "0 = latest (default), 1 = the one before…" })),
});

export function getAgentReportTool({ runtime }: ToolDeps): ToolDefinition<typeof parameters> {
  return {
    name: "get_agent_report",
    label: "Get agent report",
    description: `An agent's full final answer, ≤${LIMITS.reportPageChars} chars a page. Kept per turn (≤${LIMITS.reportChars} chars, newest ${LIMITS.reportsKept}); available: false if none.`,
    parameters,
    execute: async (_id, params) => {
      const started = runtime();
      const rt = started instanceof Promise ? await started : started;
      const target = subtreeTarget(rt, params.target);
      const { readReportPage } = await loadPart("the reports", () => import("../turns/delivery/reports.js"));
      const page = await readReportPage(rt.tree.agentDir(target), {
        ...(params.turn !== undefined && { turn: params.turn }),
        ...(params.offset !== undefined && { offset: params.offset }),
      });
      return jsonResult({ agent_name: target, ...page });
    },
  };
}
