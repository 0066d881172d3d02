/**
 * The tree as a person sees it in interactive pi: a status line in the footer and, while any
 * agent works or waits for a slot, a widget above the editor listing every agent with its
 * nickname, status, model, elapsed time, current tool, counters and cost (rolled up per
 * subtree). Once every agent has ended the widget folds away and the status line alone
 * tells how they ended. Rendering is pure (strings, painted by an injected Painter);
 * `TreeDisplay` refreshes it on an unref'd timer that `stop()` clears, so pi can always exit.
 */
import type { AgentRecordV1, AgentStatus } from "../../contracts/tree.js";
import { addTotals, emptyTotals, formatCost, type UsageTotals, usageTotals } from "../../contracts/usage.js";
import { type Clock, systemClock, type TimerHandle } from "../../lib/clock.js";
import type { TreeBudget } from "../progress/budget.js";
import { currentTool } from "../progress/events-tail.js";
import type { AgentProgress } from "../progress/progress.js";
import { modelInUse } from "../turns/fallback-turns.js";
import { type Painter, paintStatus, plain, STATUS_ORDER, statusWord } from "./paint.js";

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

/** `1.2k tok · $0.0036`; `label` says what the tokens count (`total`: every turn of the agent). */
export function formatUsage(totals: UsageTotals, label = ""): string {
  return `${formatTokens(totals.total_tokens)} tok${label ? ` ${label}` : ""} · ${formatCost(totals.cost)}`;
}

/** Depth below `self` (a direct child is 1). */
function depthBelow(self: string, agentPath: string): number {
  return agentPath.slice(self.length).split("/").length - 1;
}

export function isActive(status: AgentStatus): boolean {
  return status === "running" || status === "pending_init";
}

/** How much of a child's latest notify its line shows. */
const NOTIFY_CHARS = 60;

/**
 * One agent's line without its tree prefix. The counters say what they count: `turn 2` is the
 * agent's second turn (a follow-up), `3 calls this run` the tool calls of the turn now
 * running, `tok total` every turn's tokens.
 */
export function describeAgent(agent: AgentProgress, p: Painter = plain): string {
  const { record } = agent;
  const running = record.status === "running";
  const queued = agent.waitingFor
    ? `queued #${agent.queuePosition} for ${agent.waitingFor}`
    : `queued #${agent.queuePosition}`;
  const status = agent.queuePosition !== undefined ? queued : statusWord(record.status);
  const model = modelInUse(record, agent.run?.model).model;
  const parts = [`${record.taskName} (${record.nickname})`, paintStatus(p, record.status, status), model];
  if (agent.elapsedMs !== undefined) parts.push(formatElapsed(agent.elapsedMs));
  const tool = agent.run && running ? currentTool(agent.run) : undefined;
  if (agent.run?.retrying && running) parts.push(p.fg("warning", "retrying"));
  else if (tool) parts.push(p.fg("toolTitle", tool));
  if (record.runs.length > 1) parts.push(`turn ${record.runs.length}`);
  const notified = running ? agent.run?.notified?.message.replace(/\s+/g, " ").trim() : undefined;
  if (notified)
    parts.push(p.fg("muted", notified.length > NOTIFY_CHARS ? `${notified.slice(0, NOTIFY_CHARS - 1)}…` : notified));
  if (running && agent.run && agent.run.toolCalls > 0)
    parts.push(`${agent.run.toolCalls} call${agent.run.toolCalls === 1 ? "" : "s"} this run`);
  const own = usageTotals(agent.usage);
  parts.push(formatUsage(own, "total"));
  if (agent.subtreeUsage.total_tokens !== own.total_tokens || agent.subtreeUsage.cost !== own.cost) {
    parts.push(`subtree ${formatUsage(agent.subtreeUsage)}`);
  }
  return parts.join(" · ");
}

export interface TreeRow {
  agent: AgentProgress;
  depth: number;
  last: boolean;
  /** `├─ ` / `└─ `, after the continuation of its ancestors (`│ ` below a parent that has later siblings). */
  prefix: string;
}

