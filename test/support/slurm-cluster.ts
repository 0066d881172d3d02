/**
 * A one-node Slurm cluster on loopback for the slurm runner tests:
 * munged (with its own key and socket), slurmctld and slurmd,
 * each started here in the foreground and stopped by its pid; configuration, state, spool and
 * logs in one temp folder; the two Slurm ports free high ports chosen per run. A command sees
 * the cluster through `env` (SLURM_CONF). stop() cancels what is left, ends every job step
 * (slurmstepd detaches from slurmd, so it is found by its open files in the spool folder), the
 * daemons, and removes the folder. Needs root (slurmd runs jobs as their user), munged,
 * slurmctld, slurmd, srun, squeue, sinfo and scancel.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { killNow, registerLastResort, unregisterLastResort } from "./last-resort.js";
import { findTool } from "./needs.js";
import { type ProcessResult, runProcess, type SpawnedProcess, type SpawnOptions, spawnProcess } from "./processes.js";

export const SLURM_TOOLS = ["munged", "slurmctld", "slurmd", "srun", "squeue", "sinfo", "scancel", "setpriv"] as const;

export interface SlurmCluster {
  /** The environment a Slurm command needs (SLURM_CONF), over this process's. */
  env: NodeJS.ProcessEnv;
  /** The temp folder holding slurm.conf, state, spool and logs. */
  dir: string;
  /** The node's (and the controller's) name: this machine's short hostname. */
  nodeName: string;
  srun(args: string[], opts?: SpawnOptions): Promise<ProcessResult>;
  /** Starts `srun args` without waiting (for interrupt and scancel tests). */
  spawnSrun(args: string[], opts?: SpawnOptions): SpawnedProcess;
  /** Job ids in the queue (pending or running). */
  squeue(): Promise<string[]>;
  /**
   * The queue once it is empty, or what is still in it after `timeoutMs` (default 5 s): a job
   * whose srun has returned may stay a moment longer (COMPLETING) on a busy machine.
   */
  drained(timeoutMs?: number): Promise<string[]>;
  scancel(args: string[]): Promise<ProcessResult>;
  /** The pids of job steps still alive (slurmstepd and what it started). */
  stepPids(): number[];
  stop(): Promise<void>;
}

/** A TCP port nothing listens on right now (the kernel's choice, then released). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function slurmConf(o: { dir: string; node: string; ctldPort: number; slurmdPort: number; cluster: string }): string {
  const d = o.dir;
  return [
    `ClusterName=${o.cluster}`,
    `SlurmctldHost=${o.node}(127.0.0.1)`,
    `SlurmctldPort=${o.ctldPort}`,
    `SlurmdPort=${o.slurmdPort}`,
    "SlurmUser=root",
    "SlurmdUser=root",
    "AuthType=auth/munge",
    "CredType=cred/munge",
    `AuthInfo=socket=${d}/munge/munge.sock`,
    `StateSaveLocation=${d}/state`,
    `SlurmdSpoolDir=${d}/spool`,
    `SlurmctldPidFile=${d}/slurmctld.pid`,
    `SlurmdPidFile=${d}/slurmd.pid`,
    `SlurmctldLogFile=${d}/slurmctld.log`,
    `SlurmdLogFile=${d}/slurmd.log`,
    "ProctrackType=proctrack/linuxproc",
    "TaskPlugin=task/none",
    "JobAcctGatherType=jobacct_gather/none",
    "AccountingStorageType=accounting_storage/none",
    "JobCompType=jobcomp/none",
    "MpiDefault=none",
    "SelectType=select/cons_tres",
    "SelectTypeParameters=CR_CPU",
    "ReturnToService=2",
    "MailProg=/bin/true",
    // A cancelled step's processes get SIGKILL this soon after SIGTERM.
    "KillWait=2",
    `NodeName=${o.node} NodeAddr=127.0.0.1 CPUs=${os.availableParallelism()} RealMemory=1000 State=UNKNOWN`,
    `PartitionName=debug Nodes=${o.node} Default=YES MaxTime=INFINITE State=UP`,
    // A partition with a time limit of one minute: a longer `--time` there is a refusal.
    `PartitionName=short Nodes=${o.node} MaxTime=1 State=UP`,
    "",
  ].join("\n");
}

/** Pids of processes holding a file under `folder` open (job steps keep their spool socket). */
function processesUsing(folder: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isSafeInteger(pid) || pid === process.pid) continue;
    try {
      const fds = readdirSync(`/proc/${pid}/fd`);
      if (fds.some((fd) => safeReadlink(`/proc/${pid}/fd/${fd}`).startsWith(`${folder}/`))) found.push(pid);
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

function safeReadlink(link: string): string {
  try {
    return readlinkSync(link);
  } catch {
    return "";
  }
}

/**
 * A daemon of the cluster, in a process group of its own. Not through processes.ts's
 * spawnProcess: its killAll(), which a tree test's cleanup calls after each test, would end
 * the cluster that the file's other tests still use. Ended by stop() (and the last resort).
 */
function spawnDaemon(cmd: string, args: string[]): SpawnedProcess {
  const started = Date.now();
  const child = spawn(cmd, args, { detached: true, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-4000);
  });
  const pid = child.pid ?? -1;
  const done = new Promise<ProcessResult>((resolve) => {
    const end = (code: number | null, signal: NodeJS.Signals | null) =>
      resolve({ pid, code, signal, stdout: "", stderr, timedOut: false, durationMs: Date.now() - started });
    child.once("error", (err) => {
      stderr += String(err);
      end(null, null);
    });
    child.once("close", end);
  });
  const kill = (signal: NodeJS.Signals = "SIGTERM") => {
    try {
      process.kill(-pid, signal);
    } catch {
      try {
        process.kill(pid, signal);
      } catch {
        // gone
      }
    }
  };
  return { pid, kill, done, stdout: null };
}

