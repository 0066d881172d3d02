/** The turn lifecycle, table by table: for each phase and event, the next phase and what the runtime must do. */
import { describe, expect, it } from "vitest";
import type { ResultV1 } from "../../../../src/contracts/result.js";
import type { PendingPart } from "../../../../src/contracts/tree.js";
import {
  awaitedByParent,
  childAwaited,
  followupWaits,
  IDLE,
  isActive,
  liveTurnOf,
  type TurnEffect,
  type TurnEvent,
  type TurnPhase,
  transition,
  turnCount,
} from "../../../../src/extension/turns/lifecycle.js";
import type { RunningTurn } from "../../../../src/extension/turns/wrapper/launcher.js";
import { turnResult } from "../../../support/fake-turns.js";

const part: PendingPart = { kind: "NEW_TASK", from: "/root", text: "task", sentAt: "2026-01-01T00:00:00.000Z" };
const turn = (runName = "0001-spawn"): RunningTurn => ({
  runDir: `/tree/runs/${runName}`,
  runName,
  pid: 1234,
  finished: new Promise<ResultV1 | undefined>(() => undefined),
  stop: () => undefined,
});

const phases: Record<string, TurnPhase> = {
  idle: IDLE,
  queued: { name: "queued" },
  starting: { name: "starting" },
  running: { name: "running", turn: turn(), parts: [part] },
  stopping: { name: "stopping", by: "interrupt", turn: turn(), parts: [part] },
  settling: { name: "settling", runName: "0001-spawn", owesNotice: true },
};

const effectTypes = (effects: TurnEffect[]) => effects.map((effect) => effect.type);

/** [from, event, next phase, effect types]. */
type Row = [keyof typeof phases, TurnEvent, TurnPhase["name"], TurnEffect["type"][]];

function checkTable(rows: Row[]) {
  it.each(rows.map(([from, event, next, effects]) => [from, event.type, event, next, effects] as const))(
    "%s + %s",
    (from, _type, event, next, effects) => {
      const result = transition(phases[from]!, event);
      expect(result.phase.name).toBe(next);
      expect(effectTypes(result.effects)).toEqual(effects);
    },
  );
}

describe("a turn's start", () => {
  const granted: TurnEvent = { type: "slot_granted", kind: "spawn", closing: false };
  const closing: TurnEvent = { type: "slot_granted", kind: "followup", closing: true };
  const started: TurnEvent = { type: "wrapper_started", turn: turn(), parts: [part] };
  const failed: TurnEvent = { type: "start_failed", parts: [part], error: "ENOSPC" };
  checkTable([
    ["idle", { type: "queued" }, "queued", ["record_queued"]],
    ["running", { type: "queued" }, "running", []],
    ["idle", granted, "starting", ["launch"]],
    ["queued", granted, "starting", ["launch"]],
    // A follow-up may start while the previous turn's end is still being recorded.
    ["settling", granted, "starting", ["launch"]],
    ["running", granted, "running", []],
    ["queued", closing, "idle", ["release_slot"]],
    ["starting", started, "running", ["record_start"]],
    ["idle", started, "idle", []],
    ["starting", failed, "settling", ["release_slot", "end_turn"]],
    ["running", failed, "running", []],
  ]);

  it("a launch carries its kind; a turn that could not start keeps its parts and owes a notice, with no answer stored", () => {
    expect(transition(IDLE, granted).effects).toEqual([{ type: "launch", kind: "spawn" }]);
    const { phase, effects } = transition({ name: "starting" }, failed);
    expect(phase).toEqual({ name: "settling", runName: undefined, owesNotice: true });
    expect(effects[1]).toMatchObject({
      type: "end_turn",
      plan: { failure: "could not start the turn: ENOSPC", returnParts: [part], storeReport: false, notify: true },
    });
  });
});

