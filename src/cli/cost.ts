/**
 * `subagent-wrapper cost <tree dir> [--json | --csv]`: what each agent of a tree cost, and each
 * subtree, outside pi. The numbers are the ones list_agents gives the model: an agent's usage
 * is its record's (the finished turns, which its parent adds from each result.json) plus, for
 * a turn still running, what its events.jsonl shows so far; a subtree's is rolled up by the
 * same code (contracts/usage.ts `rollUpBy`). Reads files only, tolerantly: a damaged record is
 * one problem line, never a stack trace.
 */
import path from "node:path";
import { RUN_FILES, TREE_FILES } from "../contracts/layout.js";
import { addUsage, emptyUsage, normalizeUsage, rollUpBy, type Usage } from "../contracts/usage.js";
import { readRegularFileSync } from "../lib/regular-file.js";
import { isRecord } from "../lib/values.js";
import { type CostFormat, formatTreeCost } from "./cost-format.js";
import { isTreeDirectory } from "./inspect-tree.js";
import { agentRecordFiles, readJsonFileSync } from "./tree-records.js";

export interface AgentCost {
  path: string;
  role: string;
  status: string;
  /** Every model its turns ran on, in the order first used (fallbacks included). */
  models: string[];
  /** Its turns: the first one and each follow-up (one run each). */
  turns: number;
  /** Model requests over those turns (failed attempts included). */
  modelRequests: number;
  /** Turns sent back to be repaired after a failed check: always 0 until verification exists. */
  repairs: number;
  usage: Usage;
  /** Wall time of its turns, summed (a running turn: so far). */
  wallMs: number;
  /** Its usage plus every agent's below it. */
  subtree: Usage;
}

export interface TreeCost {
  dir: string;
  agents: AgentCost[];
  /** Every agent's usage summed (the root's own conversation is pi's, not here). */
  total: Usage;
  /** Records that could not be read, one line each. */
  problems: string[];
}

const text = (value: unknown, fallback: string): string => (typeof value === "string" && value ? value : fallback);

function addModel(models: string[], model: unknown): void {
  if (typeof model === "string" && model && !models.includes(model)) models.push(model);
}

/** What one turn adds to its agent: usage (a running turn's only), model requests, models, wall time. */
interface TurnCost {
  usage?: Usage;
  requests: number;
  models: string[];
  wallMs: number;
}

/** A finished turn, from its result.json (its usage is already in the record). */
function finishedTurn(result: Record<string, unknown>): TurnCost {
  const models: string[] = [];
  if (Array.isArray(result.attempts))
    for (const attempt of result.attempts) addModel(models, isRecord(attempt) && attempt.model);
  addModel(models, result.resolvedModel ?? result.requestedModel);
  return {
    requests: typeof result.turns === "number" ? result.turns : 0,
    models,
    wallMs: typeof result.durationMs === "number" ? result.durationMs : 0,
  };
}

/** A running turn so far, from its events.jsonl. */
function runningTurn(runDir: string, now: number): TurnCost {
  const usage = emptyUsage();
  const models: string[] = [];
  let requests = 0;
  let startedAt: number | undefined;
  const read = readRegularFileSync(path.join(runDir, RUN_FILES.events));
  for (const line of "text" in read ? read.text.split("\n") : []) {
    let event: unknown;
    try {
      event = JSON.parse(line);
    } catch {
      continue; // a line being written, or a blank one
    }
    if (!isRecord(event)) continue;
    if (event.type === "run_start" && typeof event.ts === "number") startedAt = event.ts;
    if (event.type !== "assistant_text") continue;
    requests += 1;
    if (isRecord(event.usage)) addUsage(usage, normalizeUsage(event.usage));
    addModel(models, event.model);
  }
  return { usage, requests, models, wallMs: startedAt === undefined ? 0 : Math.max(0, now - startedAt) };
}

function agentCost(agentDir: string, record: Record<string, unknown>, now: number): Omit<AgentCost, "subtree"> {
  const runs = Array.isArray(record.runs) ? record.runs.filter((run): run is string => typeof run === "string") : [];
  const status = text(record.status, "?");
  const usage = isRecord(record.usage) ? normalizeUsage(record.usage) : emptyUsage();
  const models: string[] = [];
  let modelRequests = 0;
  let wallMs = 0;
  runs.forEach((name, index) => {
    const runDir = path.join(agentDir, TREE_FILES.runs, name);
    const result = readJsonFileSync(path.join(runDir, RUN_FILES.result)).value;
    // As list_agents counts it: the record holds finished turns only, a running one is added.
    const turn = isRecord(result)
      ? finishedTurn(result)
      : status === "running" && index === runs.length - 1
        ? runningTurn(runDir, now)
        : undefined;
    if (!turn) return;
    if (turn.usage) addUsage(usage, turn.usage);
    for (const model of turn.models) addModel(models, model);
    modelRequests += turn.requests;
    wallMs += turn.wallMs;
  });
  if (models.length === 0) addModel(models, record.model);
  return {
    path: text(record.path, "?"),
    role: text(record.role, "default"),
    status,
    models,
    turns: runs.length,
    modelRequests,
    repairs: 0,
    usage,
    wallMs,
  };
}

/** Every agent of the tree in spawn order with its cost and its subtree's; the records that could not be read. */
export function readTreeCost(treeDir: string, now = Date.now()): TreeCost {
  const found: { seq: number; cost: Omit<AgentCost, "subtree"> }[] = [];
  const problems: string[] = [];
  for (const { dir, file, value, error } of agentRecordFiles(treeDir)) {
    if (error) problems.push(`${file} ${error}`);
    else if (isRecord(value)) {
      const seq = typeof value.spawnSeq === "number" ? value.spawnSeq : Number.MAX_SAFE_INTEGER;
      found.push({ seq, cost: agentCost(dir, value, now) });
    }
  }
  found.sort((a, b) => a.seq - b.seq);
  const rolled = rollUpBy(new Map(found.map(({ cost }) => [cost.path, cost.usage])), emptyUsage, addUsage);
  const total = emptyUsage();
  for (const { cost } of found) addUsage(total, cost.usage);
  const agents = found.map(({ cost }) => ({ ...cost, subtree: rolled.get(cost.path) ?? cost.usage }));
  return { dir: treeDir, agents, total, problems };
}

/** Prints the tree's costs; exit 0, 1 when a record could not be read (each a line on stderr), 2 when no tree is there. */
export function costCommand(treeDir: string, flags: { json?: boolean; csv?: boolean }): number {
  if (flags.json && flags.csv) {
    process.stderr.write("subagent-wrapper cost: --json and --csv do not go together; pick one\n");
    return 2;
  }
  if (!isTreeDirectory(treeDir)) {
    process.stderr.write(
      `subagent-wrapper cost: ${treeDir} is not a tree directory (<PI_SUBAGENTS_DIR or subagents/>/<root session id>, holding tree.json or agents/)\n`,
    );
    return 2;
  }
  const tree = readTreeCost(path.resolve(treeDir));
  const format: CostFormat = flags.json ? "json" : flags.csv ? "csv" : "text";
  process.stdout.write(formatTreeCost(tree, format));
  for (const problem of tree.problems) process.stderr.write(`subagent-wrapper cost: ${problem}\n`);
  return tree.problems.length > 0 ? 1 : 0;
}
