/**
 * Settings `confirm_every_usd`: the root's question (a fake UI, a fake clock) and the spend gate
 * every process of the tree reads (a temp tree directory, real files).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  checkSpendGate,
  nextCeiling,
  readSpendGateSync,
  type SpendGateV1,
} from "../../../../src/contracts/spend-gate.js";
import { emptyUsage } from "../../../../src/contracts/usage.js";
import { budgetLeftEnv } from "../../../../src/extension/progress/budget.js";
import type { TreeProgress } from "../../../../src/extension/progress/progress.js";
import {
  type ConfirmUi,
  holdSpendConfirmation,
  SPEND_LOOK_MS,
  SpendConfirmation,
  spendGateFile,
  spendGateRefusal,
} from "../../../../src/extension/progress/spend-confirm.js";
import { FakeClock, settle } from "../../../support/fake-clock.js";

let treeDir: string;
const releases: Array<() => void> = [];
beforeEach(() => {
  treeDir = fs.mkdtempSync(path.join(os.tmpdir(), "spend-gate-"));
});
afterEach(() => {
  for (const release of releases.splice(0)) release();
  fs.rmSync(treeDir, { recursive: true, force: true });
});

/** A person who answers when the test says; what they were asked is kept. */
class FakePerson implements ConfirmUi {
  readonly asked: Array<{ title: string; message: string }> = [];
  readonly notes: string[] = [];
  private answer: ((yes: boolean) => void) | undefined;

  confirm(title: string, message: string, options: { signal: AbortSignal }): Promise<boolean> {
    this.asked.push({ title, message });
    return new Promise((resolve) => {
      this.answer = resolve;
      options.signal.addEventListener("abort", () => resolve(false));
    });
  }

  notify(message: string): void {
    this.notes.push(message);
  }

  say(yes: boolean): void {
    this.answer?.(yes);
    this.answer = undefined;
  }
}

function rootCase(every: number, person: FakePerson | undefined, timeoutMs = 300_000) {
  const clock = new FakeClock();
  let spent = 0;
  const confirmation = new SpendConfirmation({
    file: spendGateFile(treeDir),
    every,
    ui: person,
    timeoutMs,
    spent: async () => spent,
    clock,
  });
  releases.push(holdSpendConfirmation(treeDir, confirmation));
  return {
    clock,
    confirmation,
    spend: (usd: number) => {
      spent = usd;
    },
    admit: () => spendGateRefusal(treeDir, async () => spent, { timeoutMs, clock }),
  };
}

describe("nextCeiling: where a yes raises the ceiling", () => {
  it.each([
    [1, 0, 1],
    [1, 1, 2],
    [1, 1.5, 2],
    [0.1, 0.3, 0.4],
    [2.5, 7.49, 7.5],
    [2.5, 7.5, 10],
  ])("every %s, spent %s → %s", (every, spent, ceiling) => {
    expect(nextCeiling(every, spent)).toBe(ceiling);
  });
});