describe("a stop", () => {
  const stop = (by: "interrupt" | "close" | "shutdown"): TurnEvent => ({ type: "stop_asked", by });
  checkTable([
    ["running", stop("interrupt"), "stopping", ["stop_wrapper", "release_slot"]],
    ["running", stop("close"), "stopping", ["stop_wrapper", "release_slot"]],
    // A process that is ending starts nothing more: its slots stay taken.
    ["running", stop("shutdown"), "stopping", ["stop_wrapper"]],
    ["queued", stop("interrupt"), "idle", ["dequeue"]],
    ["queued", stop("close"), "idle", ["dequeue"]],
    ["queued", stop("shutdown"), "idle", ["dequeue", "record_interrupted"]],
    ["stopping", stop("close"), "stopping", []],
    ["starting", stop("interrupt"), "starting", []],
    ["settling", stop("interrupt"), "settling", []],
    ["idle", stop("shutdown"), "idle", []],
  ]);

  it("the stopping phase keeps the wrapper and says who stopped it", () => {
    const { phase } = transition(phases.running!, stop("close"));
    expect(phase).toMatchObject({ name: "stopping", by: "close", parts: [part] });
    expect(liveTurnOf(phase)?.turn.runName).toBe("0001-spawn");
  });
});

describe("a turn's end", () => {
  const exited = (result: ResultV1 | undefined, runName = "0001-spawn"): TurnEvent => ({
    type: "wrapper_exited",
    runName,
    result,
    lost: "wrapper exited (SIGKILL) without writing result.json",
  });
  checkTable([
    ["running", exited(turnResult()), "settling", ["release_slot", "end_turn"]],
    ["stopping", exited(turnResult({ status: "interrupted" })), "settling", ["release_slot", "end_turn"]],
    // A stopped turn that ended after a newer one started only adds its usage.
    ["running", exited(turnResult(), "0000-old"), "running", ["add_usage"]],
    ["idle", exited(turnResult()), "idle", ["add_usage"]],
    ["settling", { type: "notice_given" }, "settling", []],
    ["settling", { type: "recorded", followupQueued: false }, "idle", []],
    ["settling", { type: "recorded", followupQueued: true }, "idle", ["request_followup"]],
    // A follow-up that started meanwhile owns the phase.
    ["running", { type: "recorded", followupQueued: true }, "running", []],
  ]);

  const planOf = (from: TurnPhase, event: TurnEvent) => {
    const effect = transition(from, event).effects.find((e) => e.type === "end_turn");
    return effect?.type === "end_turn" ? effect.plan : undefined;
  };

  it.each([
    ["a turn that ended on its own owes its notice", phases.running!, turnResult(), true],
    ["a turn this process stopped owes none", phases.stopping!, turnResult({ status: "interrupted" }), false],
  ])("%s", (_title, from, result, notify) => {
    expect(planOf(from, exited(result))).toMatchObject({ notify, runName: "0001-spawn", storeReport: true });
    expect(transition(from, exited(result)).phase).toEqual({
      name: "settling",
      runName: "0001-spawn",
      owesNotice: notify,
    });
  });

  it.each([
    // [title, from, result, prompt goes back]
    ["stopped before any model turn: the prompt goes back", phases.stopping!, turnResult({ turns: 0 }), true],
    ["stopped, and its wrapper left no result: the prompt goes back", phases.stopping!, undefined, true],
    ["stopped after a model turn: the session has the prompt", phases.stopping!, turnResult({ turns: 2 }), false],
    ["not stopped, no model turn (a provider error): not sent again", phases.running!, turnResult({ turns: 0 }), false],
  ] as const)("%s", (_title, from, result, back) => {
    const plan = planOf(from, exited(result))!;
    expect(plan.returnParts).toEqual(back ? [part] : undefined);
    expect(plan.dropConfirmedOf).toBe(back ? undefined : "0001-spawn");
  });

  it("a wrapper that died without a result: failed for the reason it left, unless this process stopped it", () => {
    expect(planOf(phases.running!, exited(undefined))).toMatchObject({
      failure: "wrapper exited (SIGKILL) without writing result.json",
      commitHow: "failed",
    });
    expect(planOf(phases.stopping!, exited(undefined))).toMatchObject({
      failure: undefined,
      stopping: "interrupt",
      commitHow: "interrupted",
    });
  });

  it("notice_given: the turn owes nothing more", () => {
    expect(transition(phases.settling!, { type: "notice_given" }).phase).toMatchObject({ owesNotice: false });
  });
});

