import { describe, expect, it } from "vitest";
import { pickTreeRun, type TreeRunCandidate, treeTailNote } from "../../../src/cli/tree-tail-target.js";

const run = (agent: string, status: string, startedAt: number): TreeRunCandidate => ({
  agent,
  dir: `/t/agents${agent.slice(5)}/runs/0001-spawn`,
  status,
  startedAt,
});

describe("tail <tree dir>: which run it follows", () => {
  it("the newest running run, even when a finished one is newer; the others going are counted", () => {
    const runs = [run("/root/a", "running", 10), run("/root/b", "completed", 30), run("/root/c", "running", 20)];
    expect(pickTreeRun(runs)).toEqual({ run: runs[2], othersRunning: 1 });
  });

  it("the newest run when none is going; nothing when there is no run", () => {
    const runs = [run("/root/a", "completed", 10), run("/root/b", "failed", 30), run("/root/c", "stopped", 20)];
    expect(pickTreeRun(runs)).toEqual({ run: runs[1], othersRunning: 0 });
    expect(pickTreeRun([])).toBeUndefined();
  });

  it("the note names the run, its agent and state, and how to reach the others", () => {
    expect(treeTailNote("/t", { run: run("/root/a", "running", 1), othersRunning: 2 })).toBe(
      "the tree's newest running run, /root/a (running): /t/agents/a/runs/0001-spawn; 2 more running (subagent-wrapper inspect /t lists them; tail one by its run directory)",
    );
    expect(treeTailNote("/t", { run: run("/root/a", "failed", 1), othersRunning: 0 })).toBe(
      "the tree's newest run, /root/a (failed): /t/agents/a/runs/0001-spawn",
    );
  });
});
