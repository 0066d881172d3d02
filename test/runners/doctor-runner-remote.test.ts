/**
 * `doctor --runner` checks for ssh and slurm (src/cli/doctor-runner-remote.ts) against the
 * far host in a network namespace and the one-node Slurm: what is there passes, what is
 * missing is named (no pi, a Node too old for pi 1.x, no package, no model), a refusal is the
 * tool's own message. One far host for the whole file; each test that breaks a piece puts it
 * back.
 */
import { chmod, mkdtemp, readlink, rm, symlink, unlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkSlurmRunner, checkSshRunner } from "../../src/cli/doctor-runner-remote.js";
import { packageVersion } from "../../src/lib/package-info.js";
import { runProcess } from "../../src/lib/run-process.js";
import { missingNeeds, skipOrFail } from "../support/needs.js";
import { SLURM_TOOLS, type SlurmCluster, startSlurmCluster } from "../support/slurm-cluster.js";
import { SSH_HOST_TOOLS, type SshHost, sshRunnerFor, startSshHost } from "../support/ssh-host.js";

const REPO_ROOT = path.resolve(import.meta.dirname, "..", "..");

/** Writes an executable sh script on the far host (its files are this machine's, under the far root). */
async function farScript(file: string, body: string): Promise<string> {
  await writeFile(file, `#!/bin/sh\n${body}\n`);
  await chmod(file, 0o755);
  return file;
}
const summary = (checks: Array<{ name: string; ok: boolean }>) =>
  checks.map((c) => `${c.ok ? "ok" : "FAIL"} ${c.name}`);

describe("doctor --runner for an ssh runner", () => {
  const missing = missingNeeds([...SSH_HOST_TOOLS, "git"], { root: true });
  let far: SshHost | undefined;
  beforeAll(async () => {
    if (missing === undefined) far = await startSshHost();
  }, 30_000);
  afterAll(async () => {
    await far?.stop();
  });
  const definition = sshRunnerFor;
  const fakePi = (host: SshHost) => path.join(host.farPackage, "fixtures", "fake-pi", "pi");

  it("the CLI's doctor --runner runs the far-side checks and names the missing pi before any child starts", async (ctx) => {
    skipOrFail(ctx, missing);
    const host = far as SshHost;
    const agentDir = await mkdtemp(path.join(os.tmpdir(), "pst-doctor-runner-"));
    try {
      const runners = { far: definition(host), other: { kind: "ssh", hots: "x", capacity: 1 } };
      await writeFile(path.join(agentDir, "settings.json"), JSON.stringify({ subagents: { runners } }));
      const cli = path.join(REPO_ROOT, "bin", "subagent-wrapper");
      const run = await runProcess(process.execPath, [cli, "doctor", "--runner", "far"], {
        cwd: agentDir,
        env: { ...process.env, PI_CODING_AGENT_DIR: agentDir },
        timeoutMs: 60_000,
      });
      const out = run.stdout.toString("utf8");
      expect(run.code).toBe(1);
      expect(out).toMatch(new RegExp(`✗ far pi +pi not found on the far PATH on ${host.hostname}\n`));
      expect(out).toContain("1 check failed");
      // Only this runner is spoken of: the other one's misspelt field is not its problem.
      expect(`${out}${run.stderr}`).not.toContain("hots");
    } finally {
      await rm(agentDir, { recursive: true, force: true });
    }
  });

  it("connects, finds git, Node and the package, and names pi as missing; then passes once pi is there", async (ctx) => {
    skipOrFail(ctx, missing);
    const host = far as SshHost;
    const before = await checkSshRunner(definition(host), { timeoutMs: 20_000 });
    expect(summary(before)).toEqual([
      `ok ssh ${host.destination}`,
      "ok far git",
      "ok far node",
      "FAIL far pi",
      "ok far package",
    ]);
    expect(before[3]?.detail).toBe(`pi not found on the far PATH on ${host.hostname}`);
    expect(before[3]?.hint).toContain("install pi");
    expect(before[4]?.detail).toBe(`subagent-wrapper --version: ${packageVersion()} on ${host.hostname}`);
    // The fake pi of this package's fixtures, installed on the far host's PATH.
    await symlink(fakePi(host), path.join(host.farBin, "pi"));
    const after = await checkSshRunner(definition(host), { timeoutMs: 20_000 });
    expect(summary(after).slice(3)).toEqual(["ok far pi", "ok far package", "ok far models"]);
    expect(after[3]?.detail).toBe(`0.73.1-fake (${path.join(host.farBin, "pi")}) on ${host.hostname}`);
    expect(after[5]?.detail).toBe(
      `the far pi has a key for 1 model (first: fake/fast), from ${host.home}/.pi/agent on ${host.hostname}`,
    );
  });

  it("names a pi 1.x whose far Node is older than 22.19, through the runner's pi field", async (ctx) => {
    skipOrFail(ctx, missing);
    const host = far as SshHost;
    const node = path.join(host.farBin, "node");
    const realNode = await readlink(node);
    // A pi 1.x (by its version) and, first on the far PATH, a Node 20 that runs everything else.
    const pi1 = await farScript(path.join(host.root, "pi1"), `[ "$1" = --version ] && echo 1.0.3 && exit 0\nexit 1`);
    await unlink(node);
    await farScript(node, `[ "$1" = --version ] && echo v20.11.0 && exit 0\nexec ${realNode} "$@"`);
    try {
      const checks = await checkSshRunner(definition(host, { pi: pi1 }), { timeoutMs: 20_000 });
      expect(summary(checks).slice(1)).toEqual(["ok far git", "ok far node", "FAIL far pi", "ok far package"]);
      expect(checks[3]?.detail).toBe(
        `1.0.3 on ${host.hostname} needs Node 22.19.0 or newer, and node there is 20.11.0`,
      );
    } finally {
      await unlink(node);
      await symlink(realNode, node);
    }
  });

  it("names a far pi with no model it has a key for, and the agent dir it reads (the runner's agent_dir)", async (ctx) => {
    skipOrFail(ctx, missing);
    const host = far as SshHost;
    const noModels = await farScript(path.join(host.root, "pi-no-models"), `FAKE_PI_MODELS= exec ${fakePi(host)} "$@"`);
    const agentDir = `${host.home}/elsewhere`;
    const checks = await checkSshRunner(definition(host, { pi: noModels, agent_dir: agentDir }), { timeoutMs: 20_000 });
    expect(summary(checks).slice(3)).toEqual(["ok far pi", "ok far package", "FAIL far models"]);
    expect(checks[5]?.detail).toBe(`the far pi has a key for no model (it reads ${agentDir} on ${host.hostname})`);
    expect(checks[5]?.hint).toContain("not this machine's");
  });

  it("names the package missing for a remote_command that is not there", async (ctx) => {
    skipOrFail(ctx, missing);
    const host = far as SshHost;
    const checks = await checkSshRunner(definition(host, { remote_command: ["/opt/none/subagent-wrapper"] }), {
      timeoutMs: 20_000,
    });
    expect(checks.find((c) => c.name === "far package")).toMatchObject({
      ok: false,
      detail: `missing on ${host.hostname}`,
    });
  });

  it("fails the connection with ssh's message on a closed port, and checks nothing more", async (ctx) => {
    skipOrFail(ctx, missing);
    const host = far as SshHost;
    const checks = await checkSshRunner(definition(host, { port: host.port + 1 }), { timeoutMs: 20_000 });
    expect(checks).toHaveLength(1);
    expect(checks[0]).toMatchObject({ name: `ssh ${host.destination}`, ok: false });
    expect(checks[0]?.detail).toMatch(/Connection refused/);
  });
});