describe("recording that fails unforeseen", () => {
  const failed = (runName: string | undefined): TurnEvent => ({ type: "recording_failed", runName, error: "bug" });
  checkTable([
    ["settling", failed("0001-spawn"), "idle", ["release_slot", "report_lost"]],
    ["running", failed("0001-spawn"), "idle", ["release_slot", "report_lost"]],
    ["running", failed("0000-old"), "running", ["report_lost"]],
  ]);

  it.each([
    ["settling, notice owed", phases.settling!, true],
    ["settling, notice given", { name: "settling", runName: "0001-spawn", owesNotice: false } as TurnPhase, false],
    ["running (not stopped)", phases.running!, true],
    ["stopping (this process stopped it)", phases.stopping!, false],
  ])("%s: the owed notice is given as errored", (_title, from, notify) => {
    expect(transition(from, failed("0001-spawn")).effects.at(-1)).toEqual({
      type: "report_lost",
      runName: "0001-spawn",
      error: "bug",
      notify,
    });
  });
});

describe("restore: a turn a previous process left behind", () => {
  const found = (result: ResultV1 | undefined, alreadyNotified = false): TurnEvent => ({
    type: "restore_found",
    direct: true,
    found: { kind: "running", runName: "0003-followup", result, alreadyNotified, parts: [part] },
  });
  const planOf = (event: TurnEvent) => {
    const [effect] = transition(IDLE, event).effects;
    return effect?.type === "end_turn" ? effect.plan : undefined;
  };

  it("a queued one of its own child is queued again (usual capacity rules); a deeper one, its parent gone, is interrupted", () => {
    const queued = { kind: "queued", turnKind: "followup" } as const;
    expect(transition(IDLE, { type: "restore_found", direct: true, found: queued }).effects).toEqual([
      { type: "requeue", kind: "followup" },
    ]);
    expect(transition(IDLE, { type: "restore_found", direct: false, found: queued }).effects).toEqual([
      { type: "record_interrupted", what: "a queued turn", restored: true },
    ]);
  });

  it("one whose end is recorded but whose notice was never given gets its notice (its own child only)", () => {
    const result = turnResult({ status: "completed" });
    const unnoticed = { kind: "unnoticed", runName: "0002-followup", result } as const;
    expect(transition(IDLE, { type: "restore_found", direct: true, found: unnoticed }).effects).toEqual([
      { type: "give_notice", runName: "0002-followup", result },
    ]);
    expect(transition(IDLE, { type: "restore_found", direct: false, found: unnoticed }).effects).toEqual([]);
  });

  it("one with a result never told ends as its result says, with its notice (to its own parent only)", () => {
    expect(planOf(found(turnResult({ status: "completed" })))).toMatchObject({
      result: { status: "completed" },
      stopping: undefined,
      notify: true,
      storeReport: true,
      restored: true,
      returnParts: undefined,
      dropConfirmedOf: "0003-followup",
      commitHow: "completed (committed when its parent came back)",
    });
    const deeper = { ...found(turnResult()), direct: false } as TurnEvent;
    expect(planOf(deeper)?.notify).toBe(false);
  });

  it("one its wrapper interrupted before any model turn ends interrupted, its prompt back in the queue", () => {
    expect(planOf(found(turnResult({ status: "interrupted", turns: 0 })))).toMatchObject({
      stopping: undefined,
      returnParts: [part],
      notify: true,
    });
  });

  it("one without a result is interrupted, silently, its prompt back and the reason said", () => {
    expect(planOf(found(undefined))).toMatchObject({
      result: undefined,
      stopping: "shutdown",
      failure: "the parent went away and the turn's wrapper left no result.json",
      returnParts: [part],
      notify: false,
      storeReport: false,
      commitHow: "interrupted (its parent went away)",
    });
  });

  it("one whose result was already told is not told again", () => {
    expect(planOf(found(turnResult({ turns: 3 }), true))).toMatchObject({
      result: undefined,
      notify: false,
      returnParts: undefined,
    });
  });

  it("only an idle child takes a restore", () => {
    expect(transition(phases.running!, found(undefined))).toEqual({ phase: phases.running, effects: [] });
  });
});

