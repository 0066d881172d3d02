/**
 * What `inspect <tree dir>` adds for durable children: the process that owns the tree
 * (its live root, from the owner lease), and the turns running while none does — left
 * running by a root that quit (onExit detach) or died — with their wrapper's pid, their age
 * and the limits that bound them.
 */
import path from "node:path";
import { currentOwnerSync } from "../lib/owner-lease.js";
import { liveRuns } from "./live-runs.js";

export interface DetachedView {
  /** The pid of the live root that owns the tree, if one does. */
  ownerPid: number | undefined;
  /** Running turns, each with its wrapper pid, age and limits. */
  running: Array<{
    agent: string;
    run: string;
    pid: number;
    ageMs: number | undefined;
    timeLimitMs: number | undefined;
    limits: Record<string, unknown> | undefined;
  }>;
}

export function readDetached(treeDir: string, now = Date.now()): DetachedView {
  const owner = currentOwnerSync(treeDir);
  return {
    ownerPid: owner?.pid,
    running: liveRuns(treeDir).map((run) => ({
      agent: run.agent,
      run: path.basename(run.runDir),
      pid: run.wrapper.pid,
      ageMs: run.startedAt === undefined ? undefined : Math.max(0, now - run.startedAt),
      timeLimitMs: run.timeoutMs,
      limits: run.limits,
    })),
  };
}

/** `4m 05s`, `12s` */
function age(ms: number): string {
  const s = Math.floor(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s` : `${s}s`;
}

export function formatDetached(view: DetachedView, treeDir: string): string {
  if (view.running.length === 0) return "";
  const out = [""];
  out.push(
    view.ownerPid !== undefined
      ? `owner     pid ${view.ownerPid} (a live root drives these turns)`
      : `running without an owner (no root holds the tree): ${view.running.length}`,
  );
  for (const run of view.running) {
    const bounds = [
      run.timeLimitMs !== undefined && `time limit ${age(run.timeLimitMs)}`,
      ...Object.entries(run.limits ?? {}).map(([key, value]) => `${key} ${String(value)}`),
    ].filter(Boolean);
    out.push(
      `  ${run.agent}  ${run.run}  wrapper pid ${run.pid}  age ${run.ageMs === undefined ? "?" : age(run.ageMs)}${bounds.length > 0 ? `  limits: ${bounds.join(", ")}` : ""}`,
    );
  }
  if (view.ownerPid === undefined)
    out.push(`  stop them: subagent-wrapper stop ${treeDir}   take them back: pi -c (or pi --session <file>)`);
  return `${out.join("\n")}\n`;
}

export function detachedJson(view: DetachedView): Record<string, unknown> {
  return {
    owner_pid: view.ownerPid ?? null,
    running: view.running.map((run) => ({
      agent_name: run.agent,
      run: run.run,
      wrapper_pid: run.pid,
      age_ms: run.ageMs ?? null,
      time_limit_ms: run.timeLimitMs ?? null,
      limits: run.limits ?? null,
    })),
  };
}
