/**
 * A tree directory written by hand, as the extension lays it out: `tree.json`, and per agent
 * its folder under `agents/` with `agent.json` and one folder per run holding result.json (a
 * finished turn) or only events.jsonl lines (a turn still running). For CLI tests that read
 * trees (`cost`); the caller removes the folder.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { ResultV1 } from "../../src/contracts/result.js";
import type { AgentRecordV1 } from "../../src/contracts/tree.js";
import { emptyUsage, type Usage } from "../../src/contracts/usage.js";
import { agentRecord } from "./records.js";

/** A run: its result.json, or the events.jsonl records of a run still going. */
export type FixtureRun = ResultV1 | { events: object[] };

/** A new, empty tree directory (with tree.json) in the system's temp folder. */
export function makeTreeDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tree-fixture-"));
  fs.writeFileSync(path.join(dir, "tree.json"), JSON.stringify({ version: 1, rootSession: "/s/root.jsonl" }));
  return dir;
}

/** Writes an agent's folder: its record (`runs` named after `runs`' keys) and each run's files. */
export function writeAgent(
  treeDir: string,
  record: Partial<AgentRecordV1>,
  runs: Record<string, FixtureRun> = {},
): void {
  const dir = path.join(treeDir, "agents", ...(record.path ?? "/root/worker").split("/").slice(2));
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "agent.json"), JSON.stringify(agentRecord({ ...record, runs: Object.keys(runs) })));
  for (const [name, run] of Object.entries(runs)) {
    const runDir = path.join(dir, "runs", name);
    fs.mkdirSync(runDir, { recursive: true });
    if ("events" in run) {
      fs.writeFileSync(path.join(runDir, "events.jsonl"), run.events.map((e) => `${JSON.stringify(e)}\n`).join(""));
    } else fs.writeFileSync(path.join(runDir, "result.json"), JSON.stringify(run));
  }
}

/** Usage in pi's shape: the token counts given, `totalTokens` their sum, `cost.total` the USD given. */
export function usageOf(
  tokens: Partial<Pick<Usage, "input" | "output" | "cacheRead" | "cacheWrite">>,
  usd: number,
): Usage {
  const usage = { ...emptyUsage(), ...tokens };
  usage.totalTokens = usage.input + usage.output + usage.cacheRead + usage.cacheWrite;
  usage.cost = { ...usage.cost, total: usd };
  return usage;
}
