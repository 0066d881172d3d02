/**
 * Pure: what `subagent-wrapper inspect <tree directory>` prints — the tree drawn with
 * ├─ / └─, each agent with its nickname, role, status, model and reasoning, then one line per
 * run (its outcome, how long it took, why it did not complete) and the worktree and branch
 * of an isolated agent, with what its latest turn left on the branch and the command that
 * brings it in; and the same as JSON.
 */
import { type BranchFacts, branchFactsText, bringCommandLine } from "../contracts/bring.js";
import { formatCost } from "../contracts/usage.js";
import { describeCheck, describeVerification, type Verification } from "../contracts/verify.js";
import { FAIL_MARK, formatCount, formatDuration, plural } from "./text.js";

export interface TreeRunView {
  name: string;
  dir: string;
  /** result.json's status; `running`, `not started` or `stopped` for a run without one. */
  status: string;
  durationMs?: number;
  reason?: string;
  /** result.json's usage (tokens as pi counts them, cost in dollars), for a run that has one. */
  tokens?: number;
  cost?: number;
}

export interface TreeAgentView {
  path: string;
  parent: string;
  /** The agent's folder in the tree directory. */
  dir: string;
  nickname: string;
  status: string;
  health: string;
  role: string;
  model: string;
  reasoning: string;
  lastOutcome?: string;
  lastReason?: string;
  lastTurnStatus?: string;
  /** How its last turn's checks ended. */
  lastVerification?: Verification;
  /** An isolated agent's worktree; `facts` once a turn has ended (what its notice said of the branch). */
  worktree?: { path?: string; branch?: string; facts?: BranchFacts | undefined };
  spawnSeq: number;
  tokens: number;
  cost: number;
  runs: TreeRunView[];
}

export interface TreeInspection {
  dir: string;
  rootSession?: string;
  createdAt?: string;
  agents: TreeAgentView[];
  /** Records that could not be read, one line each. */
  problems: string[];
}

const REASON_CHARS = 160;

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > REASON_CHARS ? `${flat.slice(0, REASON_CHARS - 1)}…` : flat;
}

/** `2 completed, 1 errored` in the order statuses first appear. */
function statusCounts(agents: TreeAgentView[]): string {
  const counts = new Map<string, number>();
  for (const agent of agents) counts.set(agent.status, (counts.get(agent.status) ?? 0) + 1);
  return [...counts].map(([status, n]) => `${n} ${status === "pending_init" ? "queued" : status}`).join(", ");
}

function agentLine(agent: TreeAgentView): string {
  let status = agent.status === "pending_init" ? "queued" : agent.status;
  if (agent.status === "shutdown" && agent.lastTurnStatus) status += ` (last turn ${agent.lastTurnStatus})`;
  if (agent.health === "unhealthy") status += ", unhealthy";
  if (agent.lastVerification) status += `, ${describeVerification(agent.lastVerification)}`;
  return `${agent.path} · ${agent.nickname} · ${agent.role} · ${status} · ${agent.model} · ${agent.reasoning} · ${formatCount(agent.tokens)} tokens · ${formatCost(agent.cost)}`;
}

function runLine(run: TreeRunView): string {
  const took =
    run.durationMs === undefined
      ? ""
      : run.status === "running"
        ? ` for ${formatDuration(run.durationMs)} so far`
        : ` in ${formatDuration(run.durationMs)}`;
  return `${run.name} ${run.status}${took}${run.reason ? `: ${oneLine(run.reason)}` : ""}`;
}

function detailLines(agent: TreeAgentView): string[] {
  const lines: string[] = [];
  if (agent.worktree && (agent.worktree.branch || agent.worktree.path)) {
    lines.push(
      `worktree ${[agent.worktree.branch && `branch ${agent.worktree.branch}`, agent.worktree.path && `at ${agent.worktree.path}`].filter(Boolean).join(" ")}`,
    );
  }
  const facts = agent.worktree?.facts;
  if (facts) {
    lines.push(`         ${branchFactsText(facts)}`);
    if (hasChanges(facts))
      lines.push(`         bring it in: ${bringCommandLine(CLI_NAME, facts.base_commit, facts.head_commit)}`);
  }
  for (const check of agent.lastVerification?.checks ?? []) lines.push(`check ${describeCheck(check)}`);
  if (agent.runs.length === 0) lines.push("no run yet");
  else lines.push(...agent.runs.map(runLine));
  return lines;
}

