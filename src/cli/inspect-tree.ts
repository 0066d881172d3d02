/**
 * `subagent-wrapper inspect <tree directory>`: the folder the extension keeps per root
 * session (`<base>/<root session id>/`, which the demo and pi's exit line print). Reads every
 * agent's record and each of its runs' result (or, for a run still going, its events), and
 * shows the whole tree: path, nickname, status, role, model, runs with outcome and duration,
 * and the worktree, branch and latest head of an isolated agent. Reads files only; never throws for what
 * a tree can look like (a record being replaced, a run without result).
 */
import fs from "node:fs";
import path from "node:path";
import { recordBranchFacts } from "../contracts/bring.js";
import { RUN_FILES, TREE_FILES } from "../contracts/layout.js";
import { RUN_STATUSES, type RunStatus } from "../contracts/result.js";
import { statusForOutcome } from "../contracts/tree.js";
import { isVerification } from "../contracts/verify.js";
import { isRecord } from "../lib/values.js";
import { detachedJson, formatDetached, readDetached } from "./inspect-detached.js";
import { formatTreeDialogs, readTreeDialogs } from "./inspect-dialogs.js";
import { runState } from "./inspect-format.js";
import {
  formatTreeInspection,
  type TreeAgentView,
  type TreeInspection,
  type TreeRunView,
  treeInspectionJson,
} from "./inspect-tree-format.js";
import { locateRun, readRunSnapshot } from "./run-files.js";
import { agentRecordFiles, readJsonFileSync } from "./tree-records.js";

/** A tree directory holds tree.json (who the root is) or, at least, the agents' folder. */
export function isTreeDirectory(dir: string): boolean {
  try {
    if (!fs.statSync(dir).isDirectory()) return false;
  } catch {
    return false;
  }
  return fs.existsSync(path.join(dir, TREE_FILES.marker)) || fs.existsSync(path.join(dir, TREE_FILES.agents));
}

/** result.json's usage as the tree view counts it; nothing when it holds none. */
function usageOf(usage: unknown): { tokens?: number; cost?: number } {
  if (!isRecord(usage)) return {};
  return {
    ...(typeof usage.totalTokens === "number" && { tokens: usage.totalTokens }),
    ...(isRecord(usage.cost) && typeof usage.cost.total === "number" && { cost: usage.cost.total }),
  };
}

/** Statuses of a record whose turn has not ended, as far as the record knows. */
const UNENDED = new Set(["running", "pending_init"]);

/**
 * What the runs say when the record is behind them: a turn that ended with no root to write
 * it down (a detached child that finished on its own, one `stop` ended) leaves the record
 * `running` with its old usage, while its result.json holds the outcome and the turn's usage.
 * The record's status stands unless its last run has a result; usage is the larger of the
 * record's sum and the results' sum (a root that did update the record has both equal).
 */
function reconcileWithRuns(
  status: string,
  tokens: number,
  cost: number,
  runs: readonly TreeRunView[],
): { status: string; tokens: number; cost: number } {
  const last = runs.at(-1);
  const ended = last !== undefined && (RUN_STATUSES as readonly string[]).includes(last.status);
  const sum = (key: "tokens" | "cost") => runs.reduce((total, run) => total + (run[key] ?? 0), 0);
  return {
    status: UNENDED.has(status) && ended ? statusForOutcome(last.status as RunStatus) : status,
    tokens: Math.max(tokens, sum("tokens")),
    cost: Math.max(cost, sum("cost")),
  };
}

function runView(agentDir: string, name: string): TreeRunView {
  const dir = path.join(agentDir, TREE_FILES.runs, name);
  const result = readJsonFileSync(path.join(dir, RUN_FILES.result)).value;
  if (isRecord(result) && typeof result.status === "string") {
    return {
      name,
      dir,
      status: result.status,
      ...(typeof result.durationMs === "number" && { durationMs: result.durationMs }),
      ...(typeof result.errorMessage === "string" && { reason: result.errorMessage }),
      ...(typeof result.abortReason === "string" &&
        result.errorMessage === undefined && { reason: result.abortReason }),
      ...usageOf(result.usage),
    };
  }
  try {
    const snapshot = readRunSnapshot(locateRun(dir));
    const state = runState(snapshot);
    if (state.kind === "running")
      return { name, dir, status: "running", ...(state.elapsedMs !== undefined && { durationMs: state.elapsedMs }) };
    if (state.kind === "ended") return { name, dir, status: state.status };
    if (state.kind === "stopped")
      return { name, dir, status: "stopped", reason: "its wrapper ended without result.json" };
    return { name, dir, status: "not started" };
  } catch {
    return { name, dir, status: "not started" };
  }
}

