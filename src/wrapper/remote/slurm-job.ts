/**
 * A slurm runner's job, from the run's side (no job is left in `squeue` after its
 * turn): the job's name, and the last resort once srun has ended.
 *
 * - The name (`srun --job-name`): `pst-<run id>-<hash>`, the run id in safe characters (it
 *   holds the child's nickname and its run, `Euclid-0002-followup`) and 8 hex digits of the run
 *   folder's path (which holds the tree), so two trees' runs of the same agent and turn never
 *   share a name. srun --quiet never prints the job's id: the name is how the run finds it.
 * - The last resort (ensureJobGone): srun normally takes its job with it — its task's exit,
 *   its stdin's end (serve reads EOF) and a SIGTERM to srun all end the job. A SIGKILLed srun
 *   does not (the wrapper kills a prefix that outstays a stop's grace): the job runs on until
 *   its time limit. So once srun has ended, however the turn ended, the run asks `squeue
 *   --name=<job>` and, when the job is still listed in a state other than COMPLETING (which is
 *   already ending), `scancel --name=<job>`, then waits until squeue no longer lists it.
 *   Each call and the whole step are bounded in time; what failed or was done is returned as
 *   lines for the run's log (stderr.log), never as an error that could cost the turn its
 *   result. When squeue itself fails, scancel is tried anyway: the name belongs to this run
 *   alone, so cancelling it can end nothing else.
 */
import { createHash } from "node:crypto";
import path from "node:path";
import type { MetaV1 } from "../../contracts/meta.js";
import { scancelArgv } from "../../contracts/runner-prefix.js";
import { type Clock, sleep, systemClock } from "../../lib/clock.js";
import { runProcess, tail } from "../../lib/run-process.js";
import { errorText } from "../../lib/values.js";
import type { RemoteChild } from "./remote-child.js";
import { startSlurmGuard } from "./slurm-guard.js";

/** The longest run id part of a job name (Slurm keeps names of any length, squeue shows 8 by default). */
const RUN_ID_CHARS = 40;
/** One squeue or scancel call. */
export const SLURM_CALL_TIMEOUT_MS = 5_000;
/** The whole last resort: the first look, scancel, and the wait for the job to leave the queue. */
export const JOB_GONE_TIMEOUT_MS = 15_000;
/** Between two looks at the queue after srun ended (or after scancel). */
export const JOB_POLL_MS = 250;
/**
 * How long a job still listed after its srun ended gets to leave by itself before scancel
 * (srun's own end of its job may reach the controller a moment after srun has exited); only
 * a job that is left behind pays it.
 */
export const JOB_SETTLE_MS = 2_000;

/** `pst-<run id in [A-Za-z0-9_.-], ≤ 40>-<8 hex of the run folder>`: unique per run. */
export function slurmJobName(meta: Pick<MetaV1, "runId" | "resultPath">): string {
  const id = meta.runId
    .replace(/[^A-Za-z0-9_.-]+/g, "-")
    .replace(/-{2,}/g, "-")
    .slice(0, RUN_ID_CHARS);
  const hash = createHash("sha256")
    .update(path.dirname(path.resolve(meta.resultPath)))
    .digest("hex")
    .slice(0, 8);
  return `pst-${id}-${hash}`;
}

/** `squeue --name=<job> -h -o "%i %T"`: one `<id> <STATE>` line per listed job. */
export function squeueArgv(jobName: string): string[] {
  return ["squeue", `--name=${jobName}`, "-h", "-o", "%i %T"];
}

