/**
 * The runs of a tree that are still at work: a run directory without result.json whose
 * wrapper (wrapper.pid: pid, start time, boot) still runs. Read by `stop` and by `inspect`
 * (which shows the ones running while no root owns the tree). Files and /proc only.
 */
import fs from "node:fs";
import path from "node:path";
import { RUN_FILES, TREE_FILES } from "../contracts/layout.js";
import { type ProcessIdentity, processRunning, sameProcessAlive } from "../lib/process.js";
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

/** The wrapper recorded in a run directory (a bare pid from an older version is accepted). */
export function recordedWrapper(runDir: string): ProcessIdentity | undefined {
  let text: string;
  try {
    const file = path.join(runDir, RUN_FILES.wrapperPid);
    if (!fs.statSync(file).isFile()) return undefined;
    text = fs.readFileSync(file, "utf8").trim();
  } catch {
    return undefined;
  }
  let value: unknown;
  try {
    value = text.startsWith("{") ? JSON.parse(text) : { pid: Number(text) };
  } catch {
    return undefined;
  }
  if (!isRecord(value) || !Number.isSafeInteger(value.pid) || (value.pid as number) <= 1) return undefined;
  return {
    pid: value.pid as number,
    ...(typeof value.startTicks === "string" && { startTicks: value.startTicks }),
    ...(typeof value.bootId === "string" && { bootId: value.bootId }),
  };
}

/** The run's wrapper when it is still at work (no result.json; the same process, not a zombie). */
export function liveWrapper(runDir: string): ProcessIdentity | undefined {
  if (fs.existsSync(path.join(runDir, RUN_FILES.result))) return undefined;
  const wrapper = recordedWrapper(runDir);
  return wrapper && sameProcessAlive(wrapper) && processRunning(wrapper.pid) ? wrapper : undefined;
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

/** Every run of the tree still at work, in the agents' spawn order. */
export function liveRuns(treeDir: string): LiveRun[] {
  const runs: LiveRun[] = [];
  for (const { dir, value } of agentRecordFiles(treeDir)) {
    const agent = isRecord(value) && typeof value.path === "string" ? value.path : dir;
    let names: string[];
    try {
      names = fs.readdirSync(path.join(dir, TREE_FILES.runs)).sort();
    } catch {
      continue;
    }
    for (const name of names) {
      const live = liveRunAt(path.join(dir, TREE_FILES.runs, name), agent);
      if (live) runs.push(live);
    }
  }
  return runs;
}
