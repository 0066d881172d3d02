/**
 * Area 5 — load. 50 wrappers at once on fake pi children: each run gets its own, correct
 * artifacts. The extension's runtime (real capacity, mailbox, launcher and wrapper, fake pi
 * children) with 30 turns requested at once never runs more than 3 and loses no notice.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Notice } from "../../src/contracts/notice.js";
import type { ResultV1 } from "../../src/contracts/result.js";
import { killAll } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, wrapperCase } from "../support/wrapper-harness.js";
import { killLeftovers, runtimeCase, settleLeftovers } from "./support.js";

afterEach(async () => {
  await killAll();
  await killLeftovers();
  await cleanupWrapperCases();
});

const WRAPPERS = 50;
const SPAWNS = 30;

/** Most intervals overlapping at one instant. */
function maxOverlap(intervals: Array<[number, number]>): number {
  const edges = intervals
    .flatMap(
      ([start, end]) =>
        [
          [start, 1],
          [end, -1],
        ] as Array<[number, number]>,
    )
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let most = 0;
  for (const [, delta] of edges) {
    now += delta;
    most = Math.max(most, now);
  }
  return most;
}

describe(`area 5: ${WRAPPERS} wrappers at once`, () => {
  it(`${WRAPPERS} concurrent runs complete with their own, correct artifacts; 0 processes left`, async () => {
    const scenario = { steps: [{ tool: { id: "t1", name: "read" } }, { sleep: 200 }, { echoTask: true }] };
    const cases = await Promise.all(
      Array.from({ length: WRAPPERS }, (_, i) =>
        wrapperCase({ meta: defaultMeta({ runId: `load-${i}`, task: `task number ${i}` }), scenario }),
      ),
    );
    const started = Date.now();
    const runs = await Promise.all(cases.map((c) => c.run()));
    console.log(`[reliability] ${WRAPPERS} concurrent wrappers finished in ${Date.now() - started} ms`);
    runs.forEach((run, i) => {
      expect(run.code).toBe(0);
      expect(run.result).toMatchObject({
        runId: `load-${i}`,
        status: "completed",
        finalText: `task number ${i}`,
        toolCalls: 1,
      });
      expect(run.events.find((e) => e.type === "run_start")).toMatchObject({ runId: `load-${i}` });
      expect(run.events.filter((e) => e.type === "assistant_text")).toHaveLength(1);
    });
    const transcripts = await Promise.all(runs.map((run) => run.read("out/transcript.md")));
    for (const [i, text] of transcripts.entries()) expect(text).toContain(`task number ${i}`);
    expect(await settleLeftovers()).toEqual([]);
  });
});

describe(`area 5: the extension with ${SPAWNS} turns requested at once`, () => {
  it(`never more than 3 active, ${SPAWNS} notices each delivered once`, async () => {
    const rc = await runtimeCase({ steps: [{ sleep: 150 }, { echoTask: true }] });
    try {
      const states = Array.from({ length: SPAWNS }, (_, i) => rc.child(`w${i}`, `job ${i}`));
      let mostActive = 0;
      const sampler = setInterval(() => (mostActive = Math.max(mostActive, rc.runtime.slots.activeCount)), 5);
      // All at once, as one model message's spawns: the slots decide before anything is awaited.
      // (Requested one after another, the first turns can end before the last is queued on a slow disk.)
      const requested = Promise.all(states.map((state) => rc.runtime.requestTurn(state, "spawn")));
      expect(rc.runtime.slots.activeCount).toBe(3);
      expect(rc.runtime.queuePosition("/root/w3")).toBe(1);
      expect(rc.runtime.queuePosition(`/root/w${SPAWNS - 1}`)).toBe(SPAWNS - 3);
      await requested;

      const notices: Notice[] = [];
      await vi.waitFor(
        async () => {
          notices.push(...rc.runtime.mailbox.take(5));
          expect(notices).toHaveLength(SPAWNS);
        },
        { timeout: 80_000, interval: 50 },
      );
      clearInterval(sampler);
      // The last notice can be taken a moment before its turn has left the settling phase.
      await vi.waitFor(() => expect(rc.runtime.hasActiveTurns()).toBe(false), { timeout: 10_000, interval: 20 });
      expect(rc.runtime.mailbox.pending).toBe(0);

      const names = notices.map((n) => n.agent_name);
      expect(new Set(names).size).toBe(SPAWNS);
      for (const notice of notices) {
        const i = Number(notice.agent_name.slice("/root/w".length));
        expect(notice).toMatchObject({ type: "completed", agent_status: "completed" });
        expect(notice.report).toContain(`job ${i}`);
      }
      // The wrappers' own clocks: no instant with more than 3 runs alive.
      const results = await Promise.all(
        states.map(
          async (s) =>
            JSON.parse(
              await readFile(path.join(rc.tree.agentDir(s.record.path), "runs", "0001-spawn", "result.json"), "utf8"),
            ) as ResultV1,
        ),
      );
      const overlap = maxOverlap(results.map((r) => [Date.parse(r.startedAt), Date.parse(r.endedAt)]));
      console.log(
        `[reliability] ${SPAWNS} spawns: at most ${mostActive} active slots sampled, ${overlap} wrapper runs overlapping, ${notices.length} notices`,
      );
      expect(mostActive).toBeLessThanOrEqual(3);
      expect(overlap).toBeLessThanOrEqual(3);
      expect(await settleLeftovers()).toEqual([]);
    } finally {
      await rc.dispose();
    }
  });
});
