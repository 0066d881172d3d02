/**
 * A slurm run's job (src/wrapper/remote/slurm-job.ts): its name is unique per run and made of
 * safe characters; once srun has ended, a job still listed is cancelled by name, the whole
 * step is bounded in time, and every failure of squeue or scancel is a line for the run's
 * log, never an error. Fake launcher and clock: no Slurm needed.
 */
import { describe, expect, it } from "vitest";
import {
  ensureJobGone,
  HOPELESS_REASONS,
  JOB_GONE_TIMEOUT_MS,
  JOB_POLL_MS,
  JOB_SETTLE_MS,
  type JobGoneReport,
  PENDING_POLL_MS,
  PENDING_QUICK_LOOKS,
  PENDING_SLOW_POLL_MS,
  parseSqueue,
  SLURM_CALL_TIMEOUT_MS,
  type SlurmCallResult,
  type SlurmJobOperations,
  slurmJobName,
  squeueArgv,
  squeueReasonArgv,
  watchPending,
} from "../../../src/wrapper/remote/slurm-job.js";
import { FakeClock, settle } from "../../support/fake-clock.js";

type Answer = Partial<SlurmCallResult> | Error;

/** A launcher that answers each call from a script per program (the last answer repeats). */
function fakeSlurm(answers: { squeue: Answer[]; scancel?: Answer[]; squeueAfterCancel?: Answer[] }) {
  const clock = new FakeClock();
  const calls: Array<{ argv: string[]; timeoutMs: number; at: number }> = [];
  const used = { squeue: 0, scancel: 0, squeueAfterCancel: 0 };
  const ops: SlurmJobOperations = {
    clock,
    run: async (argv, timeoutMs) => {
      calls.push({ argv, timeoutMs, at: clock.now() });
      const cancelled = used.scancel > 0 && answers.squeueAfterCancel !== undefined;
      const program = argv[0] === "squeue" && cancelled ? "squeueAfterCancel" : (argv[0] as "squeue" | "scancel");
      const list = answers[program] ?? [{}];
      const answer = list[Math.min(used[program]++, list.length - 1)] as Answer;
      if (answer instanceof Error) throw answer;
      return { code: 0, stdout: "", stderr: "", timedOut: false, ...answer };
    },
  };
  return { clock, calls, ops };
}

/** Runs ensureJobGone to its end, moving the fake clock on while it waits. */
async function settleReport(clock: FakeClock, pending: Promise<JobGoneReport>): Promise<JobGoneReport> {
  let report: JobGoneReport | undefined;
  void pending.then((r) => (report = r));
  for (let i = 0; i < 1000 && report === undefined; i++) {
    await settle();
    if (report === undefined) await clock.advance(50);
  }
  if (report === undefined) throw new Error("ensureJobGone did not settle");
  return report;
}

const JOB = "pst-scout-0001-spawn-0123abcd";

describe("slurmJobName", () => {
  it("is `pst-<run id>-<8 hex>` in safe characters, the same for one run folder and different for another", () => {
    const meta = { runId: "scout one/ü-0002-followup", resultPath: "/t/tree-a/agents/scout/runs/0002/result.json" };
    const name = slurmJobName(meta);
    expect(name).toMatch(/^pst-scout-one-0002-followup-[0-9a-f]{8}$/);
    expect(slurmJobName({ ...meta })).toBe(name);
    const otherTree = slurmJobName({ ...meta, resultPath: "/t/tree-b/agents/scout/runs/0002/result.json" });
    expect(otherTree).not.toBe(name);
    expect(otherTree.slice(0, -8)).toBe(name.slice(0, -8));
  });

  it("keeps a long run id to 40 characters", () => {
    const name = slurmJobName({ runId: "x".repeat(200), resultPath: "/r/result.json" });
    expect(name).toMatch(/^pst-x{40}-[0-9a-f]{8}$/);
  });
});

