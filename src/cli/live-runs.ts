/**
 * The runs of a tree that are still at work: a run directory without result.json whose
 * wrapper (wrapper.pid: pid, start time, boot) still runs, by lib/process.ts's one rule. Read
 * by `stop` and by `inspect` (which shows the ones running while no root owns the tree).
 * A wrapper.pid of an older version holds only a pid, which proves nothing once pids are
 * reused: such a run is not counted as running, and `stop` names it instead of signalling
 * whatever holds that pid now (unprovenWrapper). Files and /proc only.
 */
import fs from "node:fs";
import path from "node:path";
import { RUN_FILES, TREE_FILES } from "../contracts/layout.js";
import { type ProcessIdentity, processRunning, readIdentityFileSync, sameProcessAlive } from "../lib/process.js";
import { isRecord } from "../lib/values.js";
import { agentRecordFiles, readJsonFileSync } from "./tree-records.js";

export interface LiveRun {
  /** The agent's path (`/root/a`), when its record says. */
  agent: string;
  runDir: string;
  wrapper: ProcessIdentity;
  /** When the run started (meta.json `startedAt`), as ms since the epoch. */
  startedAt: number | undefined;
  /** The run's turn time limit (meta.json `timeoutMs`). */
  timeoutMs: number | undefined;
  /** The run's limits (meta.json `limits`), when it has any. */
  limits: Record<string, unknown> | undefined;
}

/** The wrapper recorded in a run directory (wrapper.pid), whatever it holds that names a process. */
export function recordedWrapper(runDir: string): ProcessIdentity | undefined {
  const read = readIdentityFileSync(path.join(runDir, RUN_FILES.wrapperPid));
  return "identity" in read ? read.identity : undefined;
}

/** The run's wrapper when it is still at work (no result.json; the same process, not exited). */
export function liveWrapper(runDir: string): ProcessIdentity | undefined {
  if (fs.existsSync(path.join(runDir, RUN_FILES.result))) return undefined;
  const wrapper = recordedWrapper(runDir);
  return wrapper && sameProcessAlive(wrapper) ? wrapper : undefined;
}

/**
 * A run without result.json whose wrapper.pid holds only a pid (an older version's file) that
 * a live process holds now: maybe its wrapper, maybe a process that reused the pid — nothing
 * tells them apart, so nothing signals it. Undefined for every other run.
 */
export function unprovenWrapper(runDir: string): number | undefined {
  if (fs.existsSync(path.join(runDir, RUN_FILES.result))) return undefined;
  const wrapper = recordedWrapper(runDir);
  if (!wrapper || wrapper.startTicks !== undefined || sameProcessAlive(wrapper)) return undefined;
  return processRunning(wrapper.pid) ? wrapper.pid : undefined;
}

/** A run directory: it holds meta.json. */
export function isRunDirectory(dir: string): boolean {
  try {
    return fs.statSync(dir).isDirectory() && fs.statSync(path.join(dir, RUN_FILES.meta)).isFile();
  } catch {
    return false;
  }
}

export function liveRunAt(runDir: string, agent: string): LiveRun | undefined {
  const wrapper = liveWrapper(runDir);
  if (!wrapper) return undefined;
  const meta = readJsonFileSync(path.join(runDir, RUN_FILES.meta)).value;
  const started = isRecord(meta) && typeof meta.startedAt === "string" ? Date.parse(meta.startedAt) : Number.NaN;
  return {
    agent: isRecord(meta) && typeof meta.agentPath === "string" ? meta.agentPath : agent,
    runDir,
    wrapper,
    startedAt: Number.isNaN(started) ? undefined : started,
    timeoutMs: isRecord(meta) && typeof meta.timeoutMs === "number" ? meta.timeoutMs : undefined,
    limits: isRecord(meta) && isRecord(meta.limits) ? meta.limits : undefined,
  };
}

/** Every run directory of the tree with its agent's path, in the agents' spawn order. */
export function treeRuns(treeDir: string): Array<{ runDir: string; agent: string }> {
  const runs: Array<{ runDir: string; agent: string }> = [];
  for (const { dir, value } of agentRecordFiles(treeDir)) {
    const agent = isRecord(value) && typeof value.path === "string" ? value.path : dir;
    let names: string[];
    try {
      names = fs.readdirSync(path.join(dir, TREE_FILES.runs)).sort();
    } catch {
      continue;
    }
    for (const name of names) runs.push({ runDir: path.join(dir, TREE_FILES.runs, name), agent });
  }
  return runs;
}

/** Every run of the tree still at work, in the agents' spawn order. */
export function liveRuns(treeDir: string): LiveRun[] {
  return treeRuns(treeDir).flatMap(({ runDir, agent }) => liveRunAt(runDir, agent) ?? []);
}
