/**
 * `tail <tree directory>`: which run to follow when a whole tree is named. The newest run
 * still going (the one a person most likely wants to watch), else the newest run of all;
 * how many others are going is said too, so the person knows to name one of them instead.
 */
import fs from "node:fs";
import path from "node:path";
import { RUN_FILES } from "../contracts/layout.js";
import { readTree } from "./inspect-tree.js";

export interface TreeRunCandidate {
  /** The agent's tree path, e.g. `/root/scout`. */
  agent: string;
  /** The run's folder. */
  dir: string;
  /** result.json's status, or `running`, `stopped`, `not started` (inspect-tree.ts). */
  status: string;
  /** When the run was started: its meta.json's time (written once, before the wrapper starts). */
  startedAt: number;
}

export interface TreeTailChoice {
  run: TreeRunCandidate;
  /** Runs going besides the one picked. */
  othersRunning: number;
}

/** Pure: the newest running run, else the newest run; undefined when the tree has none. */
export function pickTreeRun(runs: readonly TreeRunCandidate[]): TreeTailChoice | undefined {
  const newestFirst = [...runs].sort((a, b) => b.startedAt - a.startedAt);
  const running = newestFirst.filter((run) => run.status === "running");
  const run = running[0] ?? newestFirst[0];
  if (!run) return undefined;
  return { run, othersRunning: running.filter((other) => other !== run).length };
}

/** Pure: the note tail prints on stderr about the run it picked. */
export function treeTailNote(treeDir: string, { run, othersRunning }: TreeTailChoice): string {
  const more =
    othersRunning > 0
      ? `; ${othersRunning} more running (subagent-wrapper inspect ${treeDir} lists them; tail one by its run directory)`
      : "";
  return `the tree's ${run.status === "running" ? "newest running" : "newest"} run, ${run.agent} (${run.status}): ${run.dir}${more}`;
}

function startedAt(runDir: string): number {
  for (const file of [path.join(runDir, RUN_FILES.meta), runDir]) {
    try {
      return fs.statSync(file).mtimeMs;
    } catch {
      // try the next
    }
  }
  return 0;
}

/** Every run of the tree's agents, read as `inspect <tree dir>` reads them. */
export function treeRuns(treeDir: string): TreeRunCandidate[] {
  return readTree(treeDir).agents.flatMap((agent) =>
    agent.runs.map((run) => ({ agent: agent.path, dir: run.dir, status: run.status, startedAt: startedAt(run.dir) })),
  );
}
