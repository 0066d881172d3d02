/**
 * One wait for many: wait_agent with `all: true` returns once every child of its group has
 * ended (the `targets`, else every child working when the wait starts), with their notices
 * together; notices of other children stay in the mailbox. Runs the tool against the runtime
 * with the fake launcher, which lets the test end each child's turn by hand.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { waitAgentTool } from "../../../../src/extension/tools/wait-agent.js";
import type { ChildState } from "../../../../src/extension/turns/runtime.js";
import { FakeClock, settle } from "../../../support/fake-clock.js";
import { turnResult } from "../../../support/fake-turns.js";
import { cleanupRuntimes, type RuntimeHarness, runtimeHarness } from "../../../support/runtime-harness.js";

afterEach(cleanupRuntimes);

type Execute = NonNullable<ReturnType<typeof waitAgentTool>["execute"]>;
interface Result {
  notices: Array<{ agent_name: string; type: string; report: string }>;
  pending: number;
  timed_out: boolean;
  waiting_for?: string[];
  idle?: boolean;
  cancelled?: boolean;
  timeout_ms: number;
}

/** A root with `names` as direct children, each with its first turn running. */
async function fanOut(names: string[], clock?: FakeClock) {
  const h = await runtimeHarness({ maxActiveChildTurns: names.length }, undefined, clock);
  const states = new Map<string, ChildState>();
  for (const name of names) {
    const state = await h.child(name);
    await h.runtime.requestTurn(state, "spawn");
    states.set(name, state);
  }
  const execute = waitAgentTool({ pi: {} as never, runtime: () => h.runtime, clock }).execute as Execute;
  const wait = (params: object, signal?: AbortSignal) =>
    execute("call", params as never, signal, undefined, undefined as never).then((result) => result.details as Result);
  return { h, states, wait };
}

/** Ends the running turn of /root/<name> with `text` as its answer, and waits until its notice is given. */
async function finish(h: RuntimeHarness, states: Map<string, ChildState>, name: string, text = `${name} done`) {
  const turn = h.turns.started.filter((started) => started.spec.record.path === `/root/${name}`).at(-1)!;
  turn.finish(turnResult({ finalText: text }));
  await states.get(name)!.settled;
}

const from = (result: Result) => result.notices.map((notice) => notice.agent_name);

/** A promise's outcome so far, without waiting for it. */
function watch<T>(promise: Promise<T>): { value: T | undefined } {
  const seen: { value: T | undefined } = { value: undefined };
  void promise.then((value) => {
    seen.value = value;
  });
  return seen;
}

