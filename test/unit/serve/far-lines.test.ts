import { describe, expect, it } from "vitest";
import type { ResolvedRunner } from "../../../src/contracts/runners.js";
import { piStartFailure } from "../../../src/serve/pi-process.js";
import { nameFarSide, runnerFailureText } from "../../../src/wrapper/remote/far-lines.js";

const enoent = Object.assign(new Error("spawn pi ENOENT"), { code: "ENOENT" });
const ssh: ResolvedRunner = { name: "far", kind: "ssh", host: "me@host", capacity: 1 };

describe("a far-side failure, said where it happened", () => {
  it("serve says a missing pi is missing from the far PATH, or that the named pi is not there", () => {
    expect(piStartFailure("pi", enoent)).toBe(
      "on far: pi not found on the far PATH (name another with the runner's pi field, or PI_SUBAGENTS_PI_BIN there)",
    );
    expect(piStartFailure("/opt/pi", enoent)).toMatch(/^on far: \/opt\/pi not found \(/);
    const denied = Object.assign(new Error("spawn /x EACCES"), { code: "EACCES" });
    expect(piStartFailure("/x", denied)).toBe("on far: could not start pi (/x): spawn /x EACCES");
  });

  it("the local wrapper names the far side in serve's lines, and leaves pi's own stderr as it is", () => {
    const line = Buffer.from("on far: pi not found on the far PATH (…)\n");
    expect(nameFarSide(line, ssh).toString()).toBe("on far (ssh me@host): pi not found on the far PATH (…)\n");
    const slurm: ResolvedRunner = { name: "hpc", kind: "slurm", capacity: 1 };
    expect(nameFarSide(line, slurm).toString()).toMatch(/^on far \(slurm hpc\): pi not found/);
    expect(nameFarSide(Buffer.from("Error: on far: no\n"), ssh).toString()).toBe("Error: on far: no\n");
  });

  it("the run's error starts at the runner's own failure line; pi's stderr or a lost connection is not one", () => {
    expect(runnerFailureText("noise\nrunner far (ssh) could not start: Permission denied (exit code 255)\n")).toBe(
      "runner far (ssh) could not start: Permission denied (exit code 255)",
    );
    expect(runnerFailureText("on far (ssh me@host): pi not found on the far PATH (…)\n")).toBe(
      "on far (ssh me@host): pi not found on the far PATH (…)",
    );
    expect(runnerFailureText("runner_lost: runner far (ssh): the connection was lost mid-turn\n")).toBeUndefined();
    // A refusal said before the could-not-start line opens the error.
    const refusal =
      "pi noise\nrunner hpc (slurm): the cluster will not run job 2\nrunner hpc (slurm) could not start: exit code 1";
    expect(runnerFailureText(refusal)).toBe(
      "runner hpc (slurm): the cluster will not run job 2\nrunner hpc (slurm) could not start: exit code 1",
    );
    expect(runnerFailureText("Error: something in pi\n")).toBeUndefined();
  });
});
