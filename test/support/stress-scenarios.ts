/**
 * Helpers shared by the stress-scenario files (tree-scenarios-a/b, tree-interrupts): playing a
 * scenario of the stress table (test/support/stress) under vitest, what the root received,
 * clean exits, notices, run spans and scenario processes.
 */
import fs from "node:fs";
import path from "node:path";
import { expect } from "vitest";
import { judgeRun, type PlayOptions, playScripted } from "./stress/run.js";
import type { ScenarioState, StressScenario } from "./stress/scenario.js";
import { describePid, type TreeHarness, type TreeOptions } from "./tree-harness.js";
import { expectCleanExit as expectExit0, type Json } from "./tree-harness-extra.js";

/** What the root received, for failure messages. */
export function diag(h: TreeHarness): string {
  return JSON.stringify(h.allResultsOf("/root")).slice(0, 6000);
}

/** Generous: two cores shared with other e2e files; each scenario takes a few seconds alone. */
export const SCENARIO_MS = 120_000;
export const ROOT_RUN = { timeoutMs: 100_000 };

export interface ScenarioPlay {
  h: TreeHarness;
  state: ScenarioState;
}

/**
 * Plays one scenario of the stress table exactly as `scripts/stress-test` does (its scripts,
 * its prompts, its session), on a harness from `tree` (so the test file cleans it up), and
 * returns the harness for the test's own assertions and what the run left for the judge.
 */
export async function playScenario(
  tree: (opts: TreeOptions) => Promise<TreeHarness>,
  scenario: StressScenario,
  opts: Partial<PlayOptions> = {},
): Promise<ScenarioPlay> {
  const h = await tree({ ...(scenario.scripted.env && { env: scenario.scripted.env }) });
  const dir = path.join(h.home.root, "stress");
  fs.mkdirSync(dir, { recursive: true });
  const state: ScenarioState = {
    mode: "scripted",
    dir,
    sessionFile: path.join(dir, "session.jsonl"),
    phases: [],
    treeDir: undefined,
    records: [],
  };
  const extraArgs = scenario.prepare?.(dir) ?? [];
  state.phases = await playScripted(scenario, h, state, extraArgs, { timeoutMs: ROOT_RUN.timeoutMs, ...opts });
  state.treeDir = h.treeDir();
  state.records = await h.readRecords();
  return { h, state };
}

/**
 * The stress script's verdict on a play: every root process exited 0 and answered with its
 * marker alone on a line — its script's last step, so it ran to its scripted end — and the
 * scenario's check holds on the tree it left.
 */
export function expectScenarioPassed({ h, state }: ScenarioPlay, scenario: StressScenario): void {
  for (const phase of state.phases) expectExit0(phase);
  expect(judgeRun(scenario, state, ROOT_RUN.timeoutMs).reasons, diag(h)).toEqual([]);
}

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
