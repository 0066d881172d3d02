/**
 * `subagent-wrapper doctor --runner <name>`: whether a runner of pi's settings can work here,
 * and what is missing (bwrap, user namespaces, the far side's answer).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SERVE_PROTOCOL_VERSION } from "../../src/contracts/serve-protocol.js";
import { spawnProcess } from "../support/processes.js";
import { WRAPPER_BIN } from "../support/wrapper-harness.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

const HAS_BWRAP = (() => {
  try {
    execFileSync("bwrap", ["--ro-bind", "/", "/", "true"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

function agentDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "psa-doctor-runner-"));
  dirs.push(dir);
  fs.writeFileSync(
    path.join(dir, "settings.json"),
    JSON.stringify({
      subagents: {
        runners: {
          box: { kind: "sandbox" },
          gone: { kind: "command", command: ["no-such-prefix"], capacity: 1 },
          hpc: { kind: "slurm", capacity: 2, srun_option: ["-p", "x"] },
        },
      },
    }),
  );
  return dir;
}

/** A project folder whose .pi/settings.json defines a runner (which it may not). */
function project(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "psa-doctor-project-"));
  dirs.push(dir);
  fs.mkdirSync(path.join(dir, ".pi"));
  const runners = { mine: { kind: "ssh", host: "me@far", capacity: 1 } };
  fs.writeFileSync(path.join(dir, ".pi", "settings.json"), JSON.stringify({ subagents: { runners } }));
  return dir;
}

const doctor = (runner: string, env: NodeJS.ProcessEnv = {}, cwd?: string) =>
  spawnProcess(process.execPath, [WRAPPER_BIN, "doctor", "--runner", runner], {
    env: { ...process.env, PI_CODING_AGENT_DIR: agentDir(), ...env },
    ...(cwd && { cwd }),
  }).done;

describe("doctor --runner", () => {
  it.skipIf(!HAS_BWRAP)("a sandbox that can work here: every check passes, the far side answered hello", async () => {
    const out = await doctor("box");
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/✓ bwrap/);
    expect(out.stdout).toMatch(/✓ user namespaces/);
    expect(out.stdout).toMatch(new RegExp(`subagent-wrapper .*, protocol ${SERVE_PROTOCOL_VERSION}`));
  });

  it("bwrap missing: the check fails and says what to install", async () => {
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), "psa-doctor-bin-"));
    dirs.push(bin);
    fs.symlinkSync(execFileSync("sh", ["-c", "command -v git"], { encoding: "utf8" }).trim(), path.join(bin, "git"));
    const out = await doctor("box", { PATH: bin });
    expect(out.code).toBe(1);
    expect(out.stdout).toMatch(/bwrap\s+not on PATH/);
    expect(out.stdout).toContain("install bubblewrap");
  });

  it("a prefix that is not there fails its check; an unknown runner names the known ones (exit 2)", async () => {
    const gone = await doctor("gone");
    expect(gone.code).toBe(1);
    expect(gone.stdout).toMatch(/no-such-prefix\s+not on PATH/);
    // Only this runner is spoken of: hpc's misspelt field is not gone's problem.
    expect(`${gone.stdout}${gone.stderr}`).not.toContain("srun_option");
    const unknown = await doctor("gpu");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe("subagent-wrapper: unknown runner: gpu (known: local, box, gone)\n");
  });

  it("a runner in the settings that cannot be used says why, not `unknown runner` (exit 2)", async () => {
    const invalid = await doctor("hpc");
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toMatch(
      /^subagent-wrapper: runner hpc is not usable: its definition is invalid: \S+settings\.json: subagents\.runners\.hpc: unknown field "srun_option" for kind slurm; did you mean "srun_options"\?\n$/,
    );
    const fromProject = await doctor("mine", {}, project());
    expect(fromProject.code).toBe(2);
    expect(fromProject.stderr).toMatch(
      /runner mine is not usable: it is defined in .*\.pi\/settings\.json, and only pi's global settings/,
    );
  });
});