describe("wait_agent all: true", () => {
  it("a fan-out of three: one wait returns once all three have ended, with their three notices", async () => {
    const { h, states, wait } = await fanOut(["a", "b", "c"]);
    const waiting = wait({ all: true, timeout_ms: 60_000 });
    const seen = watch(waiting);
    await finish(h, states, "b");
    await finish(h, states, "a");
    await new Promise((resolve) => setTimeout(resolve, 300)); // more than one poll step
    expect(seen.value).toBeUndefined(); // c still works: a plain wait would have returned b's notice
    await finish(h, states, "c");
    const result = await waiting;
    expect(from(result)).toEqual(["/root/b", "/root/a", "/root/c"]);
    expect(result.notices.map((notice) => notice.report)).toEqual(["b done", "a done", "c done"]);
    expect(result).toMatchObject({ pending: 0, timed_out: false, waiting_for: [], timeout_ms: 60_000 });
    expect(h.runtime.mailbox.pending).toBe(0);
  });

  it("targets: waits for those only; the notices of the others stay for a later wait", async () => {
    const { h, states, wait } = await fanOut(["a", "b", "c"]);
    const waiting = wait({ all: true, targets: ["a", "/root/b/"], timeout_ms: 60_000 });
    await finish(h, states, "c");
    await finish(h, states, "a");
    await finish(h, states, "b");
    const result = await waiting;
    expect(from(result)).toEqual(["/root/a", "/root/b"]);
    expect(result).toMatchObject({ pending: 1, timed_out: false, waiting_for: [] });
    // c's notice was neither dropped nor returned: the next wait has it.
    expect(from(await wait({ timeout_ms: 0 }))).toEqual(["/root/c"]);
  });

  it("at its time-out returns the notices of those that ended so far and names those still working", async () => {
    const clock = new FakeClock();
    const { h, states, wait } = await fanOut(["a", "b", "c"], clock);
    const started = clock.now();
    const seen = watch(wait({ all: true, timeout_ms: 5_000 }));
    await finish(h, states, "a");
    await vi.waitFor(async () => {
      await clock.advance(1000);
      expect(seen.value).toBeDefined();
    });
    expect(clock.now() - started).toBeGreaterThanOrEqual(5_000);
    expect(from(seen.value!)).toEqual(["/root/a"]);
    expect(seen.value).toMatchObject({ timed_out: true, pending: 0, waiting_for: ["/root/b", "/root/c"] });
    await h.runtime.shutdown();
  });

  it("while a member's notice waits for the rest, the wait sleeps: one pass per poll step, not a spin", async () => {
    const clock = new FakeClock();
    const { h, states, wait } = await fanOut(["a", "b"], clock);
    // Each pass of the wait's loop starts by collecting the inbox: count the collections (the
    // tool's start and a turn's end collect too). The children's
    // notices reach the mailbox directly, so the real inbox has nothing to add. A wait that spins
    // would loop on promise jobs alone and never give the test a turn: stop it with an error.
    let passes = 0;
    h.runtime.collectInbox = async () => {
      if (++passes > 50) throw new Error("wait_agent spins");
    };
    const outcome = wait({ all: true, timeout_ms: 60_000 }).catch((error: Error) => error);
    await finish(h, states, "a"); // its notice is pending; b still works
    await settle();
    const afterNotice = passes;
    // The tool's start, the loop's first look, a's turn end, one pass for a's new notice and one
    // when a's turn is no longer awaited.
    expect(afterNotice).toBe(5);
    await clock.advance(1000);
    expect(passes - afterNotice).toBe(5); // one pass per 200 ms step: a plain wait's pace
    await finish(h, states, "b");
    const result = await outcome;
    expect(result).not.toBeInstanceOf(Error);
    expect(from(result as Result)).toEqual(["/root/a", "/root/b"]);
    // b's turn end, one pass for its notice, and the pass that answers once its turn is no longer awaited.
    expect(passes).toBe(afterNotice + 5 + 3);
  });

  it("timeout_ms 0 just looks: what has ended, and who is still working", async () => {
    const { h, states, wait } = await fanOut(["a", "b"]);
    await finish(h, states, "b");
    const result = await wait({ all: true, timeout_ms: 0 });
    expect(from(result)).toEqual(["/root/b"]);
    expect(result).toMatchObject({ timed_out: true, waiting_for: ["/root/a"] });
    await h.runtime.shutdown();
  });

  it("a child that ended before the wait counts as ended: its pending notice is returned, a consumed one is not awaited", async () => {
    const { h, states, wait } = await fanOut(["a", "b", "c"]);
    await finish(h, states, "a");
    expect(from(await wait({ timeout_ms: 0 }))).toEqual(["/root/a"]); // consumed by an earlier wait
    await finish(h, states, "b"); // its notice still pending when the next wait starts
    const waiting = wait({ all: true, targets: ["a", "b", "c"], timeout_ms: 60_000 });
    await finish(h, states, "c");
    const result = await waiting;
    expect(from(result)).toEqual(["/root/b", "/root/c"]);
    expect(result).toMatchObject({ timed_out: false, waiting_for: [] });
    // With every target already ended, it answers at once.
    expect(await wait({ all: true, targets: ["a"], timeout_ms: 60_000 })).toMatchObject({
      notices: [],
      timed_out: false,
      waiting_for: [],
    });
  });

  it("without targets, a child that ended just before the wait is collected with those still working", async () => {
    const { h, states, wait } = await fanOut(["a", "b"]);
    await finish(h, states, "a");
    const waiting = wait({ all: true, timeout_ms: 60_000 });
    await finish(h, states, "b");
    expect(from(await waiting)).toEqual(["/root/a", "/root/b"]);
  });

  it("with nothing to wait for it answers idle at once, as a plain wait does", async () => {
    const { h, states, wait } = await fanOut(["a"]);
    await finish(h, states, "a");
    await wait({ timeout_ms: 0 });
    expect(await wait({ all: true, timeout_ms: 60_000 })).toEqual({
      notices: [],
      pending: 0,
      timed_out: false,
      idle: true,
      timeout_ms: 60_000,
    });
  });

  it("pages like any wait: at most 5 notices per call, the next call returns the rest at once", async () => {
    const names = ["a", "b", "c", "d", "e", "f", "g"];
    const { h, states, wait } = await fanOut(names);
    const waiting = wait({ all: true, timeout_ms: 60_000 });
    for (const name of names) await finish(h, states, name);
    const first = await waiting;
    expect(from(first)).toEqual(names.slice(0, 5).map((name) => `/root/${name}`));
    expect(first).toMatchObject({ pending: 2, timed_out: false, waiting_for: [] });
    const rest = await wait({ all: true, timeout_ms: 60_000 });
    expect(from(rest)).toEqual(["/root/f", "/root/g"]);
    expect(rest).toMatchObject({ pending: 0, timed_out: false, waiting_for: [] });
  });

  it("a child interrupted during the wait has ended: its interrupted notice comes with the others", async () => {
    const { h, states, wait } = await fanOut(["a", "b"]);
    const waiting = wait({ all: true, timeout_ms: 60_000 });
    await h.runtime.interrupt(states.get("a")!);
    await finish(h, states, "b");
    const result = await waiting;
    expect(result.notices.map((notice) => [notice.agent_name, notice.type])).toEqual([
      ["/root/a", "interrupted"],
      ["/root/b", "completed"],
    ]);
    expect(result).toMatchObject({ timed_out: false, waiting_for: [] });
  });

  it("a child with a follow-up queued behind its turn has ended once the follow-up's turn has ended too", async () => {
    const { h, states, wait } = await fanOut(["a"]);
    await h.runtime.followup(states.get("a")!, "then this");
    const waiting = wait({ all: true, timeout_ms: 60_000 });
    const seen = watch(waiting);
    await finish(h, states, "a", "first");
    await vi.waitFor(() => expect(h.turns.started).toHaveLength(2));
    await new Promise((resolve) => setTimeout(resolve, 300)); // more than one poll step
    expect(seen.value).toBeUndefined();
    await finish(h, states, "a", "second");
    expect((await waiting).notices.map((notice) => notice.report)).toEqual(["first", "second"]);
  });

  it("Esc: cancelled, names those it still waited for, and takes no notice", async () => {
    const { h, states, wait } = await fanOut(["a", "b"]);
    await finish(h, states, "a");
    const esc = new AbortController();
    const waiting = wait({ all: true, timeout_ms: 60_000 }, esc.signal);
    esc.abort();
    expect(await waiting).toMatchObject({ notices: [], pending: 1, cancelled: true, waiting_for: ["/root/b"] });
    expect(h.runtime.mailbox.pending).toBe(1);
    await h.runtime.shutdown();
  });

  it("refuses a target it cannot wait for, naming it, before waiting at all", async () => {
    const { h, wait } = await fanOut(["a"]);
    const grandchild = await h.child("a/deep"); // recorded under /root/a: not a direct child of /root
    h.runtime.children.delete(grandchild.record.path);
    await expect(wait({ all: true, targets: ["a", "nope"] })).rejects.toThrow("agent not found: nope");
    await expect(wait({ all: true, targets: ["/elsewhere/x"] })).rejects.toThrow("agent not found: /elsewhere/x");
    await expect(wait({ all: true, targets: ["a/deep"] })).rejects.toThrow(
      "/root/a/deep is not a direct child of /root; its notices go to its parent /root/a",
    );
    h.runtime.damaged.set("/root/broken", "agent.json is not JSON");
    await h.tree.writeRecord({ ...grandchild.record, path: "/root/broken" });
    await expect(wait({ all: true, targets: ["broken"] })).rejects.toThrow(
      "/root/broken's record is damaged (agent.json is not JSON); it cannot be waited for",
    );
    await expect(wait({ targets: ["a"] })).rejects.toThrow("targets needs all: true");
    await h.runtime.shutdown();
  });
});
