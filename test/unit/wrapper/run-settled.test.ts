/**
 * The wrapper run on fake time against a pi that emits agent_settled (known from its version)
 * and one that does not: when grace starts, what a continuation changes, and that a lingering
 * child and timeoutMs still end the run. Every delay is checked to the millisecond.
 */
import { describe, expect, it } from "vitest";
import type { MetaV1 } from "../../../src/contracts/meta.js";
import type { PiIdentity } from "../../../src/wrapper/pi-version.js";
import { type FakeRun, fakeRunHarness } from "../../support/fake-run.js";
import {
  agentEnd,
  agentSettled,
  agentStart,
  assistantEnd,
  queueUpdate,
  turnEnd,
  turnStart,
} from "../../support/pi-events.js";

const fake = fakeRunHarness("psa-wrapper-settled-", { runId: "run-1", task: "t" });

const SETTLING: PiIdentity = { version: "1.6.0", source: "package", emitsSettled: true };
const OLDER: PiIdentity = { version: "0.73.1", source: "package", emitsSettled: false };

/** Starts a run against a child taken for `pi` (undefined: as pi-version.ts makes out the fake binary). */
function start(pi: PiIdentity | undefined, meta: Partial<MetaV1> = {}, env: NodeJS.ProcessEnv = {}): Promise<FakeRun> {
  return fake.start(meta, { ...(pi && { pi }), run: { env } });
}

const stop = (text: string) => assistantEnd({ text, stopReason: "stop" });

describe("wrapper run on fake time, a pi that emits agent_settled", () => {
  it("graceMs counts from agent_settled, not from the terminal message", async () => {
    const run = await start(SETTLING, { graceMs: 500 });
    await run.print(stop("hi"), turnEnd(), agentEnd(false));
    expect(run.clock.pending()).toEqual([]);
    await run.clock.advance(5000);
    expect(run.child.signals).toEqual([]);
    await run.print(agentSettled());
    const settledAt = run.clock.now();
    expect(run.clock.pending()).toEqual([500]);
    await run.clock.advance(499);
    expect(run.child.signals).toEqual([]);
    await run.clock.advance(1);
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
    await run.clock.advance(2000);
    expect(run.child.signals).toEqual([]);
    await run.print(agentStart(), turnStart(), stop("the retry's answer"), agentEnd(false), agentSettled());
    run.child.exit(0);
    const { result } = await run.done;
    expect(result).toMatchObject({ status: "completed", finalText: "the retry's answer", turns: 2, forcedExit: false });
  });

  it("a child that lingers after agent_settled is stopped graceMs later, and the run stays completed", async () => {
    const run = await start(SETTLING, { graceMs: 1000 });
    await run.clock.advance(200);
    await run.print(stop("done"), agentEnd(false), agentSettled());
    await run.clock.advance(999);
    expect(run.child.signals).toEqual([]);
    await run.clock.advance(1);
    expect(run.child.signalsWhileRunning()).toEqual([{ signal: "SIGTERM", at: run.t0 + 1200 }]);
    expect((await run.done).result).toMatchObject({ status: "completed", forcedExit: true, childExitCode: 143 });
  });

  it("timeoutMs still bounds a run whose answer waits for agent_settled", async () => {
    const run = await start(SETTLING, { timeoutMs: 3000 });
    await run.print(stop("almost"));
    await run.clock.advance(3000);
    expect(run.child.signalsWhileRunning()).toEqual([{ signal: "SIGTERM", at: run.t0 + 3000 }]);
    expect((await run.done).result).toMatchObject({ status: "timed_out", finalText: "almost", forcedExit: true });
  });

  it("pi working again after agent_settled cancels the grace; the next agent_settled starts it again", async () => {
    const run = await start(SETTLING, { graceMs: 400 });
    await run.print(stop("first"), agentSettled());
    expect(run.clock.pending()).toEqual([400]);
    await run.clock.advance(100);
    await run.print(agentStart());
    expect(run.clock.pending()).toEqual([]);
    await run.clock.advance(1000);
    await run.print(stop("second"), agentSettled());
    await run.clock.advance(400);
    expect(run.child.signalsWhileRunning()).toEqual([{ signal: "SIGTERM", at: run.t0 + 1500 }]);
    expect((await run.done).result).toMatchObject({ status: "completed", finalText: "second" });
  });

  it("PI_SUBAGENTS_PI_VERSION names a pi the wrapper cannot identify: 1.6.0 waits for agent_settled", async () => {
    const run = await start(undefined, { graceMs: 300 }, { PI_SUBAGENTS_PI_VERSION: "1.6.0" });
    await run.print(stop("hi"));
    expect(run.clock.pending()).toEqual([]);
    await run.print(agentSettled());
    expect(run.clock.pending()).toEqual([300]);
    run.child.exit(0);
    expect((await run.done).result).toMatchObject({ status: "completed" });
  });
});

describe("wrapper run on fake time, a pi without agent_settled", () => {
  it("graceMs counts from the terminal message (the fake pi binary has no version to read)", async () => {
    const run = await start(undefined, { graceMs: 300 });
    await run.print(stop("hi"));
    expect(run.clock.pending()).toEqual([300]);
    run.child.exit(0);
    await run.done;
  });

  it("a stop message followed by queue_update, turn_start and a final answer ends with the final answer", async () => {
    const run = await start(OLDER, { graceMs: 300 });
    await run.print(queueUpdate(["STEER-1"]), stop("first"), turnEnd());
    await run.clock.advance(1000);
    expect(run.child.signals).toEqual([]);
    await run.print(turnStart(), queueUpdate(), stop("continuation"), turnEnd());
    expect(run.clock.pending()).toEqual([300]);
    run.child.exit(0);
    const { result } = await run.done;
    expect(result).toMatchObject({ status: "completed", finalText: "continuation", forcedExit: false });
  });

  it("a stop message whose queued message pi drops at agent_end is final there: grace counts from agent_end", async () => {
    const run = await start(OLDER, { graceMs: 300 });
    await run.print(queueUpdate(["lost"]), stop("final"), turnEnd());
    await run.clock.advance(700);
    await run.print(agentEnd());
    await run.clock.advance(300);
    expect(run.child.signalsWhileRunning()).toEqual([{ signal: "SIGTERM", at: run.t0 + 1000 }]);
    expect((await run.done).result).toMatchObject({ status: "completed", finalText: "final" });
  });
});