/** Agents in tree order (each followed by its descendants), with their depth below `self` and their prefix. */
export function treeOrder(self: string, agents: AgentProgress[]): TreeRow[] {
  const byParent = new Map<string, AgentProgress[]>();
  for (const agent of agents) byParent.set(agent.record.parent, [...(byParent.get(agent.record.parent) ?? []), agent]);
  const known = new Set(agents.map((a) => a.record.path));
  const out: TreeRow[] = [];
  const visit = (parent: string, pad: string) => {
    const children = byParent.get(parent) ?? [];
    children.forEach((agent, i) => {
      const last = i === children.length - 1;
      out.push({ agent, depth: depthBelow(self, agent.record.path), last, prefix: `${pad}${last ? "└─" : "├─"} ` });
      visit(agent.record.path, `${pad}${last ? "  " : "│ "}`);
    });
  };
  visit(self, "");
  // Agents whose parent is not in the list (a path_prefix view) still show, at their depth.
  for (const agent of agents) {
    if (!out.some((o) => o.agent === agent) && !known.has(agent.record.parent)) {
      const pad = "  ".repeat(Math.max(0, depthBelow(self, agent.record.path) - 1));
      out.push({ agent, depth: depthBelow(self, agent.record.path), last: true, prefix: `${pad}└─ ` });
      visit(agent.record.path, `${pad}  `);
    }
  }
  return out;
}

/** How many agents have each status, and their usage in total. */
export function summarize(agents: AgentProgress[]): { counts: Map<AgentStatus, number>; total: UsageTotals } {
  const total = emptyTotals();
  const counts = new Map<AgentStatus, number>();
  for (const agent of agents) {
    addTotals(total, usageTotals(agent.usage));
    counts.set(agent.record.status, (counts.get(agent.record.status) ?? 0) + 1);
  }
  return { counts, total };
}

/** `2 running, 1 queued, 3 completed, 1 errored`, each status in its colour. */
export function statusCounts(counts: Map<AgentStatus, number>, p: Painter = plain): string {
  return STATUS_ORDER.filter((status) => counts.get(status))
    .map((status) => paintStatus(p, status, `${counts.get(status)} ${statusWord(status)}`))
    .join(", ");
}

function budgetText(budget: TreeBudget | undefined): string {
  if (!budget) return "";
  const limits = [
    budget.tokens !== undefined && `${formatTokens(budget.tokens)} tok`,
    budget.cost !== undefined && formatCost(budget.cost),
  ].filter(Boolean);
  return limits.length ? ` (budget ${limits.join(" / ")})` : "";
}

/** The footer status: how many agents below this one have each status, and their total usage. */
export function statusLine(agents: AgentProgress[], budget?: TreeBudget, p: Painter = plain): string | undefined {
  if (agents.length === 0) return undefined;
  const { counts, total } = summarize(agents);
  return `agents: ${statusCounts(counts, p)} · ${formatUsage(total)}${budgetText(budget)}`;
}

/** Every agent's line with its tree prefix, in tree order (what /agents lists). */
export function treeLines(self: string, agents: AgentProgress[], p: Painter = plain): string[] {
  return treeOrder(self, agents).map((row) => `${row.prefix}${describeAgent(row.agent, p)}`);
}

/**
 * The widget lines: a header, then the tree (running and queued agents kept first when it is
 * cut). Undefined once no agent works or waits: the widget folds away to the status line.
 */
export function widgetLines(
  self: string,
  agents: AgentProgress[],
  budget?: TreeBudget,
  p: Painter = plain,
): string[] | undefined {
  if (!agents.some((agent) => isActive(agent.record.status))) return undefined;
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
  const { counts, total } = summarize(agents);
  const lines = [
    `subagents · ${agents.length} agent${agents.length === 1 ? "" : "s"}: ${statusCounts(counts, p)} · ${formatUsage(total, "total")}${budgetText(budget)}`,
  ];
  for (const row of shown) lines.push(`${row.prefix}${describeAgent(row.agent, p)}`);
  if (shown.length < ordered.length)
    lines.push(p.fg("dim", `   … ${ordered.length - shown.length} more (/agents lists every agent)`));
  return lines;
}