describe("parseSqueue", () => {
  it("reads one `<id> <state>` per line and skips blank lines", () => {
    expect(parseSqueue("12 RUNNING\n\n  13 completing \n")).toEqual([
      { id: "12", state: "RUNNING" },
      { id: "13", state: "COMPLETING" },
    ]);
    expect(parseSqueue("")).toEqual([]);
  });
});

describe("ensureJobGone", () => {
  it("does nothing more than one squeue when the job is not listed", async () => {
    const { clock, calls, ops } = fakeSlurm({ squeue: [{ stdout: "" }] });
    const report = await settleReport(clock, ensureJobGone(JOB, ops));
    expect(report).toEqual({ outcome: "gone", lines: [] });
    expect(calls.map((c) => c.argv)).toEqual([squeueArgv(JOB)]);
    expect(squeueArgv(JOB)).toEqual(["squeue", `--name=${JOB}`, "-h", "-o", "%i %T"]);
  });

  it("leaves a COMPLETING job alone: it is ending by itself", async () => {
    const { clock, calls, ops } = fakeSlurm({ squeue: [{ stdout: "41 COMPLETING\n" }] });
    expect(await settleReport(clock, ensureJobGone(JOB, ops))).toEqual({ outcome: "gone", lines: [] });
    expect(calls).toHaveLength(1);
  });

  it("gives a job still RUNNING JOB_SETTLE_MS to leave by itself, then cancels it by name and waits until squeue no longer lists it", async () => {
    const { clock, calls, ops } = fakeSlurm({
      squeue: [{ stdout: "41 RUNNING\n" }],
      squeueAfterCancel: [{ stdout: "41 RUNNING\n" }, { stdout: "41 COMPLETING\n" }],
    });
    const started = clock.now();
    const report = await settleReport(clock, ensureJobGone(JOB, ops));
    expect(report.outcome).toBe("cancelled");
    expect(report.lines).toEqual([
      `slurm job ${JOB} was still listed after srun ended (41 RUNNING): scancel --name=${JOB} ended it`,
    ]);
    const scancel = calls.findIndex((c) => c.argv[0] === "scancel");
    expect(calls[scancel]!.argv).toEqual(["scancel", `--name=${JOB}`]);
    expect(calls[scancel]!.at - started).toBeGreaterThanOrEqual(JOB_SETTLE_MS - JOB_POLL_MS);
    expect(calls[scancel]!.at - started).toBeLessThanOrEqual(JOB_SETTLE_MS);
    expect(calls.slice(scancel + 1).map((c) => c.argv[0])).toEqual(["squeue", "squeue"]);
  });

  it("does not cancel a job that leaves the queue by itself within JOB_SETTLE_MS (a srun that ended normally)", async () => {
    const { clock, calls, ops } = fakeSlurm({
      squeue: [{ stdout: "41 RUNNING\n" }, { stdout: "41 RUNNING\n" }, { stdout: "41 COMPLETING\n" }],
    });
    expect(await settleReport(clock, ensureJobGone(JOB, ops))).toEqual({ outcome: "gone", lines: [] });
    expect(calls.map((c) => c.argv[0])).toEqual(["squeue", "squeue", "squeue"]);
  });

  it("tries scancel when squeue fails, and says both in the log", async () => {
    const { clock, calls, ops } = fakeSlurm({
      squeue: [{ code: 1, stderr: "squeue: error: Unable to contact slurm controller\n(connect failure)" }, {}],
    });
    const report = await settleReport(clock, ensureJobGone(JOB, ops));
    expect(report.outcome).toBe("unknown");
    expect(report.lines[0]).toBe(
      `squeue --name=${JOB} -h -o %i %T failed (exit code 1): squeue: error: Unable to contact slurm controller (connect failure)`,
    );
    expect(report.lines[1]).toBe(
      `slurm job ${JOB} could not be looked up: scancel --name=${JOB} ran, and none is listed now`,
    );
    expect(calls.map((c) => c.argv[0])).toEqual(["squeue", "scancel", "squeue"]);
  });

  it("reports a scancel that fails or cannot start instead of throwing", async () => {
    const failing = fakeSlurm({
      squeue: [{ stdout: "7 PENDING\n" }],
      scancel: [{ code: 1, stderr: "scancel: error: Invalid job id\n" }],
    });
    const report = await settleReport(failing.clock, ensureJobGone(JOB, failing.ops));
    expect(report).toEqual({
      outcome: "unknown",
      lines: [
        `slurm job ${JOB} was still listed after srun ended (7 PENDING); scancel --name=${JOB} failed (exit code 1): scancel: error: Invalid job id`,
      ],
    });
    const missing = fakeSlurm({
      squeue: [new Error("spawn squeue ENOENT")],
      scancel: [new Error("spawn scancel ENOENT")],
    });
    const none = await settleReport(missing.clock, ensureJobGone(JOB, missing.ops));
    expect(none.outcome).toBe("unknown");
    expect(none.lines.join("\n")).toContain("could not run: spawn squeue ENOENT");
    expect(none.lines.join("\n")).toContain("could not run: spawn scancel ENOENT");
  });

  it("says a squeue or scancel that times out", async () => {
    const { clock, ops } = fakeSlurm({
      squeue: [{ code: null, timedOut: true }],
      scancel: [{ code: null, timedOut: true }],
    });
    const report = await settleReport(clock, ensureJobGone(JOB, ops));
    expect(report.lines[0]).toMatch(/^squeue .* gave no answer within 5000 ms$/);
    expect(report.lines[1]).toMatch(/could not be looked up; scancel --name=\S+ gave no answer within \d+ ms$/);
  });

  it("gives up once its time is over when the job stays listed, with every call bounded by what is left", async () => {
    const { clock, calls, ops } = fakeSlurm({ squeue: [{ stdout: "9 RUNNING\n" }] });
    const started = clock.now();
    const report = await settleReport(clock, ensureJobGone(JOB, ops, 3_000));
    expect(report.outcome).toBe("unknown");
    expect(report.lines).toEqual([
      `slurm job ${JOB} was still listed after srun ended (9 RUNNING); after scancel --name=${JOB}: still listed 3000 ms later`,
    ]);
    const last = calls.at(-1)!;
    expect(last.at - started).toBeLessThanOrEqual(3_000);
    for (const c of calls) {
      expect(c.timeoutMs).toBeLessThanOrEqual(Math.min(SLURM_CALL_TIMEOUT_MS, 3_000 - (c.at - started)));
      expect(c.timeoutMs).toBeGreaterThan(0);
    }
    expect(calls.filter((c) => c.argv[0] === "scancel")).toHaveLength(1);
  });

  it("is bounded by JOB_GONE_TIMEOUT_MS by default", async () => {
    const { clock, calls, ops } = fakeSlurm({ squeue: [{ stdout: "9 RUNNING\n" }] });
    const started = clock.now();
    await settleReport(clock, ensureJobGone(JOB, ops));
    expect(calls.at(-1)!.at - started).toBeLessThanOrEqual(JOB_GONE_TIMEOUT_MS);
    expect(calls.at(-1)!.at - started).toBeGreaterThan(JOB_GONE_TIMEOUT_MS - 1_000);
  });
});

