/**
 * The tree as a person sees it in interactive pi: a status line in the footer and a widget
 * above the editor listing every agent with its nickname, status, model, elapsed time,
 * current tool, usage and cost (rolled up per subtree). Rendering is pure (plain strings,
 * which also travel over RPC); `TreeDisplay` refreshes it on an unref'd timer that
 * `stop()` clears, so pi can always exit.
 */
import type { AgentStatus } from "../../contracts/tree.js";
import { addTotals, emptyTotals, formatCost, type UsageTotals, usageTotals } from "../../contracts/usage.js";
import type { TreeBudget } from "../progress/budget.js";
import { currentTool } from "../progress/events-tail.js";
import type { AgentProgress } from "../progress/progress.js";

export const DISPLAY_KEY = "pi-subagents";
/** pi shows at most 10 widget lines; one is the header. */
const MAX_AGENT_LINES = 9;

export function formatTokens(n: number): string {
  if (n < 1000) return `${n}`;
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

export function formatElapsed(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, "0")}m`;
}

export function formatUsage(totals: UsageTotals): string {
  return `${formatTokens(totals.total_tokens)} tok · ${formatCost(totals.cost)}`;
}

/** Depth below `self` (a direct child is 1). */
function depthBelow(self: string, agentPath: string): number {
  return agentPath.slice(self.length).split("/").length - 1;
}

function isActive(status: AgentStatus): boolean {
  return status === "running" || status === "pending_init";
}

/** One agent's line without its tree prefix. */
export function describeAgent(agent: AgentProgress): string {
  const { record } = agent;
  const parts = [`${record.taskName} (${record.nickname})`, record.status === "pending_init" ? "queued" : record.status, record.model];
  if (agent.queuePosition !== undefined) parts[1] = `queued #${agent.queuePosition}`;
  if (agent.elapsedMs !== undefined) parts.push(formatElapsed(agent.elapsedMs));
  const tool = agent.run && record.status === "running" ? currentTool(agent.run) : undefined;
  if (agent.run?.retrying && record.status === "running") parts.push("retrying");
  else if (tool) parts.push(tool);
  if (agent.run && agent.run.turns > 0) parts.push(`${agent.run.turns} turn${agent.run.turns === 1 ? "" : "s"}`);
  const own = usageTotals(agent.usage);
  parts.push(formatUsage(own));
  if (agent.subtreeUsage.total_tokens !== own.total_tokens || agent.subtreeUsage.cost !== own.cost) {
    parts.push(`subtree ${formatUsage(agent.subtreeUsage)}`);
  }
  return parts.join(" · ");
}

/** Agents in tree order (each followed by its descendants), with their depth below `self`. */
function treeOrder(self: string, agents: AgentProgress[]): Array<{ agent: AgentProgress; depth: number; last: boolean }> {
  const byParent = new Map<string, AgentProgress[]>();
  for (const agent of agents) byParent.set(agent.record.parent, [...(byParent.get(agent.record.parent) ?? []), agent]);
  const known = new Set(agents.map((a) => a.record.path));
  const out: Array<{ agent: AgentProgress; depth: number; last: boolean }> = [];
  const visit = (parent: string) => {
    const children = byParent.get(parent) ?? [];
    children.forEach((agent, i) => {
      out.push({ agent, depth: depthBelow(self, agent.record.path), last: i === children.length - 1 });
      visit(agent.record.path);
    });
  };
  visit(self);
  // Agents whose parent is not in the list (a path_prefix view) still show, at their depth.
  for (const agent of agents) {
    if (!out.some((o) => o.agent === agent) && !known.has(agent.record.parent)) {
      out.push({ agent, depth: depthBelow(self, agent.record.path), last: true });
      visit(agent.record.path);
    }
  }
  return out;
}

export function summarize(agents: AgentProgress[]): { running: number; queued: number; done: number; total: UsageTotals } {
  const total = emptyTotals();
  let running = 0;
  let queued = 0;
  for (const agent of agents) {
    addTotals(total, usageTotals(agent.usage));
    if (agent.record.status === "running") running += 1;
    else if (agent.record.status === "pending_init") queued += 1;
  }
  return { running, queued, done: agents.length - running - queued, total };
}

