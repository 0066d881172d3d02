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
        runners: { box: { kind: "sandbox" }, gone: { kind: "command", command: ["no-such-prefix"], capacity: 1 } },
      },
    }),
  );
  return dir;
}

const doctor = (runner: string, env: NodeJS.ProcessEnv = {}) =>
  spawnProcess(process.execPath, [WRAPPER_BIN, "doctor", "--runner", runner], {
    env: { ...process.env, PI_CODING_AGENT_DIR: agentDir(), ...env },
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
    expect(gone.stdout).toMatch(/prefix no-such-prefix\s+not on PATH/);
    const unknown = await doctor("gpu");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown runner: gpu (known: local, box, gone)");
  });
});
