/**
 * The wrapper run on fake time against a pi that emits agent_settled (known from its version)
 * and one that does not: when grace starts, what a continuation changes, and that a lingering
 * child and timeoutMs still end the run. Every delay is checked to the millisecond.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { EventRecord } from "../../src/contracts/events.js";
import type { MetaV1 } from "../../src/contracts/meta.js";
import type { PiIdentity } from "../../src/wrapper/pi-version.js";
import { type RunReport, runWrapper, STDOUT_DRAIN_MS } from "../../src/wrapper/run.js";
import { FakeChild, FakeScheduler, fakeChildOperations, settle, until } from "../support/fake-run.js";
import {
  agentEnd,
  agentSettled,
  agentStart,
  assistantEnd,
  queueUpdate,
  turnEnd,
  turnStart,
} from "../support/pi-events.js";

let dir: string;
const runs: Started[] = [];
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "psa-wrapper-settled-"));
});
afterEach(async () => {
  for (const run of runs.splice(0)) {
    if (run.finished()) continue;
    run.child.exit(null, "SIGKILL");
    await run.scheduler.advance(STDOUT_DRAIN_MS);
    await run.done;
  }
  await rm(dir, { recursive: true, force: true });
});

interface Started {
  scheduler: FakeScheduler;
  child: FakeChild;
  t0: number;
  done: Promise<RunReport>;
  finished: () => boolean;
  events: () => Promise<EventRecord[]>;
  /** Prints the events and waits until the run has read them all (their records are written). */
  print: (...events: object[]) => Promise<void>;
}

const SETTLING: PiIdentity = { version: "1.6.0", source: "package", emitsSettled: true };
const OLDER: PiIdentity = { version: "0.73.1", source: "package", emitsSettled: false };

async function start(
  pi: PiIdentity | undefined,
  meta: Partial<MetaV1> = {},
  env: NodeJS.ProcessEnv = {},
): Promise<Started> {
  const scheduler = new FakeScheduler();
  const child = new FakeChild(scheduler);
  const ops = { ...fakeChildOperations(child), ...(pi && { identifyPi: () => pi }) };
  const full: MetaV1 = {
    runId: "run-1",
    task: "t",
    cwd: dir,
    resultPath: path.join(dir, "result.json"),
    eventsPath: path.join(dir, "events.jsonl"),
    ...meta,
  };
  let finished = false;
  const done = runWrapper(full, { env, scheduler, child: ops }).then((report) => {
    finished = true;
    return report;
  });
  const started: Started = {
    scheduler,
    child,
    t0: scheduler.now(),
    done,
    finished: () => finished,
    events: async () =>
      (await readFile(full.eventsPath, "utf8"))
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as EventRecord),
    print: async (...events) => {
      for (const event of events) child.print(event);
      await until(() => child.stdout.readableLength === 0, "the lines read");
      await settle();
    },
  };
  runs.push(started);
  await until(() => ops.spawned.length === 1 && child.stdout.listenerCount("data") > 0, "pi started and read");
  return started;
}

const stop = (text: string) => assistantEnd({ text, stopReason: "stop" });