describe("the root asks the person at each multiple", () => {
  it("under the ceiling nothing is asked; once crossed the look asks; yes raises it to the next multiple", async () => {
    const person = new FakePerson();
    const { clock, confirmation, spend, admit } = rootCase(1, person);
    await confirmation.publish();
    confirmation.watch();
    spend(0.6);
    await clock.advance(SPEND_LOOK_MS);
    expect(person.asked).toEqual([]);
    expect(await admit()).toBeUndefined();
    spend(1.2);
    await clock.advance(SPEND_LOOK_MS);
    expect(person.asked).toHaveLength(1);
    expect(person.asked[0]?.title).toBe(
      "pi-subagent-tree: this tree's agents have spent $1.20 — let them spend up to $2.00?",
    );
    expect(person.asked[0]?.message).toMatch(/confirm_every_usd is \$1\.00.*Yes: .*asked again at \$2\.00\. No: /);
    // A spawn meanwhile is held until the answer, and the question is not asked twice.
    let held: string | undefined | null = null;
    void admit().then((line) => (held = line));
    await clock.advance(SPEND_LOOK_MS * 3);
    expect(held).toBeNull();
    expect(person.asked).toHaveLength(1);
    person.say(true);
    // The answer is written to the gate file before the spawn goes on.
    await vi.waitFor(() => expect(held).toBeUndefined());
    expect(confirmation.current.ceiling_usd).toBe(2);
    expect(readSpendGateSync(spendGateFile(treeDir))).toEqual({
      version: 1,
      every_usd: 1,
      ceiling_usd: 2,
      person: true,
    });
  });

  it("no: the gate is declined (the wrappers wrap up), every spawn is refused with one line, the person told once", async () => {
    const person = new FakePerson();
    const { clock, confirmation, spend, admit } = rootCase(0.5, person);
    confirmation.watch();
    spend(0.55);
    await clock.advance(SPEND_LOOK_MS);
    person.say(false);
    await vi.waitFor(() => expect(person.notes).toHaveLength(1));
    const refusal =
      "tree spending stopped: this tree's agents have spent $0.5500 and the person chose not to spend more (confirm_every_usd: $0.5000); no new turns start";
    expect(await admit()).toBe(refusal);
    expect(person.notes).toEqual([refusal]);
    expect(readSpendGateSync(spendGateFile(treeDir))?.declined).toMatchObject({ spent_usd: 0.55, by: "no" });
    // Nothing more is asked in this session.
    spend(5);
    await clock.advance(SPEND_LOOK_MS * 3);
    expect(person.asked).toHaveLength(1);
  });

  it("no answer within dialog_timeout counts as no", async () => {
    const person = new FakePerson();
    const { clock, spend, admit } = rootCase(1, person, 60_000);
    spend(1);
    let line: string | undefined;
    void admit().then((refusal) => (line = refusal));
    await settle(); // the question is up
    await clock.advance(59_000);
    expect(line).toBeUndefined();
    await clock.advance(1_000);
    await vi.waitFor(() => expect(line).toMatch(/nobody answered whether to spend more/));
    expect(readSpendGateSync(spendGateFile(treeDir))?.declined?.by).toBe("timeout");
  });

  it("no person (print/json root, dialogs deny): the ceiling is a budget — refused past it, and a turn's cost cap", async () => {
    const { confirmation, spend, admit } = rootCase(0.25, undefined);
    confirmation.watch();
    spend(0.1);
    expect(await admit()).toBeUndefined();
    const progress = {
      tree: { root: treeDir },
      snapshot: async () => [{ usage: { ...emptyUsage(), cost: { ...emptyUsage().cost, total: 0.1 } } }],
    } as unknown as TreeProgress;
    expect(await budgetLeftEnv(progress, {}, treeDir)).toEqual({
      PI_SUBAGENTS_SPEND_GATE: spendGateFile(treeDir),
      PI_SUBAGENTS_BUDGET_LEFT_COST: "0.15",
      PI_SUBAGENTS_BUDGET_BOARD: path.join(treeDir, "budget-board"),
    });
    // A tree budget below the ceiling is the one that holds.
    expect(
      (await budgetLeftEnv(progress, { PI_SUBAGENTS_BUDGET_COST: "0.2" }, treeDir)).PI_SUBAGENTS_BUDGET_LEFT_COST,
    ).toBe("0.1");
    spend(0.25);
    expect(await admit()).toBe(
      "tree spending stopped: this tree's agents have spent $0.2500, the $0.2500 that confirm_every_usd lets a tree spend before a person says yes, and this tree has no person to ask; no new turns start",
    );
  });

  it("a new session keeps the ceiling reached so far but asks again", () => {
    const previous: SpendGateV1 = {
      version: 1,
      every_usd: 1,
      ceiling_usd: 3,
      person: true,
      declined: { spent_usd: 3.1, by: "no", at: "x" },
    };
    const file = spendGateFile(treeDir);
    const again = new SpendConfirmation({
      file,
      every: 1,
      ui: new FakePerson(),
      timeoutMs: 1,
      spent: async () => 0,
      previous,
    });
    expect(again.current).toEqual({ version: 1, every_usd: 1, ceiling_usd: 3, person: true });
    const changed = new SpendConfirmation({
      file,
      every: 2,
      ui: undefined,
      timeoutMs: 1,
      spent: async () => 0,
      previous,
    });
    expect(changed.current).toEqual({ version: 1, every_usd: 2, ceiling_usd: 2, person: false });
  });
});

