/**
 * A run on a slurm runner, from the local wrapper's side, on the one-node Slurm of
 * test/support/slurm-cluster.ts with the fake pi: the turn runs as a job named for the run
 * and completes like a local one; the cluster's own refusals (a bad partition, a time limit
 * over the partition's, an option srun does not know) end it `failed` with srun's words in
 * seconds; a srun that dies mid-turn leaves its job running, and the run's last resort
 * (src/wrapper/remote/slurm-job.ts) cancels it by name; a stop ends the job. After each, no
 * job is left in `squeue` and no step of it is alive.
 *
 * Needs root and Slurm (munged, slurmctld, slurmd, srun, squeue, scancel): skipped with a
 * plain line without them, failed when CI is set.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { processAlive } from "../../src/lib/process.js";
import { startSlurmGuard } from "../../src/wrapper/remote/slurm-guard.js";
import { slurmJobName } from "../../src/wrapper/remote/slurm-job.js";
import { missingNeeds, skipOrFail } from "../support/needs.js";
import { runProcess } from "../support/processes.js";
import { SLURM_TOOLS, type SlurmCluster, startSlurmCluster } from "../support/slurm-cluster.js";
import {
  cleanupWrapperCases,
  defaultMeta,
  fakePiRecord,
  WRAPPER_BIN,
  wrapperCase,
} from "../support/wrapper-harness.js";

const missing = missingNeeds(SLURM_TOOLS, { root: true });
const SERVE = [process.execPath, WRAPPER_BIN];

afterEach(cleanupWrapperCases);

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, encoding: "utf8" }).trim();

const steps = (...middle: object[]) => ({
  steps: [
    { agentStart: true },
    { turnStart: true },
    { user: true },
    ...middle,
    { assistant: { text: "done", stopReason: "stop" } },
    { turnEnd: true },
    { agentEnd: true },
  ],
});
const sleeping = { steps: [{ agentStart: true }, { turnStart: true }, { sleep: 120_000 }] };

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

describe("a run on a slurm runner (one-node Slurm, fake pi)", () => {
  let slurm: SlurmCluster | undefined;
  beforeAll(async () => {
    if (missing === undefined) slurm = await startSlurmCluster();
  }, 40_000);
  afterAll(async () => {
    await slurm?.stop();
  });

  /** A case whose cwd is a repository with one commit, on a slurm runner with `definition`. */
  async function slurmCase(definition: Record<string, unknown>, scenario: object) {
    const c = await wrapperCase({
      meta: defaultMeta({
        cwd: "repo",
        runner: { name: "hpc", kind: "slurm", capacity: 2, remote_command: SERVE, ...definition },
      }),
      scenario,
    });
    const repo = path.join(c.dir, "repo");
    fs.mkdirSync(repo);
    git(repo, "init", "-q", "-b", "main");
    fs.writeFileSync(path.join(repo, "a.txt"), "a\n");
    git(repo, "add", "-A");
    git(repo, "commit", "-q", "-m", "initial");
    const env = {
      SLURM_CONF: (slurm as SlurmCluster).env.SLURM_CONF as string,
      FAKE_PI_RECORD_ENV: "SLURM_JOB_ID,SLURM_JOB_NAME",
    };
    const jobName = slurmJobName({ runId: "run-1", resultPath: path.join(c.dir, "out", "result.json") });
    return { c, repo, env, jobName };
  }

  async function expectNothingLeft(): Promise<void> {
    const cluster = slurm as SlurmCluster;
    expect(await cluster.drained(10_000)).toEqual([]);
    expect(await until(() => cluster.stepPids().length === 0, 10_000)).toBe(true);
  }

  it("runs the turn as a job named for the run: completed, its commit on the branch, the queue empty after", async (ctx) => {
    skipOrFail(ctx, missing);
    const { c, repo, env, jobName } = await slurmCase({}, steps({ writeFile: { path: "child.txt", text: "child\n" } }));
    const out = await c.run({ env, timeoutMs: 60_000 });
    expect(out.code, out.stderr).toBe(0);
    expect(out.result).toMatchObject({
      status: "completed",
      finalText: "done",
      runner: { name: "hpc", kind: "slurm" },
    });
    const record = await fakePiRecord(c.dir);
    expect(record.env.SLURM_JOB_ID).toMatch(/^\d+$/);
    expect(record.env.SLURM_JOB_NAME).toBe(jobName);
    const files = git(repo, "ls-tree", "--name-only", "HEAD").split("\n");
    expect(files, `${out.stderr}\n${await out.read("out/stderr.log")}`).toContain("child.txt");
    expect(git(repo, "show", "HEAD:child.txt")).toBe("child");
    // Nothing was left for the last resort: the log says nothing of it.
    expect(await out.read("out/stderr.log")).not.toContain("slurm job");
    await expectNothingLeft();
  });

  it("a turn's check runs on the far side too: in a job of the run's name, in the workspace the turn left, nothing left after", async (ctx) => {
    skipOrFail(ctx, missing);
    const { c, env, jobName } = await slurmCase({}, steps({ writeFile: { path: "child.txt", text: "child\n" } }));
    const log = path.join(c.dir, "check.log");
    const check = 'echo "$SLURM_JOB_NAME" > "$CHECK_LOG"; cat child.txt';
    const meta = JSON.parse(fs.readFileSync(c.metaPath, "utf8"));
    meta.runnerWorkspacePath = path.join(c.dir, "agent", "runner-workspace");
    meta.env = { CHECK_LOG: log };
    meta.verify = { run: [check], maxRepairs: 0, timeoutMs: 30_000 };
    fs.writeFileSync(c.metaPath, JSON.stringify(meta));
    const out = await c.run({ env, timeoutMs: 90_000 });
    expect(out.code, out.stderr).toBe(0);
    expect(out.result?.verification, await out.read("out/stderr.log")).toMatchObject({
      status: "passed",
      checks: [{ name: check, exit_code: 0, output_tail: "child" }],
    });
    expect(fs.readFileSync(log, "utf8").trim()).toBe(jobName);
    await expectNothingLeft();
  });

  const refusals: Array<[string, string[], RegExp]> = [
    ["a partition the cluster does not have", ["--partition=nowhere"], /srun: error: .*[Ii]nvalid partition name/],
    ["a time limit over the partition's", ["--partition=short", "--time=10"], /pending for PartitionTimeLimit/],
    ["an option srun does not know", ["--no-such-option"], /srun: (unrecognized|unknown) option/],
  ];
  for (const [what, options, said] of refusals) {
    it(`the cluster's refusal of ${what}: failed within seconds, with srun's own words`, async (ctx) => {
      skipOrFail(ctx, missing);
      const { c, env } = await slurmCase({ srun_options: options }, steps());
      const out = await c.run({ env, timeoutMs: 60_000 });
      expect(out.code).toBe(1);
      expect(out.durationMs).toBeLessThan(10_000);
      expect(out.result?.status).toBe("failed");
      expect(out.result?.errorMessage).toMatch(/runner hpc \(slurm\) could not start: .*\(exit code \d+\)/);
      expect(out.result?.errorMessage).toMatch(said);
      expect(out.result!.errorMessage!.length).toBeLessThan(1600);
      console.log(`slurm refusal (${what}) in ${out.durationMs} ms: ${out.result?.errorMessage}`);
      await expectNothingLeft();
    });
  }

  it("a far side that breaks the protocol and ignores its stdin's end: srun is killed after the grace, and the last resort cancels the job by name", async (ctx) => {
    skipOrFail(ctx, missing);
    // Its first line is not a frame: the run ends the prefix (stdin closed, then SIGKILL after
    // KILL_GRACE_MS). A SIGKILLed srun leaves its job running: only scancel ends the sleep.
    const script = 'echo "$$" > "$0"; echo not-a-frame; exec sleep 300';
    const { c, env, jobName } = await slurmCase({ remote_command: ["sh", "-c", script] }, steps());
    const pidFile = path.join(c.dir, "far.pid");
    (c.meta.runner as { remote_command: string[] }).remote_command.push(pidFile);
    fs.writeFileSync(c.metaPath, JSON.stringify(c.meta));
    const out = await c.run({ env, timeoutMs: 60_000 });
    expect(out.result?.status).toBe("failed");
    expect(out.result?.errorMessage).toMatch(/^runner hpc \(slurm\): protocol error/);
    const log = await out.read("out/stderr.log");
    expect(log).toMatch(
      new RegExp(
        `slurm job ${jobName} was still listed after srun ended \\(\\d+ RUNNING\\): scancel --name=${jobName} ended it`,
      ),
    );
    const farPid = Number(fs.readFileSync(pidFile, "utf8").trim());
    expect(await until(() => !processAlive(farPid), 10_000)).toBe(true);
    console.log(`slurm: a job left by a SIGKILLed srun was cancelled; the run took ${out.durationMs} ms`);
    await expectNothingLeft();
  });

  it("a stop (SIGTERM to the wrapper) ends the turn interrupted and the job with it", async (ctx) => {
    skipOrFail(ctx, missing);
    const { c, env } = await slurmCase({}, sleeping);
    const run = c.start({ env, timeoutMs: 60_000 });
    const recordFile = path.join(c.dir, "fake-pi-record.json");
    expect(await until(() => fs.existsSync(recordFile), 30_000)).toBe(true);
    expect(await (slurm as SlurmCluster).squeue()).toHaveLength(1);
    run.kill("SIGTERM");
    const out = await c.collect(await run.done);
    expect(out.result?.status).toBe("interrupted");
    const { pid } = await fakePiRecord(c.dir);
    expect(await until(() => !processAlive(pid), 10_000)).toBe(true);
    await expectNothingLeft();
  });

  it("a limit (time_limit, then its grace) stops the turn, and the job ends with it", async (ctx) => {
    skipOrFail(ctx, missing);
    const { c, env } = await slurmCase({}, sleeping);
    // 4 s: room for srun, serve and the fake pi to start on a loaded machine before the limit.
    fs.writeFileSync(c.metaPath, JSON.stringify({ ...c.meta, limits: { time_limit: 4, grace_seconds: 1 } }));
    const out = await c.run({ env, timeoutMs: 60_000 });
    expect(out.result, out.stderr).toMatchObject({ limit: { name: "time_limit", value: 4 } });
    expect(out.durationMs).toBeLessThan(25_000);
    const { pid } = await fakePiRecord(c.dir);
    expect(await until(() => !processAlive(pid), 10_000)).toBe(true);
    await expectNothingLeft();
  });

  it("a SIGKILLed wrapper: its orphan guard's SIGTERM to srun ends the job, and nothing of it is left", async (ctx) => {
    skipOrFail(ctx, missing);
    const { c, env } = await slurmCase({}, sleeping);
    const run = c.start({ env, timeoutMs: 60_000 });
    const recordFile = path.join(c.dir, "fake-pi-record.json");
    expect(await until(() => fs.existsSync(recordFile), 30_000)).toBe(true);
    const { pid } = await fakePiRecord(c.dir);
    expect(await (slurm as SlurmCluster).squeue()).toHaveLength(1);
    run.kill("SIGKILL");
    const killed = Date.now();
    await run.done;
    expect(await until(() => !processAlive(pid), 10_000)).toBe(true);
    await expectNothingLeft();
    console.log(`slurm: a SIGKILLed wrapper's job was gone ${Date.now() - killed} ms later`);
  });

  it("the slurm guard: once the wrapper's pipe closes without `exit`, scancel --name ends a job its SIGKILLed srun left", async (ctx) => {
    skipOrFail(ctx, missing);
    const cluster = slurm as SlurmCluster;
    const jobName = `pst-guard-test-${process.pid}`;
    // As test/runners/slurm-cluster.test.ts shows: a silent job outlives its SIGKILLed srun.
    const job = cluster.spawnSrun([
      "--ntasks=1",
      "--quiet",
      `--job-name=${jobName}`,
      "sh",
      "-c",
      "echo $$; exec sleep 300",
    ]);
    const farPid = await new Promise<number>((resolve) =>
      job.stdout?.once("data", (d) => resolve(Number(String(d).trim()))),
    );
    const released = startSlurmGuard(jobName, cluster.env);
    const guard = startSlurmGuard(jobName, cluster.env);
    job.kill("SIGKILL");
    await job.done;
    released.release();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(processAlive(farPid)).toBe(true);
    const listed = await runProcess("squeue", ["-h", "-o", "%j %T"], { env: cluster.env });
    expect(listed.stdout.trim()).toBe(`${jobName} RUNNING`);
    const closed = Date.now();
    guard.close();
    expect(await until(() => !processAlive(farPid), 10_000)).toBe(true);
    await expectNothingLeft();
    console.log(`slurm: the slurm guard's scancel ended the job ${Date.now() - closed} ms after its pipe closed`);
  });
});
