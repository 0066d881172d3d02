/**
 * The runner prefixes (src/contracts/runner-prefix.ts) against a real far host over ssh and a
 * real one-node Slurm: the remote words arrive as written (nothing runs in the far shell that
 * was not meant to), stdin reaches the far command and its stdout comes back, the shared ssh
 * connection lives as src/wrapper/remote/ssh-master.ts says, and a refusal (closed port, wrong key,
 * bad partition) is the tool's own message within seconds.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runnerArgv } from "../../src/contracts/runner-prefix.js";
import type { SlurmRunner } from "../../src/contracts/runners.js";
import { checkSshMaster, closeSshMaster, prepareSshConnection } from "../../src/wrapper/remote/ssh-master.js";
import { missingNeeds, skipOrFail } from "../support/needs.js";
import { pidRunning, runProcess, type SpawnOptions } from "../support/processes.js";
import { SLURM_TOOLS, type SlurmCluster, startSlurmCluster } from "../support/slurm-cluster.js";
import { SSH_HOST_TOOLS, type SshHost, sshRunnerFor, startSshHost } from "../support/ssh-host.js";

const run = (argv: string[], opts?: SpawnOptions) => runProcess(argv[0] as string, argv.slice(1), opts);
/** Prints each argument it gets after a `|`, then stdin in capitals. */
const ECHO_SCRIPT =
  "process.stdout.write(process.argv.slice(1).map((a) => a + '|').join(''));" +
  "let s='';process.stdin.on('data',(d)=>s+=d).on('end',()=>console.log(s.toUpperCase()))";
async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return check();
}
const TRICKY_WORDS = ["a b", "$HOME", "it's", "`id`", ";", "*", "-x", ""];

describe("the ssh prefix on a far host", () => {
  const missing = missingNeeds(SSH_HOST_TOOLS, { root: true });
  let far: SshHost | undefined;
  let tmpDir = "";
  beforeAll(async () => {
    if (missing !== undefined) return;
    far = await startSshHost();
    tmpDir = mkdtempSync(path.join(os.tmpdir(), "pst-prefix-"));
  }, 30_000);
  afterAll(async () => {
    // A master left by a failed test ends now, not ControlPersist seconds later.
    if (far) await closeSshMaster(definition(far), prepareSshConnection({ tmpDir, uid: process.getuid?.() ?? 0 }));
    await far?.stop();
    if (tmpDir) rmSync(tmpDir, { recursive: true, force: true });
  });
  const definition = sshRunnerFor;

  it("passes every remote word through the far shell as written, streams stdin in and stdout back", async (ctx) => {
    skipOrFail(ctx, missing);
    const host = far as SshHost;
    const connection = prepareSshConnection({ tmpDir, uid: process.getuid?.() ?? 0 });
    const remote = ["node", "-e", ECHO_SCRIPT, ...TRICKY_WORDS];
    const argv = runnerArgv(definition(host, { remote_command: remote }), { connection });
    const result = await run(argv, { input: "through ssh" });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(`${[...TRICKY_WORDS, "serve"].map((w) => `${w}|`).join("")}THROUGH SSH\n`);
    expect((await closeSshMaster(definition(host), connection)).ok).toBe(true);
  });

  it("shares one connection per host: a master in its own session, checked, then closed by -O exit", async (ctx) => {
    skipOrFail(ctx, missing);
    const host = far as SshHost;
    const connection = prepareSshConnection({ tmpDir, uid: process.getuid?.() ?? 0 });
    const def = definition(host, { remote_command: ["true"] });
    const first = await run(runnerArgv(def, { connection }));
    const second = await run(runnerArgv(def, { connection }));
    expect([first.code, second.code]).toEqual([0, 0]);
    console.log(`ssh runner prefix: first ${first.durationMs} ms, over the shared connection ${second.durationMs} ms`);
    const check = await checkSshMaster(def, connection);
    expect(check.ok, check.message).toBe(true);
    const masterPid = Number(/pid=(\d+)/.exec(check.message)?.[1]);
    expect(pidRunning(masterPid)).toBe(true);
    // The master left the process group of the ssh that started it: a wrapper that ends its
    // own group does not take the shared connection down for the other turns.
    const stat = readFileSync(`/proc/${masterPid}/stat`, "utf8");
    const session = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[3]);
    expect(session).toBe(masterPid);
    const closed = await closeSshMaster(def, connection);
    expect(closed.ok, closed.message).toBe(true);
    const deadline = Date.now() + 5_000;
    while (pidRunning(masterPid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(pidRunning(masterPid)).toBe(false);
    expect((await checkSshMaster(def, connection)).ok).toBe(false);
  });

  it("lets four first connections race for one socket: every one of them runs", async (ctx) => {
    skipOrFail(ctx, missing);
    const host = far as SshHost;
    const connection = prepareSshConnection({ tmpDir, uid: process.getuid?.() ?? 0 });
    const def = definition(host, { remote_command: ["sh", "-c", "hostname", "sh"] });
    const results = await Promise.all([1, 2, 3, 4].map(() => run(runnerArgv(def, { connection }))));
    expect(results.map((r) => [r.code, r.stdout.trim()])).toEqual(results.map(() => [0, host.hostname]));
    expect((await closeSshMaster(def, connection)).ok).toBe(true);
  });

  it("carries 12 sessions at once over one shared connection (a fan-out of 12 on one host)", async (ctx) => {
    skipOrFail(ctx, missing);
    const host = far as SshHost;
    const connection = prepareSshConnection({ tmpDir, uid: process.getuid?.() ?? 0 });
    const def = definition(host, { remote_command: ["sh", "-c", "sleep 2; echo done", "sh"] });
    const warm = await run(runnerArgv(def, { connection }));
    expect(warm.code, warm.stderr).toBe(0);
    const started = Date.now();
    const results = await Promise.all(Array.from({ length: 12 }, () => run(runnerArgv(def, { connection }))));
    const wallMs = Date.now() - started;
    expect(results.map((r) => `${r.code} ${r.stdout.trim()}`)).toEqual(results.map(() => "0 done"));
    console.log(
      `ssh: 12 sessions of 2 s at once over one connection took ${wallMs} ms (one alone ${warm.durationMs} ms)`,
    );
    expect(wallMs).toBeLessThan(2 * warm.durationMs + 1_000);
    expect((await closeSshMaster(def, connection)).ok).toBe(true);
  });

  it("a killed ssh client ends a far command that reads stdin (shared connection or not); one that ignores it runs on", async (ctx) => {
    skipOrFail(ctx, missing);
    const host = far as SshHost;
    const reads = "console.log(process.pid);process.stdin.resume();process.stdin.on('end',()=>process.exit(0))";
    const ignores = "console.log(process.pid);setInterval(()=>{},1000)";
    const figures: string[] = [];
    for (const shared of [false, true]) {
      const connection = shared ? prepareSshConnection({ tmpDir, uid: process.getuid?.() ?? 0 }) : undefined;
      for (const script of [reads, ignores]) {
        const argv = runnerArgv(definition(host, { remote_command: ["node", "-e", script] }), { connection });
        // Not processes.ts: with a shared connection the master holds this client's stdout
        // (ssh passes its descriptors to the master), so the pipe outlives the killed client.
        const client = spawn(argv[0] as string, argv.slice(1), { stdio: "pipe", detached: true });
        const farPid = await new Promise<number>((resolve) =>
          client.stdout.once("data", (d: Buffer) => resolve(Number(String(d).split("\n")[0]))),
        );
        const killed = Date.now();
        process.kill(-(client.pid as number), "SIGKILL");
        const gone = async () => !pidRunning(farPid);
        const ended = await until(gone, script === reads ? 5_000 : 1_500);
        figures.push(
          `${shared ? "shared" : "own"} connection, ${script === reads ? "reads stdin" : "ignores stdin"}: ${ended ? `ended in ${Date.now() - killed} ms` : "still running"}`,
        );
        // A command that reads its stdin ends; one that ignores it runs on (serve must read it).
        expect(ended).toBe(script === reads);
        if (!ended) process.kill(farPid, "SIGKILL");
        client.stdout.destroy();
        client.stderr.destroy();
        client.stdin.destroy();
      }
      if (connection) await closeSshMaster(definition(host), connection);
    }
    console.log(`ssh client killed: ${figures.join("; ")}`);
  });

  it("ends with ssh's own message within seconds on a closed port or a key the host refuses", async (ctx) => {
    skipOrFail(ctx, missing);
    const host = far as SshHost;
    const closedPort = await run(runnerArgv(definition(host, { port: host.port + 1 })));
    expect(closedPort.code).toBe(255);
    expect(closedPort.stderr).toMatch(/Connection refused/);
    const otherKey = path.join(tmpDir, "other");
    await runProcess("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", otherKey]);
    const refused = await run(runnerArgv(definition(host, { identity: otherKey })));
    expect(refused.code).toBe(255);
    expect(refused.stderr).toMatch(/Permission denied \(publickey\)/);
    console.log(`ssh refusals: closed port ${closedPort.durationMs} ms, wrong key ${refused.durationMs} ms`);
    expect(Math.max(closedPort.durationMs, refused.durationMs)).toBeLessThan(10_000);
  });
});

