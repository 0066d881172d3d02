/** The root's spare: one at a time, for the latest turn's shape, taken once, ended when idle and at shutdown (fake time, fake launcher). */
import { describe, expect, it } from "vitest";
import type { MetaV1 } from "../../../../../src/contracts/meta.js";
import {
  SPARE_END_WAIT_MS,
  SPARE_IDLE_MS,
  SpareKeeper,
  type SpareProcess,
} from "../../../../../src/extension/turns/wrapper/spare.js";
import { spareWanted } from "../../../../../src/extension/turns/wrapper/spare-launch.js";
import { FakeClock } from "../../../../support/fake-clock.js";

const meta = (agent: string, change: Partial<MetaV1> = {}): MetaV1 => ({
  runId: `${agent}-1`,
  task: `task of ${agent}`,
  cwd: "/work",
  resultPath: `/tree/${agent}/result.json`,
  eventsPath: `/tree/${agent}/events.jsonl`,
  resolvedModel: "fake/fast",
  sessionPath: `/tree/${agent}/session.jsonl`,
  systemPromptPath: `/tree/${agent}/instructions.md`,
  env: { PI_SUBAGENTS_AGENT_PATH: `/root/${agent}` },
  ...change,
});

interface FakeSpare extends SpareProcess<string> {
  ended: boolean;
  killed: boolean;
  takes: string[];
  dies(): void;
  /** Its process exits (after it was ended, as a real spare does once its pi has ended). */
  exits(): void;
}

function harness(idleMs = SPARE_IDLE_MS) {
  const clock = new FakeClock();
  const launched: FakeSpare[] = [];
  const keeper = new SpareKeeper<string>(
    (template) => {
      let alive = true;
      let exit = () => {};
      const spare: FakeSpare = {
        pid: 100 + launched.length,
        handle: `spare for ${template.runId}`,
        ended: false,
        killed: false,
        takes: [],
        exited: new Promise<void>((resolve) => {
          exit = resolve;
        }),
        exits: () => exit(),
        kill: () => {
          spare.killed = true;
        },
        alive: () => alive && !spare.ended,
        take: (metaPath) => {
          if (!alive) return false;
          spare.takes.push(metaPath);
          return true;
        },
        end: () => {
          spare.ended = true;
        },
        dies: () => {
          alive = false;
        },
      };
      launched.push(spare);
      return spare;
    },
    clock,
    idleMs,
  );
  return { clock, keeper, launched };
}