function agentView(dir: string, record: Record<string, unknown>): TreeAgentView {
  const text = (key: string) => (typeof record[key] === "string" ? (record[key] as string) : undefined);
  const runs = Array.isArray(record.runs) ? record.runs.filter((run): run is string => typeof run === "string") : [];
  const worktree = isRecord(record.worktree) ? record.worktree : undefined;
  const usage = isRecord(record.usage) ? record.usage : {};
  const runViews = runs.map((name) => runView(dir, name));
  const counted = reconcileWithRuns(
    text("status") ?? "?",
    typeof usage.totalTokens === "number" ? usage.totalTokens : 0,
    isRecord(usage.cost) && typeof usage.cost.total === "number" ? usage.cost.total : 0,
    runViews,
  );
  return {
    path: text("path") ?? "?",
    parent: text("parent") ?? "",
    dir,
    nickname: text("nickname") ?? "?",
    status: counted.status,
    health: text("health") ?? "?",
    role: text("role") ?? "default",
    model: text("model") ?? "?",
    reasoning: text("reasoning") ?? "?",
    ...(text("lastOutcome") && { lastOutcome: text("lastOutcome") }),
    ...(text("lastReason") && { lastReason: text("lastReason") }),
    ...(text("lastTurnStatus") && { lastTurnStatus: text("lastTurnStatus") }),
    ...(isVerification(record.lastVerification) && { lastVerification: record.lastVerification }),
    ...(worktree && {
      worktree: {
        ...(typeof worktree.path === "string" && { path: worktree.path }),
        ...(typeof worktree.branch === "string" && { branch: worktree.branch }),
        ...(recordBranchFacts(worktree) && { facts: recordBranchFacts(worktree) }),
      },
    }),
    spawnSeq: typeof record.spawnSeq === "number" ? record.spawnSeq : Number.MAX_SAFE_INTEGER,
    tokens: counted.tokens,
    cost: counted.cost,
    runs: runViews,
  };
}

/** Every agent of the tree in spawn order, and the records that could not be read. */
export function readTree(treeDir: string): TreeInspection {
  const agents: TreeAgentView[] = [];
  const problems: string[] = [];
  for (const { dir, file, value, error } of agentRecordFiles(treeDir)) {
    if (error) problems.push(`${file} ${error}`);
    else if (isRecord(value)) agents.push(agentView(dir, value));
  }
  agents.sort((a, b) => a.spawnSeq - b.spawnSeq);
  const marker = readJsonFileSync(path.join(treeDir, TREE_FILES.marker)).value;
  const rootSession = isRecord(marker) && typeof marker.rootSession === "string" ? marker.rootSession : undefined;
  const createdAt = isRecord(marker) && typeof marker.createdAt === "string" ? marker.createdAt : undefined;
  return { dir: treeDir, ...(rootSession && { rootSession }), ...(createdAt && { createdAt }), agents, problems };
}

/** Prints the tree; exit 0, or 1 when an agent's record is unreadable. */
export function inspectTree(treeDir: string, flags: { json?: boolean }): number {
  const tree = readTree(treeDir);
  // Durable children: who owns the tree, and the turns that run without an owner.
  const detached = readDetached(treeDir);
  // Every dialog a child opened and who answered it.
  const dialogs = readTreeDialogs(treeDir);
  const dialogLines = formatTreeDialogs(dialogs);
  process.stdout.write(
    flags.json
      ? `${JSON.stringify({ ...treeInspectionJson(tree), detached: detachedJson(detached), dialogs: dialogs.records }, null, 2)}\n`
      : `${formatTreeInspection(tree)}${dialogLines.length > 0 ? `${dialogLines.join("\n")}\n` : ""}${formatDetached(detached, treeDir)}`,
  );
  return tree.problems.length > 0 ? 1 : 0;
}