describe("wrapper run on fake time, a pi that emits agent_settled", () => {
  it("graceMs counts from agent_settled, not from the terminal message", async () => {
    const run = await start(SETTLING, { graceMs: 500 });
    await run.print(stop("hi"), turnEnd(), agentEnd(false));
    expect(run.scheduler.pending()).toEqual([]);
    await run.scheduler.advance(5000);
    expect(run.child.signals).toEqual([]);
    await run.print(agentSettled());
    const settledAt = run.scheduler.now();
    expect(run.scheduler.pending()).toEqual([500]);
    await run.scheduler.advance(499);
    expect(run.child.signals).toEqual([]);
    await run.scheduler.advance(1);
    expect(run.child.signalsWhileRunning()).toEqual([{ signal: "SIGTERM", at: settledAt + 500 }]);
    const { result } = await run.done;
    expect(result).toMatchObject({ status: "completed", finalText: "hi", forcedExit: true });
    expect((await run.events()).map((e) => e.type)).toEqual(["run_start", "assistant_text", "settled", "run_end"]);
  });

  it("a retry after the first stop message, later than graceMs, ends with the retry's answer", async () => {
    const run = await start(SETTLING, { graceMs: 300 });
    await run.print(stop("first answer"), turnEnd(), agentEnd(true), {
      type: "auto_retry_start",
      attempt: 1,
      maxAttempts: 1,
      delayMs: 2000,
    });
    await run.scheduler.advance(2000);
    expect(run.child.signals).toEqual([]);
    await run.print(agentStart(), turnStart(), stop("the retry's answer"), agentEnd(false), agentSettled());
    run.child.exit(0);
    const { result } = await run.done;
    expect(result).toMatchObject({ status: "completed", finalText: "the retry's answer", turns: 2, forcedExit: false });
  });

  it("a child that lingers after agent_settled is stopped graceMs later, and the run stays completed", async () => {
    const run = await start(SETTLING, { graceMs: 1000 });
    await run.scheduler.advance(200);
    await run.print(stop("done"), agentEnd(false), agentSettled());
    await run.scheduler.advance(999);
    expect(run.child.signals).toEqual([]);
    await run.scheduler.advance(1);
    expect(run.child.signalsWhileRunning()).toEqual([{ signal: "SIGTERM", at: run.t0 + 1200 }]);
    expect((await run.done).result).toMatchObject({ status: "completed", forcedExit: true, childExitCode: 143 });
  });

  it("timeoutMs still bounds a run whose answer waits for agent_settled", async () => {
    const run = await start(SETTLING, { timeoutMs: 3000 });
    await run.print(stop("almost"));
    await run.scheduler.advance(3000);
    expect(run.child.signalsWhileRunning()).toEqual([{ signal: "SIGTERM", at: run.t0 + 3000 }]);
    expect((await run.done).result).toMatchObject({ status: "timed_out", finalText: "almost", forcedExit: true });
  });

  it("pi working again after agent_settled cancels the grace; the next agent_settled starts it again", async () => {
    const run = await start(SETTLING, { graceMs: 400 });
    await run.print(stop("first"), agentSettled());
    expect(run.scheduler.pending()).toEqual([400]);
    await run.scheduler.advance(100);
    await run.print(agentStart());
    expect(run.scheduler.pending()).toEqual([]);
    await run.scheduler.advance(1000);
    await run.print(stop("second"), agentSettled());
    await run.scheduler.advance(400);
    expect(run.child.signalsWhileRunning()).toEqual([{ signal: "SIGTERM", at: run.t0 + 1500 }]);
    expect((await run.done).result).toMatchObject({ status: "completed", finalText: "second" });
  });

  it("PI_SUBAGENTS_PI_VERSION names a pi the wrapper cannot identify: 1.6.0 waits for agent_settled", async () => {
    const run = await start(undefined, { graceMs: 300 }, { PI_SUBAGENTS_PI_VERSION: "1.6.0" });
    await run.print(stop("hi"));
    expect(run.scheduler.pending()).toEqual([]);
    await run.print(agentSettled());
    expect(run.scheduler.pending()).toEqual([300]);
    run.child.exit(0);
    expect((await run.done).result).toMatchObject({ status: "completed" });
  });
});

describe("wrapper run on fake time, a pi without agent_settled", () => {
  it("graceMs counts from the terminal message (the fake pi binary has no version to read)", async () => {
    const run = await start(undefined, { graceMs: 300 });
    await run.print(stop("hi"));
    expect(run.scheduler.pending()).toEqual([300]);
    run.child.exit(0);
    await run.done;
  });

  it("a stop message followed by queue_update, turn_start and a final answer ends with the final answer", async () => {
    const run = await start(OLDER, { graceMs: 300 });
    await run.print(queueUpdate(["STEER-1"]), stop("first"), turnEnd());
    await run.scheduler.advance(1000);
    expect(run.child.signals).toEqual([]);
    await run.print(turnStart(), queueUpdate(), stop("continuation"), turnEnd());
    expect(run.scheduler.pending()).toEqual([300]);
    run.child.exit(0);
    const { result } = await run.done;
    expect(result).toMatchObject({ status: "completed", finalText: "continuation", forcedExit: false });
  });

  it("a stop message whose queued message pi drops at agent_end is final there: grace counts from agent_end", async () => {
    const run = await start(OLDER, { graceMs: 300 });
    await run.print(queueUpdate(["lost"]), stop("final"), turnEnd());
    await run.scheduler.advance(700);
    await run.print(agentEnd());
    await run.scheduler.advance(300);
    expect(run.child.signalsWhileRunning()).toEqual([{ signal: "SIGTERM", at: run.t0 + 1000 }]);
    expect((await run.done).result).toMatchObject({ status: "completed", finalText: "final" });
  });
});
