/**
 * The one-node Slurm cluster of the slurm runner tests (test/support/slurm-cluster.ts) runs a
 * job through `srun` with stdin and stdout connected, leaves the queue empty after it, ends a
 * running job on `scancel`, and leaves nothing behind when stopped.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runnerArgv, scancelArgv } from "../../src/contracts/runner-prefix.js";
import { missingNeeds, skipOrFail } from "../support/needs.js";
import { pidRunning, runProcess, type SpawnedProcess } from "../support/processes.js";
import { SLURM_TOOLS, type SlurmCluster, startSlurmCluster } from "../support/slurm-cluster.js";

const missing = missingNeeds(SLURM_TOOLS, { root: true });

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return check();
}

describe("a one-node Slurm cluster on loopback", () => {
  let slurm: SlurmCluster | undefined;
  const started = Date.now();
  let startMs = 0;
  beforeAll(async () => {
    if (missing !== undefined) return;
    slurm = await startSlurmCluster();
    startMs = Date.now() - started;
  }, 40_000);
  afterAll(async () => {
    const dir = slurm?.dir;
    await slurm?.stop();
    if (dir) expect(existsSync(dir)).toBe(false);
  });

  it("runs `srun node -e …` with stdin in and stdout back; the queue is empty after", async (ctx) => {
    skipOrFail(ctx, missing);
    const cluster = slurm as SlurmCluster;
    const script = "let s='';process.stdin.on('data',(d)=>s+=d).on('end',()=>console.log(s.toUpperCase().trim()))";
    const bare = await cluster.srun(["-N1", "-n1", "--quiet", "true"]);
    const result = await cluster.srun(["-N1", "-n1", "--quiet", "node", "-e", script], { input: "streamed in\n" });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim()).toBe("STREAMED IN");
    console.log(
      `slurm: daemons idle after ${startMs} ms; srun true ${bare.durationMs} ms; srun node with stdin ${result.durationMs} ms`,
    );
    expect(await cluster.drained()).toEqual([]);
  });

  it("ends a running job on scancel: its process is gone and the queue empty within seconds", async (ctx) => {
    skipOrFail(ctx, missing);
    const cluster = slurm as SlurmCluster;
    const job = cluster.spawnSrun(["-N1", "-n1", "--quiet", "sh", "-c", "echo $$; exec sleep 300"]);
    let output = "";
    const pid = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("the job printed no pid")), 20_000);
      const onData = (chunk: string) => {
        output += chunk;
        if (output.includes("\n")) {
          clearTimeout(timer);
          resolve(Number(output.trim()));
        }
      };
      job.stdout?.on("data", onData);
    });
    expect(pidRunning(pid)).toBe(true);
    const [id] = await cluster.squeue();
    expect(id).toMatch(/^\d+$/);
    const cancelled = Date.now();
    const scancel = await cluster.scancel([id as string]);
    expect(scancel.code, scancel.stderr).toBe(0);
    expect(await until(() => !pidRunning(pid), 10_000)).toBe(true);
    const ended = Date.now() - cancelled;
    await job.done;
    expect(await until(async () => (await cluster.squeue()).length === 0, 10_000)).toBe(true);
    console.log(`slurm: scancel ended the job's process in ${ended} ms`);
  });

  it("ends the job when srun gets SIGTERM, or when srun's stdin closes (the task reads EOF)", async (ctx) => {
    skipOrFail(ctx, missing);
    const cluster = slurm as SlurmCluster;
    const term = cluster.spawnSrun(["--ntasks=1", "--quiet", "sh", "-c", "echo $$; exec sleep 300"]);
    const pid = await firstLineNumber(term);
    const sent = Date.now();
    term.kill("SIGTERM");
    await term.done;
    expect(await until(() => !pidRunning(pid), 10_000)).toBe(true);
    const termMs = Date.now() - sent;
    const script = "console.log(process.pid);process.stdin.resume();process.stdin.on('end',()=>process.exit(3))";
    const eof = spawn("srun", ["--ntasks=1", "--quiet", "node", "-e", script], { env: cluster.env, stdio: "pipe" });
    await new Promise((resolve) => eof.stdout.once("data", resolve));
    const closed = Date.now();
    eof.stdin.end();
    const code = await new Promise((resolve) => eof.once("close", resolve));
    expect(code).toBe(3);
    console.log(
      `slurm: SIGTERM to srun ended the task in ${termMs} ms; stdin's end reached it in ${Date.now() - closed} ms`,
    );
    expect(await until(async () => (await cluster.squeue()).length === 0, 10_000)).toBe(true);
  });

  it("leaves the job running when srun is SIGKILLed, until scancel by its job name", async (ctx) => {
    skipOrFail(ctx, missing);
    const cluster = slurm as SlurmCluster;
    const jobName = `pst-test-${process.pid}`;
    const argv = runnerArgv(
      { kind: "slurm", remote_command: ["sh", "-c", "echo $$; exec sleep 300"], capacity: 1 },
      { jobName },
    );
    const job = cluster.spawnSrun(argv.slice(1));
    const pid = await firstLineNumber(job);
    job.kill("SIGKILL");
    await job.done;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(pidRunning(pid)).toBe(true);
    expect(await cluster.squeue()).toHaveLength(1);
    const [program, ...args] = scancelArgv(jobName);
    const scancel = await runProcess(program as string, args, { env: cluster.env });
    expect(scancel.code, scancel.stderr).toBe(0);
    expect(await until(() => !pidRunning(pid), 10_000)).toBe(true);
    expect(await until(async () => (await cluster.squeue()).length === 0, 10_000)).toBe(true);
  });
});

/** The number on the first line a process prints (a pid). */
function firstLineNumber(process: SpawnedProcess): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => reject(new Error(`no first line within 20 s: ${JSON.stringify(output)}`)), 20_000);
    process.stdout?.on("data", (chunk: Buffer | string) => {
      output += String(chunk);
      if (output.includes("\n")) {
        clearTimeout(timer);
        resolve(Number(output.split("\n")[0]?.trim()));
      }
    });
  });
}