describe("watchPending", () => {
  async function settleWatch(clock: FakeClock, pending: Promise<string | undefined>) {
    let done: { value: string | undefined } | undefined;
    void pending.then((value) => (done = { value }));
    for (let i = 0; i < 200 && done === undefined; i++) {
      await settle();
      if (done === undefined) await clock.advance(PENDING_POLL_MS);
    }
    if (done === undefined) throw new Error("watchPending did not settle");
    return done.value;
  }

  it("cancels a job pending for a reason that cannot clear, and says why", async () => {
    const { clock, calls, ops } = fakeSlurm({ squeue: [{ stdout: "" }, { stdout: "5 PENDING PartitionTimeLimit\n" }] });
    const said = await settleWatch(
      clock,
      watchPending(JOB, ops, () => false),
    );
    expect(said).toBe(
      `the cluster will not run job 5 (${JOB}): pending for PartitionTimeLimit, which cannot clear by itself, so it was cancelled`,
    );
    expect(calls.map((c) => c.argv)).toEqual([
      squeueReasonArgv(JOB),
      squeueReasonArgv(JOB),
      ["scancel", `--name=${JOB}`],
    ]);
    expect(HOPELESS_REASONS.has("Resources")).toBe(false);
  });

  it("waits through reasons that clear (Resources, Priority) and stops once the job runs", async () => {
    const { clock, calls, ops } = fakeSlurm({
      squeue: [{ stdout: "5 PENDING Resources\n" }, { stdout: "5 PENDING Priority\n" }, { stdout: "5 RUNNING None\n" }],
    });
    expect(
      await settleWatch(
        clock,
        watchPending(JOB, ops, () => false),
      ),
    ).toBeUndefined();
    expect(calls.map((c) => c.argv[0])).toEqual(["squeue", "squeue", "squeue"]);
  });

  it("stops when the child is gone, and after three failed looks in a row", async () => {
    let stopped = false;
    const quiet = fakeSlurm({ squeue: [{ stdout: "" }] });
    const watch = watchPending(JOB, quiet.ops, () => stopped);
    await settle();
    await quiet.clock.advance(PENDING_POLL_MS * 2);
    stopped = true;
    expect(await settleWatch(quiet.clock, watch)).toBeUndefined();
    const looks = quiet.calls.length;
    await quiet.clock.advance(PENDING_POLL_MS * 5);
    expect(quiet.calls).toHaveLength(looks);
    const failing = fakeSlurm({ squeue: [{ code: 1, stderr: "squeue: error" }] });
    expect(
      await settleWatch(
        failing.clock,
        watchPending(JOB, failing.ops, () => false),
      ),
    ).toBeUndefined();
    expect(failing.calls).toHaveLength(3);
  });

  it("looks once a second for its first PENDING_QUICK_LOOKS looks, then every PENDING_SLOW_POLL_MS", async () => {
    const { clock, calls, ops } = fakeSlurm({ squeue: [{ stdout: "5 PENDING Priority\n" }] });
    let stopped = false;
    const started = clock.now();
    const watch = watchPending(JOB, ops, () => stopped);
    await settle();
    await clock.advance(PENDING_POLL_MS * (PENDING_QUICK_LOOKS - 1));
    expect(calls).toHaveLength(PENDING_QUICK_LOOKS);
    await clock.advance(PENDING_SLOW_POLL_MS - 1);
    expect(calls).toHaveLength(PENDING_QUICK_LOOKS);
    await clock.advance(1);
    expect(calls).toHaveLength(PENDING_QUICK_LOOKS + 1);
    expect(calls.at(-1)!.at - started).toBe(PENDING_POLL_MS * (PENDING_QUICK_LOOKS - 1) + PENDING_SLOW_POLL_MS);
    stopped = true;
    await clock.advance(PENDING_SLOW_POLL_MS);
    expect(await watch).toBeUndefined();
  });

  it("says a scancel that failed instead of claiming the job was cancelled", async () => {
    const { clock, ops } = fakeSlurm({
      squeue: [{ stdout: "5 PENDING QOSMaxWallDurationPerJobLimit\n" }],
      scancel: [{ code: 1, stderr: "scancel: error: Access/permission denied" }],
    });
    const said = await settleWatch(
      clock,
      watchPending(JOB, ops, () => false),
    );
    expect(said).toMatch(
      /pending for QOSMaxWallDurationPerJobLimit, which cannot clear by itself; scancel --name=\S+ failed \(exit code 1\): scancel: error: Access\/permission denied$/,
    );
  });
});