describe("checkSpendGate: what is read back", () => {
  it.each([
    ["not JSON's object", "[]"],
    ["another version", { version: 2, every_usd: 1, ceiling_usd: 1, person: true }],
    ["a ceiling that is not positive", { version: 1, every_usd: 1, ceiling_usd: 0, person: true }],
    ["no person flag", { version: 1, every_usd: 1, ceiling_usd: 1 }],
  ])("%s is no gate", (_title, value) => {
    expect(checkSpendGate(value)).toBeUndefined();
  });

  it("a torn or missing file is no gate; a declined one keeps its answer", () => {
    const file = spendGateFile(treeDir);
    expect(readSpendGateSync(file)).toBeUndefined();
    fs.writeFileSync(file, '{"version":1,"every_usd":1,');
    expect(readSpendGateSync(file)).toBeUndefined();
    const gate = {
      version: 1,
      every_usd: 1,
      ceiling_usd: 2,
      person: false,
      declined: { spent_usd: 2.5, by: "timeout", at: "t" },
    };
    fs.writeFileSync(file, JSON.stringify(gate));
    expect(readSpendGateSync(file)).toEqual(gate);
  });
});

describe("below the root: the gate file", () => {
  const write = (gate: SpendGateV1) => fs.writeFileSync(spendGateFile(treeDir), JSON.stringify(gate));
  const open: SpendGateV1 = { version: 1, every_usd: 1, ceiling_usd: 1, person: true };

  it("no gate, or under the ceiling: a spawn goes ahead", async () => {
    const clock = new FakeClock();
    expect(await spendGateRefusal(treeDir, async () => 100, { timeoutMs: 1000, clock })).toBeUndefined();
    write(open);
    expect(await spendGateRefusal(treeDir, async () => 0.9, { timeoutMs: 1000, clock })).toBeUndefined();
  });

  it("past the ceiling while the root asks: held until the root writes the answer", async () => {
    const clock = new FakeClock();
    write(open);
    let line: string | undefined | null = null;
    void spendGateRefusal(treeDir, async () => 1.1, { timeoutMs: 60_000, clock }).then((l) => (line = l));
    await clock.advance(SPEND_LOOK_MS * 2);
    expect(line).toBeNull();
    write({ ...open, ceiling_usd: 2 });
    await clock.advance(SPEND_LOOK_MS);
    expect(line).toBeUndefined();

    line = null;
    void spendGateRefusal(treeDir, async () => 2.1, { timeoutMs: 60_000, clock }).then((l) => (line = l));
    await clock.advance(SPEND_LOOK_MS);
    write({ ...open, ceiling_usd: 2, declined: { spent_usd: 2.1, by: "no", at: "x" } });
    await clock.advance(SPEND_LOOK_MS);
    expect(line).toMatch(/^tree spending stopped: .*\$2\.10 and the person chose not to spend more/);
  });

  it("the root never answers: refused once the dialog's time-out (and a margin) is over", async () => {
    const clock = new FakeClock();
    write(open);
    let line: string | undefined | null = null;
    void spendGateRefusal(treeDir, async () => 1.5, { timeoutMs: 10_000, clock }).then((l) => (line = l));
    await clock.advance(10_000);
    expect(line).toBeNull();
    await clock.advance(6_000);
    expect(line).toMatch(/nobody answered whether to spend more/);
  });

  it("no person: refused at the ceiling at once", async () => {
    write({ ...open, person: false });
    const line = await spendGateRefusal(treeDir, async () => 1, { timeoutMs: 1000, clock: new FakeClock() });
    expect(line).toMatch(/no person to ask; no new turns start$/);
  });
});