export interface SlurmCallResult {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

export interface SlurmJobOperations {
  /** Runs a Slurm command to its end within `timeoutMs`; rejects only when it cannot start. */
  run(argv: string[], timeoutMs: number): Promise<SlurmCallResult>;
  clock: Clock;
}

/** The operations on this machine: the commands with the run's environment (SLURM_CONF, PATH). */
export function nodeSlurmJobOperations(env: NodeJS.ProcessEnv, clock: Clock = systemClock): SlurmJobOperations {
  return {
    clock,
    run: async ([file, ...args], timeoutMs) => {
      const result = await runProcess(file as string, args, { cwd: "/", env, timeoutMs });
      return {
        code: result.code,
        stdout: result.stdout.toString("utf8"),
        stderr: result.stderr,
        timedOut: result.timedOut,
      };
    },
  };
}

/** A listed job: its id and state (`RUNNING`, `PENDING`, `COMPLETING`, …). */
export interface ListedJob {
  id: string;
  state: string;
}

/** The jobs of `squeue -o "%i %T"` output. */
export function parseSqueue(stdout: string): ListedJob[] {
  return stdout
    .split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter(([id]) => id !== undefined && id !== "")
    .map(([id, state]) => ({ id: id as string, state: (state ?? "").toUpperCase() }));
}

/** A job that ends by itself: nothing to cancel. */
const ENDING = new Set(["COMPLETING", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"]);

export interface JobGoneReport {
  /** `gone`: not listed (or only ending); `cancelled`: scancel ended it; `unknown`: a look or scancel failed. */
  outcome: "gone" | "cancelled" | "unknown";
  /** What the run's log says: empty when there was nothing to do. */
  lines: string[];
}

function callProblem(argv: string[], result: SlurmCallResult | Error, timeoutMs: number): string {
  const command = argv.join(" ");
  if (result instanceof Error) return `${command} could not run: ${errorText(result)}`;
  if (result.timedOut) return `${command} gave no answer within ${timeoutMs} ms`;
  const said = tail(result.stderr || result.stdout, 300).replace(/\s+/g, " ");
  return `${command} failed (exit code ${result.code ?? "unknown"})${said ? `: ${said}` : ""}`;
}

type Look = { jobs: ListedJob[] } | { problem: string };

async function call(ops: SlurmJobOperations, argv: string[], timeoutMs: number): Promise<SlurmCallResult | Error> {
  try {
    return await ops.run(argv, timeoutMs);
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

async function look(ops: SlurmJobOperations, jobName: string, timeoutMs: number): Promise<Look> {
  const argv = squeueArgv(jobName);
  const result = await call(ops, argv, timeoutMs);
  if (result instanceof Error || result.timedOut || result.code !== 0) {
    return { problem: callProblem(argv, result, timeoutMs) };
  }
  return { jobs: parseSqueue(result.stdout) };
}

const live = (jobs: ListedJob[]): ListedJob[] => jobs.filter((job) => !ENDING.has(job.state));

/**
 * Makes sure no job named `jobName` is left once its srun has ended: squeue, scancel when it
 * is still listed (or when squeue could not tell), then squeue until it is gone, all within
 * `timeoutMs`. Never rejects.
 */
export async function ensureJobGone(
  jobName: string,
  ops: SlurmJobOperations,
  timeoutMs: number = JOB_GONE_TIMEOUT_MS,
): Promise<JobGoneReport> {
  const deadline = ops.clock.now() + timeoutMs;
  const budget = () => Math.max(1, Math.min(SLURM_CALL_TIMEOUT_MS, deadline - ops.clock.now()));
  const settleBy = ops.clock.now() + Math.min(JOB_SETTLE_MS, timeoutMs / 2);
  let first = await look(ops, jobName, budget());
  while (!("problem" in first) && live(first.jobs).length > 0 && ops.clock.now() + JOB_POLL_MS <= settleBy) {
    await sleep(ops.clock, JOB_POLL_MS);
    first = await look(ops, jobName, budget());
  }
  const lines: string[] = [];
  let before: string;
  if ("problem" in first) {
    lines.push(first.problem);
    before = "could not be looked up";
  } else {
    const left = live(first.jobs);
    if (left.length === 0) return { outcome: "gone", lines };
    before = `was still listed after srun ended (${left.map((job) => `${job.id} ${job.state}`).join(", ")})`;
  }
  const argv = scancelArgv(jobName);
  const cancelled = await call(ops, argv, budget());
  if (cancelled instanceof Error || cancelled.timedOut || cancelled.code !== 0) {
    lines.push(`slurm job ${jobName} ${before}; ${callProblem(argv, cancelled, budget())}`);
    return { outcome: "unknown", lines };
  }
  for (;;) {
    const now = await look(ops, jobName, budget());
    if (!("problem" in now) && live(now.jobs).length === 0) {
      const what = "problem" in first ? "ran, and none is listed now" : "ended it";
      lines.push(`slurm job ${jobName} ${before}: ${argv.join(" ")} ${what}`);
      return { outcome: "problem" in first ? "unknown" : "cancelled", lines };
    }
    if (ops.clock.now() + JOB_POLL_MS >= deadline) {
      const still = "problem" in now ? now.problem : `still listed ${timeoutMs} ms later`;
      lines.push(`slurm job ${jobName} ${before}; after ${argv.join(" ")}: ${still}`);
      return { outcome: "unknown", lines };
    }
    await sleep(ops.clock, JOB_POLL_MS);
  }
}

/**
 * Why a pending job waits, when the reason can never clear by itself (Slurm's reason codes):
 * the job asks for more than its partition, account or QOS allows. A cluster whose
 * EnforcePartLimits is NO (Slurm's default) queues such a job instead of refusing it, and
 * srun --quiet says nothing while it waits: without this, the turn would wait for the far
 * side's hello until it gives up.
 */
export const HOPELESS_REASONS: ReadonlySet<string> = new Set([
  "PartitionTimeLimit",
  "PartitionNodeLimit",
  "AccountNotAllowed",
  "QOSNotAllowed",
  "InvalidAccount",
  "InvalidQOS",
  "BadConstraints",
  "QOSMaxWallDurationPerJobLimit",
  "QOSMaxNodePerJobLimit",
  "QOSMaxCpuPerJobLimit",
  "QOSMaxMemoryPerJob",
  "QOSMinCpuNotSatisfied",
  "QOSMinNode",
  "MaxMemPerLimit",
]);
/** Between two looks at a job that has not started yet, for its first PENDING_QUICK_LOOKS looks. */
export const PENDING_POLL_MS = 1_000;
/** A hopeless reason shows in the scheduler's first passes: after these looks, the watch slows down. */
export const PENDING_QUICK_LOOKS = 10;
/** Between two looks later on (many children pending for hours must not keep the controller busy). */
export const PENDING_SLOW_POLL_MS = 15_000;
/** squeue failures in a row after which the watch stops (the last resort still runs at the end). */
const PENDING_LOOK_FAILURES = 3;

/** `squeue --name=<job> -h -o "%i %T %r"`: id, state and the reason it waits. */
export function squeueReasonArgv(jobName: string): string[] {
  return ["squeue", `--name=${jobName}`, "-h", "-o", "%i %T %r"];
}

/**
 * Watches the job until it leaves PENDING (or `stopped()`): when it pends for a
 * HOPELESS_REASONS reason, cancels it by name (its srun then ends) and resolves with the line
 * that says why, the turn's error; otherwise resolves undefined. Never rejects.
 */
export async function watchPending(
  jobName: string,
  ops: SlurmJobOperations,
  stopped: () => boolean,
): Promise<string | undefined> {
  let failures = 0;
  for (let looks = 1; !stopped(); looks++) {
    const result = await call(ops, squeueReasonArgv(jobName), SLURM_CALL_TIMEOUT_MS);
    if (result instanceof Error || result.timedOut || result.code !== 0) {
      if (++failures >= PENDING_LOOK_FAILURES) return undefined;
    } else {
      failures = 0;
      const rows = result.stdout
        .split("\n")
        .map((line) => line.trim().split(/\s+/))
        .filter(([id]) => id !== undefined && id !== "");
      const hopeless = rows.find(([, state, reason]) => state === "PENDING" && HOPELESS_REASONS.has(reason ?? ""));
      if (hopeless) {
        const cancelled = await call(ops, scancelArgv(jobName), SLURM_CALL_TIMEOUT_MS);
        const how =
          cancelled instanceof Error || cancelled.timedOut || cancelled.code !== 0
            ? `; ${callProblem(scancelArgv(jobName), cancelled, SLURM_CALL_TIMEOUT_MS)}`
            : ", so it was cancelled";
        return `the cluster will not run job ${hopeless[0]} (${jobName}): pending for ${hopeless[2]}, which cannot clear by itself${how}`;
      }
      if (rows.some(([, state]) => state !== "PENDING")) return undefined;
    }
    if (stopped()) return undefined;
    // Not held: the watch never keeps the wrapper from exiting.
    const delay = looks < PENDING_QUICK_LOOKS ? PENDING_POLL_MS : PENDING_SLOW_POLL_MS;
    await new Promise<void>((resolve) => ops.clock.setTimeout(() => resolve(), delay, { unref: true }));
  }
  return undefined;
}

/**
 * The spawn options of a slurm child: no run token for srun. srun hands its environment to
 * the job's task, and serve takes a token it finds there as its own, so that on the same
 * machine its sweep at the run's end (every process carrying the token: what pi left) also
 * finds what the local wrapper's sweep would. With Slurm the job's node may be this machine
 * (a one-node cluster, a login node that also runs jobs): that sweep then SIGKILLed srun
 * itself, which carries the token too, right after the last frame — the turn's end raced the
 * kill, and a SIGKILLed srun leaves its job running. Without the token serve makes its own;
 * the job's processes are Slurm's to end (the job ends with its srun; the last resort cancels
 * it), and the wrapper's guard still reaches srun through its process group.
 */
export function slurmSpawnOptions<T extends { runToken: string }>(options: T): T {
  return { ...options, runToken: "" };
}

/**
 * The slurm parts of a run's child (remote/index.ts calls this once per spawn): the pending
 * watch while the job waits, the last resort once srun has ended, and the slurm guard
 * (slurm-guard.ts) for a wrapper that dies before that. Their lines go to the
 * run's log through the child's stderr.
 */
export function attachSlurmJob(child: RemoteChild, runnerName: string, jobName: string, env: NodeJS.ProcessEnv): void {
  const ops = nodeSlurmJobOperations(env);
  let exited = false;
  // Before srun: a wrapper killed while srun starts leaves no job either.
  const guard = startSlurmGuard(jobName, env);
  child.once("exit", () => {
    exited = true;
    guard.release();
  });
  child.afterPrefix = async (say) => {
    // Only a srun that started can have left a job.
    if (child.pid !== undefined) {
      const report = await ensureJobGone(jobName, ops);
      for (const line of report.lines) say(line);
    }
    guard.release();
  };
  child.once("spawn", () => {
    if (child.pid === undefined) return;
    void watchPending(jobName, ops, () => exited).then((refusal) => {
      if (refusal && !exited && !child.stderr.writableEnded)
        child.stderr.write(`runner ${runnerName} (slurm): ${refusal}\n`);
    });
  });
}