/** A line with how many child dialogs wait for the person, when any do. */
export function withDialogsWaiting(line: string, waiting: number): string {
  return waiting > 0 ? `${line} · ${waiting} dialog${waiting === 1 ? "" : "s"} waiting` : line;
}

/** The part of pi's UI the display uses (ctx.ui in interactive and RPC mode). */
export interface DisplayUi {
  setStatus(key: string, text: string | undefined): void;
  setWidget(key: string, lines: string[] | undefined): void;
}

export class TreeDisplay {
  private timer: TimerHandle | undefined;
  private refreshing = false;
  private stopped = false;
  /** A final frame is up (pi is exiting): the timer must not draw over it. */
  private frozen = false;
  private lastStatus: string | undefined;
  private lastWidget: string | undefined;
  private lastAgents: AgentProgress[] = [];
  /** How many child dialogs wait for the person (turns/dialogs/dialogs.ts): counted on the status line and the widget. */
  dialogsWaiting: () => number = () => 0;

  constructor(
    private readonly ui: DisplayUi,
    private readonly self: string,
    private readonly snapshot: () => Promise<AgentProgress[]>,
    private readonly budget: () => TreeBudget | undefined = () => undefined,
    private readonly painter: () => Painter = () => plain,
    /** Times the refreshes (tests move a fake one). */
    private readonly clock: Clock = systemClock,
  ) {}

  start(intervalMs: number): void {
    // A clock's interval never keeps pi alive; stop() clears it anyway on session_shutdown.
    this.timer = this.clock.setInterval(() => void this.refresh(), intervalMs);
    void this.refresh();
  }

  /** Redraws when something changed; one refresh at a time, none after stop() or freeze(). */
  async refresh(): Promise<void> {
    if (this.refreshing || this.stopped || this.frozen) return;
    this.refreshing = true;
    try {
      const agents = await this.snapshot();
      if (this.stopped || this.frozen) return;
      this.lastAgents = agents;
      let budget: TreeBudget | undefined;
      try {
        budget = this.budget();
      } catch {
        budget = undefined; // an invalid budget is reported by spawn_agent, not here
      }
      const p = this.painter();
      const waiting = this.dialogsWaiting();
      const status = statusLine(agents, budget, p);
      const widget = widgetLines(this.self, agents, budget, p);
      if (widget?.[0] !== undefined) widget[0] = withDialogsWaiting(widget[0], waiting);
      this.draw(status === undefined ? status : withDialogsWaiting(status, waiting), widget);
    } catch {
      // the tree directory is briefly unreadable (a restore, a removed run): next tick
    } finally {
      this.refreshing = false;
    }
  }

  /** The agents' records as last drawn (what a key press that quits pi can act on at once). */
  lastRecords(): AgentRecordV1[] {
    return this.lastAgents.map((agent) => agent.record);
  }

  /** The last frame while pi exits: no agent is drawn running any more, the status says why. */
  freeze(status: string): void {
    if (this.stopped) return;
    this.frozen = true;
    this.draw(status, undefined);
  }

  private draw(status: string | undefined, widget: string[] | undefined): void {
    try {
      if (status !== this.lastStatus) this.ui.setStatus(DISPLAY_KEY, status);
      const widgetKey = widget?.join("\n");
      if (widgetKey !== this.lastWidget) this.ui.setWidget(DISPLAY_KEY, widget);
      this.lastStatus = status;
      this.lastWidget = widgetKey;
    } catch {
      // the UI is going away
    }
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.clock.clearInterval(this.timer);
    this.timer = undefined;
    try {
      if (this.lastStatus !== undefined && !this.frozen) this.ui.setStatus(DISPLAY_KEY, undefined);
      if (this.lastWidget !== undefined) this.ui.setWidget(DISPLAY_KEY, undefined);
    } catch {
      // the UI is already gone
    }
  }
}