describe("doctor --runner for a slurm runner", () => {
  const missing = missingNeeds([...SLURM_TOOLS, "git"], { root: true });
  let slurm: SlurmCluster | undefined;
  beforeAll(async () => {
    if (missing === undefined) slurm = await startSlurmCluster();
  }, 40_000);
  afterAll(async () => {
    await slurm?.stop();
  });

  it("finds srun and sinfo, runs `srun true` in seconds, and checks the node's tools", async (ctx) => {
    skipOrFail(ctx, missing);
    const cluster = slurm as SlurmCluster;
    const remote_command = [process.execPath, path.join(REPO_ROOT, "bin", "subagent-wrapper")];
    const checks = await checkSlurmRunner(
      { kind: "slurm", srun_options: ["--time=2"], remote_command, capacity: 2 },
      { timeoutMs: 20_000, env: cluster.env },
    );
    // pi is on this machine's PATH only where the test runs on a pi line (npm test puts it there).
    expect(summary(checks).filter((line) => !/ far (pi|models)$/.test(line))).toEqual([
      "ok srun",
      "ok sinfo",
      "ok srun true",
      "ok far git",
      "ok far node",
      "ok far package",
    ]);
    const srunTrue = checks.find((c) => c.name === "srun true");
    console.log(`doctor --runner slurm: srun true ${srunTrue?.detail}`);
  });

  it("fails `srun true` with the cluster's own refusal of a partition it does not have", async (ctx) => {
    skipOrFail(ctx, missing);
    const cluster = slurm as SlurmCluster;
    const checks = await checkSlurmRunner(
      { kind: "slurm", srun_options: ["--partition=nosuch"], capacity: 2 },
      { timeoutMs: 20_000, env: cluster.env },
    );
    expect(summary(checks)).toEqual(["ok srun", "ok sinfo", "FAIL srun true"]);
    expect(checks[2]?.detail).toMatch(/invalid partition/i);
  });

  it("says srun is missing when it is not on PATH", async () => {
    const checks = await checkSlurmRunner(
      { kind: "slurm", capacity: 1 },
      { timeoutMs: 1000, env: { PATH: "/nonexistent" } },
    );
    expect(summary(checks)).toEqual(["FAIL srun", "FAIL sinfo"]);
    expect(checks[0]?.hint).toContain("slurm-client");
  });
});
