/**
 * What `/agents` says about one agent: status, model, usage, its run folder (and the CLI
 * command that inspects it), the last lines of its live transcript and the head of its
 * latest report; and which actions the person may take on it from this process (only a
 * direct child can be interrupted, closed or followed up here). Pure: the files' contents
 * come in as data.
 */
import { branchFactsText, recordBranchFacts } from "../../contracts/bring.js";
import { type AgentRecordV1, LIMITS } from "../../contracts/tree.js";
import { usageTotals } from "../../contracts/usage.js";
import { describeVerification } from "../../contracts/verify.js";
import { currentTool } from "../progress/events-tail.js";
import { limitsUsed } from "../progress/limits-used.js";
import type { AgentProgress } from "../progress/progress.js";
import { modelInUse } from "../turns/fallback-turns.js";
import { mergeHint } from "../turns/worktree-turns.js";
import { type Painter, paintStatus, plain } from "./paint.js";
import { formatElapsed, formatUsage } from "./widget.js";

/** How many transcript lines and report lines the view shows. */
export const TRANSCRIPT_LINES = 8;
export const REPORT_LINES = 6;
const LINE_CHARS = 160;

export interface AgentFiles {
  /** The latest run's folder, when the agent has run. */
  runDir?: string;
  /** The tail of that run's transcript.md. */
  transcriptTail?: string;
  /** The latest stored report. */
  report?: { text: string; turn?: number; totalChars: number };
}

export type AgentAction = "follow up" | "message" | "interrupt" | "close" | "back";

/** A worktree the record may carry (an isolated child). */
function worktreeOf(record: AgentRecordV1): { path?: string; branch?: string } | undefined {
  const worktree = (record as { worktree?: unknown }).worktree;
  return typeof worktree === "object" && worktree !== null
    ? (worktree as { path?: string; branch?: string })
    : undefined;
}

function cut(line: string): string {
  return line.length > LINE_CHARS ? `${line.slice(0, LINE_CHARS - 1)}…` : line;
}

/** The last `count` non-empty lines of a text. */
export function tailLines(text: string, count: number): string[] {
  return text
    .split("\n")
    .map((line) => line.trimEnd())
    .filter((line) => line.trim() !== "")
    .slice(-count)
    .map(cut);
}

/** The actions open to this process on the agent, most useful first; "back" always last. */
export function agentActions(record: AgentRecordV1, isDirectChild: boolean): AgentAction[] {
  if (!isDirectChild) return ["back"];
  const actions: AgentAction[] = [];
  if (record.status !== "shutdown") actions.push("follow up", "message");
  if (record.status === "running" || record.status === "pending_init") actions.push("interrupt");
  if (record.status !== "shutdown") actions.push("close");
  actions.push("back");
  return actions;
}

/** `status   running · healthy · turn 2 · 12s · in bash`, or how its last turn ended. */
function stateLine(agent: AgentProgress, p: Painter): string {
  const { record } = agent;
  const state = [paintStatus(p, record.status), record.health === "unhealthy" ? p.fg("error", "unhealthy") : "healthy"];
  if (agent.queuePosition !== undefined) state.push(`queued #${agent.queuePosition}`);
  if (agent.waitingFor) state.push(`waiting for ${agent.waitingFor}`);
  if (record.runs.length > 0) state.push(`turn ${record.runs.length}`);
  if (agent.elapsedMs !== undefined) state.push(formatElapsed(agent.elapsedMs));
  const tool = agent.run && record.status === "running" ? currentTool(agent.run) : undefined;
  if (tool) state.push(`in ${tool}`);
  if (record.status !== "running" && record.lastVerification) state.push(describeVerification(record.lastVerification));
  if (record.status !== "running" && record.lastOutcome && record.lastOutcome !== "completed") {
    state.push(
      `last turn ${record.lastOutcome}${record.lastReason ? `: ${cut(record.lastReason.replace(/\s+/g, " "))}` : ""}`,
    );
  }
  return `status   ${state.join(" · ")}`;
}