describe("the slurm prefix on a one-node cluster", () => {
  const missing = missingNeeds(SLURM_TOOLS, { root: true });
  let slurm: SlurmCluster | undefined;
  beforeAll(async () => {
    if (missing === undefined) slurm = await startSlurmCluster();
  }, 40_000);
  afterAll(async () => {
    await slurm?.stop();
  });

  it("runs one task with the remote words as argv, stdin in and stdout back; the queue is empty after", async (ctx) => {
    skipOrFail(ctx, missing);
    const cluster = slurm as SlurmCluster;
    const definition: SlurmRunner = {
      kind: "slurm",
      srun_options: ["--time=5", "-n", "3"],
      remote_command: ["node", "-e", ECHO_SCRIPT, ...TRICKY_WORDS],
      capacity: 2,
    };
    const result = await run(runnerArgv(definition), { env: cluster.env, input: "through srun" });
    expect(result.code, result.stderr).toBe(0);
    // One line: one task, despite the definition's -n 3 (the protocol has one far side).
    expect(result.stdout).toBe(`${[...TRICKY_WORDS, "serve"].map((w) => `${w}|`).join("")}THROUGH SRUN\n`);
    expect(await cluster.drained()).toEqual([]);
  });

  it("ends with the cluster's own refusal within seconds: a partition it does not have", async (ctx) => {
    skipOrFail(ctx, missing);
    const cluster = slurm as SlurmCluster;
    const definition: SlurmRunner = { kind: "slurm", srun_options: ["-p", "nosuch"], capacity: 2 };
    const result = await run(runnerArgv(definition), { env: cluster.env });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/invalid partition/i);
    expect(result.durationMs).toBeLessThan(10_000);
    expect(await cluster.drained()).toEqual([]);
  });
});