describe("which phases count as active", () => {
  it.each(Object.entries(phases))("%s", (name, phase) => {
    expect(isActive(phase)).toBe(name !== "idle");
  });
});

describe("how the parent's summaries count a turn (exit lines, /agents, wait_agent's cancel line)", () => {
  const counted: Record<keyof typeof phases, "running" | "queued" | undefined> = {
    idle: undefined,
    queued: "queued",
    starting: "running",
    running: "running",
    stopping: "running",
    // Over: only its record is being written.
    settling: undefined,
  };
  it.each(Object.entries(phases))("%s", (name, phase) => {
    expect(turnCount(phase)).toBe(counted[name]);
  });
});

describe("whether a waiting parent still waits for a child", () => {
  const noticeGiven: TurnPhase = { name: "settling", runName: "0001-spawn", owesNotice: false };
  /** [case, phase, a follow-up queued behind it, its turn awaited, the child awaited]. */
  const rows: Array<[string, TurnPhase, boolean, boolean, boolean]> = [
    ["idle", IDLE, false, false, false],
    ["idle, a follow-up flag left over", IDLE, true, false, false],
    ["queued", phases.queued!, false, true, true],
    ["starting", phases.starting!, false, true, true],
    ["running", phases.running!, false, true, true],
    ["stopping", phases.stopping!, false, true, true],
    ["settling, its notice owed", phases.settling!, false, true, true],
    ["settling, its notice given", noticeGiven, false, false, false],
    ["settling, its notice given, a follow-up queued behind it", noticeGiven, true, false, true],
  ];
  it.each(rows)("%s", (_case, phase, followupQueued, turnAwaited, awaited) => {
    expect(awaitedByParent(phase)).toBe(turnAwaited);
    expect(childAwaited(phase, followupQueued)).toBe(awaited);
  });
});

describe("where a follow-up asked now goes", () => {
  it.each(Object.entries(phases))("%s", (name, phase) => {
    // Behind a turn that runs, is being stopped or waits for a slot; else a turn of its own.
    expect(followupWaits(phase)).toBe(["running", "stopping", "queued"].includes(name));
  });
});

describe("re-attach: a restarted parent takes back a turn whose wrapper still runs", () => {
  const reattached: TurnEvent = { type: "reattached", turn: turn("0002-followup"), parts: [part] };
  checkTable([
    ["idle", reattached, "running", ["occupy_slot", "watch_end"]],
    ["queued", reattached, "queued", []],
    ["running", reattached, "running", []],
    ["settling", reattached, "settling", []],
  ]);

  it("the re-attached turn is running with its wrapper and parts, and its end is watched by its run", () => {
    const { phase, effects } = transition(IDLE, reattached);
    expect(phase).toMatchObject({ name: "running", turn: { runName: "0002-followup" }, parts: [part] });
    expect(effects).toContainEqual({ type: "watch_end", runName: "0002-followup" });
  });

  it("then it ends, is stopped and takes follow-ups as a turn this process started", () => {
    const { phase } = transition(IDLE, reattached);
    expect(followupWaits(phase)).toBe(true);
    expect(transition(phase, { type: "stop_asked", by: "interrupt" }).phase.name).toBe("stopping");
    const ended = transition(phase, {
      type: "wrapper_exited",
      runName: "0002-followup",
      result: turnResult({ status: "completed" }),
      lost: "",
    });
    expect(ended.phase).toMatchObject({ name: "settling", owesNotice: true });
    expect(effectTypes(ended.effects)).toEqual(["release_slot", "end_turn"]);
  });
});
