import { describe, expect, it } from "vitest";
import { DEFAULT_SANDBOX_HIDE } from "../../../../src/contracts/runners.js";
import { chooseRunner, runnerNeedsGit } from "../../../../src/extension/spawn/runner.js";

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
    expect(runnerNeedsGit("box")).toBe("runner box needs a git repository");
  });
});
