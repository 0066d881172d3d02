import { describe, expect, it } from "vitest";
import { DEFAULT_SANDBOX_HIDE, type ResolvedRunner } from "../../../../src/contracts/runners.js";
import { chooseRunner, delegationRefusal, runnerNeedsGit } from "../../../../src/extension/spawn/runner.js";
import { buildMeta } from "../../../../src/extension/turns/wrapper/launcher.js";
import { agentRecord } from "../../../support/records.js";

const settings = {
  runner: "box",
  runners: {
    box: { kind: "sandbox" as const },
    tight: { kind: "sandbox" as const, hide: ["/srv/secret"], capacity: 1 },
    gpu: { kind: "ssh" as const, host: "me@gpu", capacity: 4 },
  },
};

describe("chooseRunner: the parameter, else the role's, else the settings' default, else local", () => {
  it("the parameter wins, then the role's runner, then the settings' default", () => {
    expect(chooseRunner("gpu", "tight", settings)).toEqual({
      ok: true,
      runner: { name: "gpu", kind: "ssh", host: "me@gpu", capacity: 4 },
    });
    expect(chooseRunner(undefined, "tight", settings)).toEqual({
      ok: true,
      runner: { name: "tight", kind: "sandbox", hide: ["/srv/secret"], capacity: 1 },
    });
    expect(chooseRunner("", undefined, settings)).toEqual({
      ok: true,
      runner: { name: "box", kind: "sandbox", hide: [...DEFAULT_SANDBOX_HIDE], capacity: 3 },
    });
  });

  it("local, named or by default, runs here (no runner)", () => {
    expect(chooseRunner("local", "box", settings)).toEqual({ ok: true, runner: undefined });
    expect(chooseRunner(undefined, undefined, {})).toEqual({ ok: true, runner: undefined });
  });

  it("an unknown runner names the known ones; a bad value says what it must be", () => {
    expect(chooseRunner("cluster", undefined, settings)).toEqual({
      ok: false,
      error: "unknown runner: cluster (known: local, box, tight, gpu)",
    });
    expect(chooseRunner(7, undefined, settings)).toEqual({ ok: false, error: "runner must be a runner name, not 7" });
    const unusableRunners = { hpc: "its definition is invalid: runners.hpc.capacity is missing" };
    expect(chooseRunner("hpc", undefined, { ...settings, unusableRunners })).toEqual({
      ok: false,
      error: "runner hpc is not usable: its definition is invalid: runners.hpc.capacity is missing",
    });
    expect(runnerNeedsGit("box")).toBe("runner box needs a git repository");
  });
});

describe("a child on a runner does not delegate", () => {
  it("its meta.json env names its runner; a local child's does not", () => {
    const spec = (runner?: ResolvedRunner) => ({
      record: agentRecord({ path: "/root/w", ...(runner && { runner }) }),
      agentDir: "/tree/agents/w",
      treeDir: "/tree",
      prompt: "go",
      kind: "spawn" as const,
      cwd: "/work",
      instructions: "",
      limits: {},
    });
    const box: ResolvedRunner = { name: "box", kind: "sandbox", capacity: 3, hide: [] };
    expect(buildMeta(spec(box), "/tree/agents/w/runs/0001-spawn").env).toEqual({
      PI_SUBAGENTS_TREE_DIR: "/tree",
      PI_SUBAGENTS_AGENT_PATH: "/root/w",
      PI_SUBAGENTS_RUNNER: "box (sandbox)",
    });
    expect(buildMeta(spec(), "/tree/agents/w/runs/0001-spawn").env).not.toHaveProperty("PI_SUBAGENTS_RUNNER");
  });

  it("spawn_agent's refusal there says which runner and why, in one line; none where the variable is unset", () => {
    const refusal = delegationRefusal({ PI_SUBAGENTS_RUNNER: "gpu (ssh)" });
    expect(refusal).toMatch(/^spawn_agent does not work on runner gpu \(ssh\): .*agent tree's folder/);
    expect(refusal).not.toContain("\n");
    expect(delegationRefusal({})).toBeUndefined();
    expect(delegationRefusal({ PI_SUBAGENTS_RUNNER: " " })).toBeUndefined();
  });
});
