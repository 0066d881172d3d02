/**
 * Pure: what `subagent-wrapper cost` prints — a table for a person, one JSON object for a
 * program, or CSV for a spreadsheet (a header row, one row per agent, RFC 4180: CRLF line
 * ends, a field with a comma, quote or line break quoted and its quotes doubled; a text field
 * that a spreadsheet would take for a formula starts with `'`).
 */
import { roundCost, type Usage } from "../contracts/usage.js";
import type { AgentCost, TreeCost } from "./cost.js";
import { formatCount, formatDuration } from "./text.js";

export type CostFormat = "text" | "json" | "csv";

/** What an agent has not had since verification is not built: said once under the table. */
export const REPAIRS_NOTE = "repairs: 0 for every agent — work is not verified yet, so no turn is sent back for repair";

/** Usage in the JSON's shape: list_agents' names (`input`, `output`, `total_tokens`, `cost`) plus the cache tokens. */
function usageJson(usage: Usage) {
  return {
    input: usage.input,
    output: usage.output,
    cache_read: usage.cacheRead,
    cache_write: usage.cacheWrite,
    total_tokens: usage.totalTokens,
    cost: roundCost(usage.cost.total),
  };
}

function agentJson(agent: AgentCost) {
  return {
    path: agent.path,
    role: agent.role,
    status: agent.status,
    models: agent.models,
    turns: agent.turns,
    model_requests: agent.modelRequests,
    repairs: agent.repairs,
    usage: usageJson(agent.usage),
    wall_ms: Math.round(agent.wallMs),
    subtree_usage: usageJson(agent.subtree),
  };
}

export function treeCostJson(tree: TreeCost) {
  return {
    tree: tree.dir,
    agents: tree.agents.map(agentJson),
    total_usage: usageJson(tree.total),
    repairs_note: REPAIRS_NOTE,
    ...(tree.problems.length > 0 && { problems: tree.problems }),
  };
}

const CSV_HEADER = [
  "path",
  "role",
  "status",
  "models",
  "turns",
  "model_requests",
  "repairs",
  "input_tokens",
  "output_tokens",
  "cache_read_tokens",
  "cache_write_tokens",
  "total_tokens",
  "usd",
  "wall_seconds",
  "subtree_input_tokens",
  "subtree_output_tokens",
  "subtree_cache_read_tokens",
  "subtree_cache_write_tokens",
  "subtree_total_tokens",
  "subtree_usd",
];

/** One CSV field (RFC 4180); a text that starts like a formula (`=`, `+`, `-`, `@`, tab, CR) is kept as text with a leading `'`. */
export function csvField(value: string | number): string {
  let field = String(value);
  if (typeof value === "string" && /^[=+\-@\t\r]/.test(field)) field = `'${field}`;
  return /[",\r\n]/.test(field) ? `"${field.replace(/"/g, '""')}"` : field;
}

const usageCells = (usage: Usage) => [
  usage.input,
  usage.output,
  usage.cacheRead,
  usage.cacheWrite,
  usage.totalTokens,
  roundCost(usage.cost.total),
];

export function treeCostCsv(tree: TreeCost): string {
  const rows = [CSV_HEADER.map(csvField)];
  for (const agent of tree.agents) {
    const [input, output, cacheRead, cacheWrite, total, usd] = usageCells(agent.usage);
    rows.push(
      [
        agent.path,
        agent.role,
        agent.status,
        agent.models.join("; "),
        agent.turns,
        agent.modelRequests,
        agent.repairs,
        input as number,
        output as number,
        cacheRead as number,
        cacheWrite as number,
        total as number,
        usd as number,
        Math.round(agent.wallMs) / 1000,
        ...usageCells(agent.subtree),
      ].map(csvField),
    );
  }
  return rows.map((row) => `${row.join(",")}\r\n`).join("");
}

const usd = (dollars: number) => `$${roundCost(dollars).toFixed(4)}`;

/** The table: one line per agent (indented by depth), its subtree's total where it has children, then the tree's. */
export function treeCostText(tree: TreeCost): string {
  const header = [
    "agent",
    "role",
    "model(s)",
    "turns",
    "requests",
    "input",
    "output",
    "cache r/w",
    "USD",
    "wall",
    "subtree USD",
  ];
  const rows = tree.agents.map((agent) => {
    const depth = agent.path.split("/").length - 3;
    const hasChildren = tree.agents.some((other) => other.path.startsWith(`${agent.path}/`));
    return [
      `${"  ".repeat(Math.max(0, depth))}${agent.path}`,
      agent.role,
      agent.models.join(", ") || "?",
      String(agent.turns),
      String(agent.modelRequests),
      formatCount(agent.usage.input),
      formatCount(agent.usage.output),
      `${formatCount(agent.usage.cacheRead)}/${formatCount(agent.usage.cacheWrite)}`,
      usd(agent.usage.cost.total),
      agent.wallMs > 0 ? formatDuration(agent.wallMs) : "-",
      hasChildren ? usd(agent.subtree.cost.total) : "",
    ];
  });
  const { total } = tree;
  const footer = [
    "total",
    "",
    "",
    String(tree.agents.reduce((sum, agent) => sum + agent.turns, 0)),
    String(tree.agents.reduce((sum, agent) => sum + agent.modelRequests, 0)),
    formatCount(total.input),
    formatCount(total.output),
    `${formatCount(total.cacheRead)}/${formatCount(total.cacheWrite)}`,
    usd(total.cost.total),
    formatDuration(tree.agents.reduce((sum, agent) => sum + agent.wallMs, 0)),
    "",
  ];
  const table = [header, ...rows, footer];
  const widths = header.map((_, column) => Math.max(...table.map((row) => (row[column] ?? "").length)));
  const line = (row: string[]) =>
    row
      .map((cell, column) => (column >= 3 ? cell.padStart(widths[column] ?? 0) : cell.padEnd(widths[column] ?? 0)))
      .join("  ")
      .trimEnd();
  const lines = [
    `Cost of ${tree.dir}: ${tree.agents.length} agent${tree.agents.length === 1 ? "" : "s"} (the root's own conversation is pi's, not counted)`,
    "",
    ...table.map(line),
    "",
    REPAIRS_NOTE,
  ];
  return `${lines.join("\n")}\n`;
}

export function formatTreeCost(tree: TreeCost, format: CostFormat): string {
  if (format === "json") return `${JSON.stringify(treeCostJson(tree), null, 2)}\n`;
  if (format === "csv") return treeCostCsv(tree);
  return treeCostText(tree);
}