async function stopDaemon(daemon: SpawnedProcess): Promise<void> {
  daemon.kill("SIGTERM");
  const timer = setTimeout(() => daemon.kill("SIGKILL"), 3_000);
  await daemon.done.catch(() => undefined);
  clearTimeout(timer);
}

async function makeMunge(dir: string): Promise<string> {
  const mungeDir = path.join(dir, "munge");
  await mkdir(mungeDir, { mode: 0o755 }); // munged wants its socket folder open to all (the key stays 0400)
  const key = path.join(mungeDir, "munge.key");
  await writeFile(key, randomBytes(1024), { mode: 0o400 });
  await runProcess("chown", ["-R", "munge:munge", mungeDir]);
  return mungeDir;
}

async function waitForIdle(env: NodeJS.ProcessEnv, alive: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline && alive()) {
    const result = await runProcess("sinfo", ["-h", "-o", "%T"], { env, timeoutMs: 5_000 });
    last = `${result.stdout}${result.stderr}`.trim();
    if (result.code === 0 && last === "idle") return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the one-node Slurm cluster did not become idle: ${last || "its daemons exited"}`);
}

export async function startSlurmCluster(): Promise<SlurmCluster> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "pst-slurm-"));
  await chmod(dir, 0o755); // munged (as munge) reaches its folder through this one
  const daemons: SpawnedProcess[] = [];
  const env: NodeJS.ProcessEnv = { ...process.env, SLURM_CONF: path.join(dir, "slurm.conf") };
  const id = `slurm:${dir}`;
  // The last resort has 500 ms (last-resort.ts): the daemons by pid, then the folder; a job
  // step left behind is found only by stop() (scanning /proc is too slow for it).
  registerLastResort(id, {
    kill: () =>
      killNow(
        daemons.map((daemon) => daemon.pid),
        true,
      ),
    clean: () => rmSync(dir, { recursive: true, force: true }),
  });
  const stop = async () => {
    await runProcess("scancel", ["--full", "--state=RUNNING"], { env, timeoutMs: 5_000 }).catch(() => undefined);
    await runProcess("scancel", ["--state=PENDING"], { env, timeoutMs: 5_000 }).catch(() => undefined);
    for (const daemon of daemons.splice(0).reverse()) await stopDaemon(daemon);
    killNow(processesUsing(dir));
    await rm(dir, { recursive: true, force: true, maxRetries: 3 });
    unregisterLastResort(id);
  };
  try {
    const mungeDir = await makeMunge(dir);
    const node = os.hostname().split(".")[0] as string;
    const [ctldPort, slurmdPort] = [await freePort(), await freePort()];
    const cluster = `pst${randomBytes(3).toString("hex")}`;
    await Promise.all(["state", "spool"].map((sub) => mkdir(path.join(dir, sub))));
    await writeFile(env.SLURM_CONF as string, slurmConf({ dir, node, ctldPort, slurmdPort, cluster }));
    const munged = findTool("munged") ?? "/usr/sbin/munged";
    const mungeArgs = [`--socket=${mungeDir}/munge.sock`, `--key-file=${mungeDir}/munge.key`, "-F"];
    const mungeFiles = [`--pid-file=${mungeDir}/munged.pid`, `--log-file=${mungeDir}/munged.log`];
    const setpriv = ["--reuid=munge", "--regid=munge", "--init-groups", munged];
    daemons.push(
      spawnDaemon("setpriv", [...setpriv, ...mungeArgs, ...mungeFiles, `--seed-file=${mungeDir}/munged.seed`]),
    );
    daemons.push(spawnDaemon(findTool("slurmctld") ?? "slurmctld", ["-D", "-f", env.SLURM_CONF as string]));
    daemons.push(spawnDaemon(findTool("slurmd") ?? "slurmd", ["-D", "-f", env.SLURM_CONF as string]));
    const exits: string[] = [];
    const names = ["munged", "slurmctld", "slurmd"];
    daemons.forEach((daemon, i) => {
      void daemon.done.then((r) => exits.push(`${names[i]} exited ${r.code}: ${r.stderr.trim().slice(-400)}`));
    });
    const squeue = async () => {
      const result = await runProcess("squeue", ["-h", "-o", "%i"], { env, timeoutMs: 5_000 });
      if (result.code !== 0) throw new Error(`squeue: ${result.stderr.trim()}`);
      return result.stdout.split("\n").filter((line) => line.trim() !== "");
    };
    await waitForIdle(env, () => exits.length === 0, 20_000).catch((error: unknown) => {
      throw new Error([String(error), ...exits, ...logTails(dir)].join("\n"));
    });
    return {
      env,
      dir,
      nodeName: node,
      srun: (args, opts) => runProcess("srun", args, { env, timeoutMs: 30_000, ...opts }),
      spawnSrun: (args, opts) => spawnProcess("srun", args, { env, timeoutMs: 60_000, ...opts }),
      squeue,
      async drained(timeoutMs = 5_000) {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const left = await squeue();
          if (left.length === 0 || Date.now() > deadline) return left;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      },
      scancel: (args) => runProcess("scancel", args, { env, timeoutMs: 5_000 }),
      stepPids: () => processesUsing(path.join(dir, "spool")),
      stop,
    };
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
}

/** The last lines of each daemon's log, for an error that says why the cluster did not start. */
function logTails(dir: string): string[] {
  return ["slurmctld.log", "slurmd.log", "munge/munged.log"].map((log) => {
    try {
      return `${log}: ${readFileSync(path.join(dir, log), "utf8").trim().split("\n").slice(-5).join("\n")}`;
    } catch {
      return `${log}: (none)`;
    }
  });
}