describe("SpareKeeper", () => {
  it("starts a spare after a turn, hands it to the next turn that fits, then starts the next one", () => {
    const { keeper, launched } = harness();
    expect(keeper.handTo(meta("a"), "/a/meta.json")).toBeUndefined();
    keeper.turnStarted(meta("a"));
    expect(launched).toHaveLength(1);
    const taken = keeper.handTo(meta("b"), "/b/meta.json");
    expect(taken?.handle).toBe("spare for a-1");
    expect(launched[0]!.takes).toEqual(["/b/meta.json"]);
    keeper.turnStarted(meta("b"));
    expect(launched).toHaveLength(2);
    expect(keeper.counts).toEqual({ started: 2, taken: 1, ended: 0 });
  });

  it("a turn the spare does not fit starts its own pi; the spare is replaced by one of the new shape", () => {
    const { keeper, launched } = harness();
    keeper.turnStarted(meta("a"));
    const deep = meta("b", { resolvedModel: "fake/deep" });
    expect(keeper.handTo(deep, "/b/meta.json")).toBeUndefined();
    expect(launched[0]!.takes).toEqual([]);
    keeper.turnStarted(deep);
    expect(launched[0]!.ended).toBe(true);
    expect(launched).toHaveLength(2);
    // One of the same shape is kept, not started again.
    keeper.turnStarted(meta("c", { resolvedModel: "fake/deep" }));
    expect(launched).toHaveLength(2);
  });

  it("a turn no spare could take (a runner's, a checkout being written) leaves the spare as it is", () => {
    const { keeper, launched } = harness();
    keeper.turnStarted(meta("a"));
    keeper.turnStarted(meta("b", { cwdReadyPath: "/tree/b/ready" }));
    keeper.turnStarted(meta("c", { runner: { name: "box", kind: "sandbox" } as unknown as MetaV1["runner"] }));
    expect(launched).toHaveLength(1);
    expect(launched[0]!.ended).toBe(false);
  });

  it("a spare that died is not handed a turn, and the next start replaces it", () => {
    const { keeper, launched } = harness();
    keeper.turnStarted(meta("a"));
    launched[0]!.dies();
    expect(keeper.handTo(meta("b"), "/b/meta.json")).toBeUndefined();
    keeper.turnStarted(meta("b"));
    expect(launched).toHaveLength(2);
  });

  it("ends the spare once no turn has run for the idle time, not while one runs", async () => {
    const { clock, keeper, launched } = harness(1000);
    keeper.turnStarted(meta("a"));
    keeper.turnStarted(meta("b"));
    keeper.turnEnded();
    await clock.advance(5000);
    expect(launched[0]!.ended).toBe(false);
    keeper.turnEnded();
    await clock.advance(999);
    expect(launched[0]!.ended).toBe(false);
    // A turn within the idle time keeps it.
    keeper.turnStarted(meta("c"));
    await clock.advance(5000);
    expect(launched[0]!.ended).toBe(false);
    keeper.turnEnded();
    await clock.advance(1000);
    expect(launched[0]!.ended).toBe(true);
    expect(keeper.waiting).toBe(false);
  });

  it("close ends the spare and none starts after it", () => {
    const { keeper, launched } = harness();
    keeper.turnStarted(meta("a"));
    void keeper.close();
    expect(launched[0]!.ended).toBe(true);
    keeper.turnStarted(meta("b"));
    expect(launched).toHaveLength(1);
    expect(keeper.handTo(meta("c"), "/c/meta.json")).toBeUndefined();
  });

  it("close resolves once the ended spare has exited, nothing killed", async () => {
    const { keeper, launched } = harness();
    keeper.turnStarted(meta("a"));
    let closed = false;
    const closing = keeper.close().then(() => {
      closed = true;
    });
    await Promise.resolve();
    expect(closed).toBe(false);
    launched[0]!.exits();
    await closing;
    expect(launched[0]!.killed).toBe(false);
  });

  it("a spare that has not exited SPARE_END_WAIT_MS after close is killed, and close resolves", async () => {
    const { clock, keeper, launched } = harness();
    keeper.turnStarted(meta("a"));
    let closed = false;
    const closing = keeper.close().then(() => {
      closed = true;
    });
    await clock.advance(SPARE_END_WAIT_MS - 1);
    expect(closed).toBe(false);
    expect(launched[0]!.killed).toBe(false);
    await clock.advance(1);
    await closing;
    expect(launched[0]!.killed).toBe(true);
  });

  it("close's wait keeps Node running (its timer is not unref'd): the spare's own handles do not, and pi would exit before it", () => {
    const { clock, keeper } = harness();
    keeper.turnStarted(meta("a"));
    void keeper.close();
    expect(clock.requested).toContain(SPARE_END_WAIT_MS);
    expect(clock.unrefRequested).not.toContain(SPARE_END_WAIT_MS);
  });
});

describe("spareWanted", () => {
  it("PI_SUBAGENTS_SPARE wins, then the setting, then the default (on)", () => {
    expect(spareWanted(undefined, {})).toBe(true);
    expect(spareWanted(false, {})).toBe(false);
    expect(spareWanted(true, { PI_SUBAGENTS_SPARE: "0" })).toBe(false);
    expect(spareWanted(false, { PI_SUBAGENTS_SPARE: "1" })).toBe(true);
  });
});
