/**
 * Helpers shared by the stress-scenario files (tree-scenarios-a, tree-interrupts): what the
 * root received, clean exits, notices, run spans and scenario processes.
 */
import fs from "node:fs";
import path from "node:path";
import { expect } from "vitest";
import { describePid, type TreeHarness } from "./tree-harness.js";
import { expectCleanExit as expectExit0, type Json } from "./tree-harness-extra.js";

/** What the root received, for failure messages. */
export function diag(h: TreeHarness): string {
  return JSON.stringify(h.allResultsOf("/root")).slice(0, 6000);
}

/** Generous: two cores shared with other e2e files; each scenario takes a few seconds alone. */
export const SCENARIO_MS = 120_000;
export const ROOT_RUN = { timeoutMs: 100_000 };

/** The root ran to its scripted end: exit 0 after its final answer (not in the middle of a tool). */
export function expectCleanExit(run: { code: number | null; timedOut: boolean; stderr: string; stdout: string }): void {
  expectExit0(run);
  expect(run.stdout).toContain("ROOT DONE");
}

/** Every notice the agent received through wait_agent, in order. */
export function noticesOf(h: TreeHarness, agent = "/root"): Json[] {
  return h
    .allResultsOf(agent)
    .flatMap((r) => (r && typeof r === "object" && Array.isArray((r as Json).notices) ? (r as Json).notices : []));
}

/** The run records of one agent's runs, from events.jsonl: [run_start ts, run_end ts]. */
export function runSpans(treeDir: string, agentFolder: string): Array<{ run: string; start: number; end: number }> {
  const runsDir = path.join(treeDir, "agents", agentFolder, "runs");
  return fs
    .readdirSync(runsDir)
    .sort()
    .map((run) => {
      const lines = fs
        .readFileSync(path.join(runsDir, run, "events.jsonl"), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Json);
      return {
        run,
        start: lines.find((l) => l.type === "run_start")!.ts,
        end: lines.find((l) => l.type === "run_end")!.ts,
      };
    });
}

/** Live processes of the scenario whose command line contains `needle`. */
export function scenarioProcs(h: TreeHarness, needle: string): number[] {
  return h.scenarioPids().filter((pid) => describePid(pid).includes(needle));
}
