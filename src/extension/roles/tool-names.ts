/** The coordination tools this extension registers (a role's tool list may leave them out). */
export const COORDINATION_TOOLS: ReadonlySet<string> = new Set([
  "list_models",
  "spawn_agent",
  "wait_agent",
  "list_agents",
  "send_message",
  "followup_task",
  "interrupt_agent",
  "close_agent",
  "get_agent_report",
]);