/** Its own usage, and its subtree's when that is more. */
function usageLine(agent: AgentProgress): string {
  const own = usageTotals(agent.usage);
  const subtree =
    agent.subtreeUsage.total_tokens !== own.total_tokens
      ? ` (with its subtree ${formatUsage(agent.subtreeUsage)})`
      : "";
  return `usage    ${formatUsage(own, "total")}${subtree}`;
}

/** A running turn's use against its limits: `limits   max_turns 3/10 · time_limit 42/1800 · wrapping up (max_turns)`. */
function limitsLine(agent: AgentProgress, turnLimitMs: number): string[] {
  if (agent.record.status !== "running" || !agent.run) return [];
  const { wrap_up, ...used } = limitsUsed(agent.record.limits, turnLimitMs, agent.run, agent.elapsedMs);
  const parts = Object.entries(used).map(([name, value]) => `${name} ${value}`);
  if (wrap_up) parts.push(`wrapping up (${wrap_up})`);
  return [`limits   ${parts.join(" · ")}`];
}

/**
 * Its worktree (when isolated: branch, folder, what the branch changes and how to bring it
 * in) and its latest run's folder with the command that inspects it.
 */
function placeLines(record: AgentRecordV1, files: AgentFiles, p: Painter): string[] {
  const lines: string[] = [];
  const worktree = worktreeOf(record);
  if (worktree?.branch || worktree?.path)
    lines.push(
      `worktree ${[worktree.branch && `branch ${worktree.branch}`, worktree.path].filter(Boolean).join(" at ")}`,
    );
  // What its latest turn left on the branch, and the command that brings it in (as its notice said).
  const facts = recordBranchFacts(worktree);
  if (facts) {
    lines.push(`         ${branchFactsText(facts)}`);
    const changed = (facts.changed_files_total ?? facts.changed_files.length) > 0;
    if (changed) lines.push(p.fg("dim", `         bring it in: ${mergeHint(facts.base_commit, facts.head_commit)}`));
  }
  if (files.runDir)
    lines.push(`run      ${files.runDir}`, p.fg("dim", `         subagent-wrapper inspect ${files.runDir}`));
  else lines.push("run      none yet (queued)");
  return lines;
}

/** The last lines of its transcript, live while it runs. */
function transcriptLines(record: AgentRecordV1, files: AgentFiles, p: Painter): string[] {
  const transcript = files.transcriptTail ? tailLines(files.transcriptTail, TRANSCRIPT_LINES) : [];
  if (transcript.length === 0) return [];
  return [
    record.status === "running" ? "live transcript (last lines):" : "transcript of its last turn (last lines):",
    ...transcript.map((line) => p.fg("dim", `  ${line}`)),
  ];
}

/** The head of its latest report, and how many lines more get_agent_report would page. */
function reportLines(files: AgentFiles, p: Painter): string[] {
  if (!files.report || files.report.text.trim() === "") return ["latest report: none yet"];
  const head = files.report.text.split("\n").filter((line) => line.trim() !== "");
  const shown = head.slice(0, REPORT_LINES).map((line) => `  ${cut(line)}`);
  const lines = [
    `latest report${files.report.turn !== undefined ? ` (turn ${files.report.turn})` : ""}, ${files.report.totalChars} chars:`,
    ...shown,
  ];
  if (head.length > shown.length)
    lines.push(p.fg("dim", `  … ${head.length - shown.length} more lines (get_agent_report pages it)`));
  return lines;
}

/** The detail text of one agent (the title of its action menu). */
export function agentDetails(
  agent: AgentProgress,
  files: AgentFiles,
  isDirectChild: boolean,
  p: Painter = plain,
  turnLimitMs: number = LIMITS.turnTimeoutMs,
): string[] {
  const { record } = agent;
  const inUse = modelInUse(record, agent.run?.model);
  const lines = [
    `${record.taskName} (${record.nickname}) · ${record.path}`,
    stateLine(agent, p),
    `model    ${inUse.model} · reasoning ${inUse.reasoning} · role ${record.role}`,
    usageLine(agent),
    ...limitsLine(agent, turnLimitMs),
    ...placeLines(record, files, p),
    ...transcriptLines(record, files, p),
    ...reportLines(files, p),
  ];
  if (!isDirectChild) lines.push(p.fg("dim", `its parent ${record.parent} can act on it; from here you can only look`));
  return lines;
}
