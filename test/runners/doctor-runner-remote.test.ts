/**
 * `doctor --runner` checks for ssh and slurm (src/cli/doctor-runner-remote.ts) against the
 * far host in a network namespace and the one-node Slurm: what is there passes, what is
 * missing is named, a refusal is the tool's own message.
 */
import { symlink } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkSlurmRunner, checkSshRunner } from "../../src/cli/doctor-runner-remote.js";
import { packageVersion } from "../../src/lib/package-info.js";
import { missingNeeds, skipOrFail } from "../support/needs.js";
import { SLURM_TOOLS, type SlurmCluster, startSlurmCluster } from "../support/slurm-cluster.js";
import { SSH_HOST_TOOLS, type SshHost, sshRunnerFor, startSshHost } from "../support/ssh-host.js";

const REPO_ROOT = path.resolve(import.meta.dirname, "..", "..");
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
    expect(before[3]?.detail).toBe(`missing on ${host.hostname}`);
    expect(before[3]?.hint).toContain("install pi");
    expect(before[4]?.detail).toBe(`subagent-wrapper --version: ${packageVersion()} on ${host.hostname}`);
    // The fake pi of this package's fixtures, installed on the far host's PATH.
    await symlink(path.join(host.farPackage, "fixtures", "fake-pi", "pi"), path.join(host.farBin, "pi"));
    const after = await checkSshRunner(definition(host), { timeoutMs: 20_000 });
    expect(after.every((check) => check.ok)).toBe(true);
    expect(after[3]?.detail).toBe(`0.73.1-fake on ${host.hostname}`);
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
    expect(summary(checks).filter((line) => !line.endsWith(" far pi"))).toEqual([
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