/** The tree, drawn: agents whose parent is not in the tree hang from the root. */
export function treeDrawing(agents: TreeAgentView[]): string[] {
  const known = new Set(agents.map((agent) => agent.path));
  const rootOf = (agent: TreeAgentView) => (known.has(agent.parent) ? agent.parent : "/root");
  const children = new Map<string, TreeAgentView[]>();
  for (const agent of agents) children.set(rootOf(agent), [...(children.get(rootOf(agent)) ?? []), agent]);
  const out = ["/root"];
  const visit = (parent: string, pad: string) => {
    const kids = children.get(parent) ?? [];
    kids.forEach((agent, index) => {
      const last = index === kids.length - 1;
      out.push(`${pad}${last ? "└─" : "├─"} ${agentLine(agent)}`);
      const below = `${pad}${last ? "   " : "│  "}`;
      const hasChildren = (children.get(agent.path) ?? []).length > 0;
      for (const line of detailLines(agent)) out.push(`${below}${hasChildren ? "│  " : "   "}${line}`);
      visit(agent.path, below);
    });
  };
  visit("/root", "");
  return out;
}

export function formatTreeInspection(tree: TreeInspection): string {
  const out: string[] = [];
  const about = [tree.rootSession && `root session ${tree.rootSession}`, tree.createdAt && `created ${tree.createdAt}`]
    .filter(Boolean)
    .join(", ");
  out.push(`tree      ${tree.dir}${about ? `  (${about})` : ""}`);
  const tokens = tree.agents.reduce((sum, agent) => sum + agent.tokens, 0);
  const cost = tree.agents.reduce((sum, agent) => sum + agent.cost, 0);
  out.push(
    tree.agents.length === 0
      ? "agents    none yet"
      : `agents    ${plural(tree.agents.length, "agent")}: ${statusCounts(tree.agents)} · ${formatCount(tokens)} tokens · ${formatCost(cost)}`,
  );
  out.push("", ...treeDrawing(tree.agents));
  const latest = tree.agents.flatMap((agent) => agent.runs.slice(-1)).at(-1);
  if (latest) out.push("", `one run in detail: subagent-wrapper inspect ${latest.dir}`);
  for (const problem of tree.problems) out.push(`${FAIL_MARK} ${problem}`);
  return `${out.join("\n")}\n`;
}

/** The person runs this CLI by this name: the command to bring work in is shown with it. */
const CLI_NAME = "subagent-wrapper";

const hasChanges = (facts: BranchFacts): boolean => (facts.changed_files_total ?? facts.changed_files.length) > 0;

/** A worktree in `--json`: path and branch, and once a turn has ended the notice's names for the branch's facts. */
function worktreeJson(worktree: NonNullable<TreeAgentView["worktree"]>): Record<string, unknown> {
  const { facts, ...place } = worktree;
  if (!facts) return place;
  return {
    ...place,
    ...facts,
    ...(hasChanges(facts) && { merge_hint: bringCommandLine(CLI_NAME, facts.base_commit, facts.head_commit) }),
  };
}

/** The machine-readable form of `inspect --json` on a tree directory. */
export function treeInspectionJson(tree: TreeInspection): Record<string, unknown> {
  return {
    kind: "tree",
    tree: tree.dir,
    root_session: tree.rootSession ?? null,
    created_at: tree.createdAt ?? null,
    agents: tree.agents.map((agent) => ({
      agent_name: agent.path,
      nickname: agent.nickname,
      status: agent.status,
      health: agent.health,
      role: agent.role,
      model: agent.model,
      reasoning: agent.reasoning,
      last_outcome: agent.lastOutcome ?? null,
      last_reason: agent.lastReason ?? null,
      verification: agent.lastVerification ?? null,
      worktree: agent.worktree ? worktreeJson(agent.worktree) : null,
      folder: agent.dir,
      usage: { total_tokens: agent.tokens, cost: agent.cost },
      runs: agent.runs.map((run) => ({
        name: run.name,
        dir: run.dir,
        status: run.status,
        duration_ms: run.durationMs ?? null,
        reason: run.reason ?? null,
      })),
    })),
    problems: tree.problems,
  };
}
