/**
 * wait_agent gives way to the person: a message they typed for the root ends the wait at
 * once (notices stay pending), and Esc ends it as cancelled (not timed out) with how many
 * children keep working. Runs the tool against the runtime with the fake launcher.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { waitAgentTool } from "../../../../src/extension/tools/wait-agent.js";
import { runningTurn } from "../../../../src/extension/turns/child-state.js";
import { turnEndNotice } from "../../../../src/extension/turns/delivery/notices.js";
import { FakeClock } from "../../../support/fake-clock.js";
import { turnResult } from "../../../support/fake-turns.js";
import { agentRecord } from "../../../support/records.js";
import { cleanupRuntimes, runtimeHarness } from "../../../support/runtime-harness.js";

afterEach(cleanupRuntimes);

type Execute = NonNullable<ReturnType<typeof waitAgentTool>["execute"]>;

function fakeCtx(pending: () => boolean) {
  const notes: Array<[string, string | undefined]> = [];
  return {
    notes,
    ctx: {
      hasUI: true,
      hasPendingMessages: pending,
      ui: { notify: (text: string, type?: string) => notes.push([text, type]) },
    },
  };
}

/** With a clock, the tool reads the time on it and the runtime's mailbox times its poll steps on it. */
async function setup(clock?: FakeClock) {
  const h = await runtimeHarness({ maxActiveChildTurns: 1 }, undefined, clock);
  const a = await h.child("a");
  const b = await h.child("b");
  await h.runtime.requestTurn(a, "spawn");
  await h.runtime.requestTurn(b, "spawn"); // queued behind a
  const execute = waitAgentTool({ pi: {} as never, runtime: () => h.runtime, clock }).execute as Execute;
  return { h, execute };
}

const run = (execute: Execute, params: object, signal: AbortSignal | undefined, ctx: object) =>
  execute("call", params as never, signal, undefined, ctx as never).then(
    (result) => result.details as Record<string, unknown>,
  );

describe("wait_agent gives way", () => {
  it("returns at once with user_message_pending when the person typed a message; the notices stay pending", async () => {
    const { h, execute } = await setup();
    let typed = false;
    const { ctx } = fakeCtx(() => typed);
    const waiting = run(execute, { timeout_ms: 60_000 }, undefined, ctx);
    h.runtime.mailbox.push(
      turnEndNotice(agentRecord({ path: "/root/zz" }), { outcome: "completed", text: "", reportStored: false }),
    );
    // The notice above would end the wait; typing first wins because it is checked first.
    typed = true;
    const result = await waiting;
    expect(result).toMatchObject({
      notices: [],
      pending: 1,
      timed_out: false,
      user_message_pending: true,
      running: 1,
      queued: 1,
    });
    expect(h.runtime.mailbox.pending).toBe(1);
    await h.runtime.shutdown();
  });

  it("notices a message typed while it waits within a poll step, long before its time-out", async () => {
    const clock = new FakeClock();
    const { h, execute } = await setup(clock);
    let typed = false;
    const { ctx } = fakeCtx(() => typed);
    const started = clock.now();
    let result: Record<string, unknown> | undefined;
    void run(execute, { timeout_ms: 60_000 }, undefined, ctx).then((r) => {
      result = r;
    });
    await clock.advance(1000);
    expect(result).toBeUndefined(); // still waiting: nothing happened
    typed = true;
    // One poll step (200 ms) later it has given way, 59 s before its time-out.
    await vi.waitFor(async () => {
      await clock.advance(50);
      expect(result?.user_message_pending).toBe(true);
    });
    // On the fake clock: returned within a few poll steps of the typing, far from the 60 s time-out.
    expect(clock.now() - started).toBeLessThan(5_000);
    await h.runtime.shutdown();
  });

  it("Esc: cancelled (not timed_out) with the running and queued counts, and a visible line that points at /agents stop", async () => {
    const { h, execute } = await setup();
    const { ctx, notes } = fakeCtx(() => false);
    const esc = new AbortController();
    const waiting = run(execute, { timeout_ms: 60_000 }, esc.signal, ctx);
    esc.abort();
    expect(await waiting).toMatchObject({
      notices: [],
      timed_out: false,
      cancelled: true,
      running: 1,
      queued: 1,
      timeout_ms: 60_000,
    });
    expect(notes).toEqual([
      ["wait_agent cancelled: 1 running, 1 queued child agents keep working — /agents stop stops them", "warning"],
    ]);
    // The children were left alone.
    expect(h.turns.started.map((turn) => turn.stops)).toEqual([0]);
    await h.runtime.shutdown();
  });

  it("without a pending message or Esc it still returns notices, idle and time-outs as before", async () => {
    const { h, execute } = await setup();
    const { ctx } = fakeCtx(() => false);
    expect(await run(execute, { timeout_ms: 0 }, undefined, ctx)).toMatchObject({ timed_out: true, notices: [] });
    h.turns.last.finish(turnResult({ finalText: "a done" }));
    await h.runtime.children.get("/root/a")!.settled;
    const result = await run(execute, { timeout_ms: 1000 }, undefined, ctx);
    expect((result.notices as Array<{ agent_name: string }>).map((n) => n.agent_name)).toEqual(["/root/a"]);
    expect(result).not.toHaveProperty("cancelled");
    expect(result).not.toHaveProperty("user_message_pending");
    // a's slot went to b: let b's start finish writing before the runtime shuts down.
    await vi.waitFor(() => expect(runningTurn(h.runtime.children.get("/root/b")!)).toBeDefined());
    await h.runtime.shutdown();
  });
});
