/**
 * The limits' timers in a wrapper run, on fake time (the fake pi child of fake-run.ts): the
 * time limit wraps up at its second, the grace's seconds stop the child to the millisecond,
 * and a time limit that runs out after the child answered changes nothing.
 */
import { describe, expect, it } from "vitest";
import { fakeRunHarness, until } from "../../support/fake-run.js";
import { assistantEnd } from "../../support/pi-events.js";

const fake = fakeRunHarness("psa-wrapper-limits-", { runId: "run-1", task: "inspect auth" });

const working = () => assistantEnd({ text: "on it", stopReason: "toolUse", toolCalls: [{ id: "c", name: "bash" }] });

describe("wrapper run on fake time: limits", () => {
  it("time_limit writes the wrap-up at its second; grace_seconds later the child is stopped: interrupted, limit, last text", async () => {
    // No inboxPath: the wrapper's private inbox (in the system's temp folder) takes the wrap-up.
    const run = await fake.start({ limits: { time_limit: 5, grace_seconds: 2 } });
    run.child.print(working());
    await run.clock.advance(4999);
    // The time limit is 1 ms away.
    expect(run.clock.pending()).toContain(1);
    await run.clock.advance(1);
    await run.clock.advance(1999);
    expect(run.child.signals).toEqual([]);
    await run.clock.advance(1);
    expect(run.child.signalsWhileRunning()).toEqual([{ signal: "SIGTERM", at: run.t0 + 7000 }]);
    const { result } = await run.done;
    expect(result).toMatchObject({
      status: "interrupted",
      finalText: "on it",
      limit: { name: "time_limit", value: 5, used: 5 },
      errorMessage: "limit time_limit reached (5 of 5): no answer within the grace of 2 s",
    });
    const limits = (await run.events()).filter((e) => e.type === "limit");
    expect(limits.map((e) => [(e as { phase: string }).phase, e.ts])).toEqual([
      ["reached", run.t0 + 5000],
      ["stopped", run.t0 + 7000],
    ]);
  });

  it("a time limit that runs out while the child lingers after its answer changes nothing: completed, no limit", async () => {
    const run = await fake.start({ limits: { time_limit: 1 }, graceMs: 5000 });
    run.child.print(assistantEnd({ text: "done" }));
    await until(() => run.clock.pending().includes(5000), "the answer observed");
    await run.clock.advance(5000);
    const { result } = await run.done;
    expect(result).toMatchObject({ status: "completed", finalText: "done" });
    expect(result).not.toHaveProperty("limit");
    expect((await run.events()).some((e) => e.type === "limit")).toBe(false);
  });
});