function budgetText(budget: TreeBudget | undefined): string {
  if (!budget) return "";
  const limits = [budget.tokens !== undefined && `${formatTokens(budget.tokens)} tok`, budget.cost !== undefined && formatCost(budget.cost)].filter(Boolean);
  return limits.length ? ` (budget ${limits.join(" / ")})` : "";
}

/** The footer status: counts and the total usage of the agents below this one. */
export function statusLine(agents: AgentProgress[], budget?: TreeBudget): string | undefined {
  if (agents.length === 0) return undefined;
  const { running, queued, done, total } = summarize(agents);
  const counts = [running && `${running} running`, queued && `${queued} queued`, done && `${done} done`].filter(Boolean).join(", ");
  return `agents: ${counts} · ${formatUsage(total)}${budgetText(budget)}`;
}

/** The widget lines: a header, then the tree (running and queued agents kept first when it is cut). */
export function widgetLines(self: string, agents: AgentProgress[], budget?: TreeBudget): string[] | undefined {
  if (agents.length === 0) return undefined;
  const ordered = treeOrder(self, agents);
  let shown = ordered;
  if (ordered.length > MAX_AGENT_LINES) {
    const keep = new Set(
      [...ordered]
        .sort((a, b) => Number(isActive(b.agent.record.status)) - Number(isActive(a.agent.record.status)))
        .slice(0, MAX_AGENT_LINES - 1)
        .map((o) => o.agent),
    );
    shown = ordered.filter((o) => keep.has(o.agent));
  }
  const { running, total } = summarize(agents);
  const lines = [`subagents · ${agents.length} agent${agents.length === 1 ? "" : "s"}, ${running} running · ${formatUsage(total)}${budgetText(budget)}`];
  for (const { agent, depth, last } of shown) lines.push(`${"  ".repeat(Math.max(0, depth - 1))}${last ? "└─" : "├─"} ${describeAgent(agent)}`);
  if (shown.length < ordered.length) lines.push(`   … ${ordered.length - shown.length} more (list_agents shows every agent)`);
  return lines;
}

/** The part of pi's UI the display uses (ctx.ui in interactive and RPC mode). */
export interface DisplayUi {
  setStatus(key: string, text: string | undefined): void;
  setWidget(key: string, lines: string[] | undefined): void;
}

export class TreeDisplay {
  private timer: NodeJS.Timeout | undefined;
  private refreshing = false;
  private stopped = false;
  private lastStatus: string | undefined;
  private lastWidget: string | undefined;

  constructor(
    private readonly ui: DisplayUi,
    private readonly self: string,
    private readonly snapshot: () => Promise<AgentProgress[]>,
    private readonly budget: () => TreeBudget | undefined = () => undefined,
  ) {}

  start(intervalMs: number): void {
    this.timer = setInterval(() => void this.refresh(), intervalMs);
    // The display never keeps pi alive; stop() clears it anyway on session_shutdown.
    this.timer.unref();
    void this.refresh();
  }

  /** Redraws when something changed; one refresh at a time, none after stop(). */
  async refresh(): Promise<void> {
    if (this.refreshing || this.stopped) return;
    this.refreshing = true;
    try {
      const agents = await this.snapshot();
      if (this.stopped) return;
      let budget: TreeBudget | undefined;
      try {
        budget = this.budget();
      } catch {
        budget = undefined; // an invalid budget is reported by spawn_agent, not here
      }
      const status = statusLine(agents, budget);
      const widget = widgetLines(this.self, agents, budget);
      if (status !== this.lastStatus) this.ui.setStatus(DISPLAY_KEY, status);
      const widgetKey = widget?.join("\n");
      if (widgetKey !== this.lastWidget) this.ui.setWidget(DISPLAY_KEY, widget);
      this.lastStatus = status;
      this.lastWidget = widgetKey;
    } catch {
      // the tree directory is briefly unreadable (a restore, a removed run): next tick
    } finally {
      this.refreshing = false;
    }
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    try {
      if (this.lastStatus !== undefined) this.ui.setStatus(DISPLAY_KEY, undefined);
      if (this.lastWidget !== undefined) this.ui.setWidget(DISPLAY_KEY, undefined);
    } catch {
      // the UI is already gone
    }
  }
}
