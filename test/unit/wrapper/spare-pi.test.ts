/**
 * A waiting spare pi is nobody: it starts with none of the package's own variables (the
 * template turn's agent, its tree, its budget), only the hand-over file, so neither extension
 * acts as the template's agent — a spare that did took that agent's children's notices.
 */
import { describe, expect, it } from "vitest";
import { ENV } from "../../../src/contracts/env.js";
import type { MetaV1 } from "../../../src/contracts/meta.js";
import { spareHandover } from "../../../src/contracts/spare.js";
import { childEnvironment } from "../../../src/wrapper/child.js";
import { spareSpawnOptions } from "../../../src/wrapper/spare-pi.js";

const template = { cwd: "/work/repo" } as unknown as MetaV1;
const turnEnv = {
  PATH: "/usr/bin",
  HOME: "/home/me",
  PI_CODING_AGENT_DIR: "/home/me/.pi/agent",
  PI_SUBAGENT_PATH: "/root/beta",
  PI_SUBAGENTS_TREE_DIR: "/home/me/.pi/agent/subagents/trees/t1",
  PI_SUBAGENTS_BUDGET_COST: "0.5",
};

describe("the spare pi's environment", () => {
  it("keeps what pi reads at its start and drops every variable of the package but the hand-over file", () => {
    const options = spareSpawnOptions(template, "/tmp/spare/1", turnEnv, "token");
    expect(options.env).toEqual({
      PATH: "/usr/bin",
      HOME: "/home/me",
      PI_CODING_AGENT_DIR: "/home/me/.pi/agent",
      [ENV.spareHandover]: "/tmp/spare/1/handover.json",
    });
    expect(options.cwd).toBe("/work/repo");
  });

  it("the hand-over gives the turn's agent back and removes the hand-over variable, so the extensions load as the turn's", () => {
    const started = childEnvironment(spareSpawnOptions(template, "/tmp/spare/1", turnEnv, "token"));
    const wanted = { ...turnEnv, PI_SUBAGENT_PATH: "/root/epsilon" };
    const handover = spareHandover(started, wanted);
    expect(handover.env).toMatchObject({ PI_SUBAGENT_PATH: "/root/epsilon", PI_SUBAGENTS_BUDGET_COST: "0.5" });
    expect(handover.unset).toContain(ENV.spareHandover);
  });
});
