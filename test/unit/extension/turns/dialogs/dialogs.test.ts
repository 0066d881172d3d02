/**
 * The desk that answers a child's dialogs, on a runtime with fake turns: the test writes each
 * ask file as a child's wrapper would (and, for a time-out, its answer) and looks at what the
 * desk writes back, what the parent model is told and what dialogs.jsonl records.
 */
import fs from "node:fs";
import path from "node:path";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { afterEach, describe, expect, it } from "vitest";
import {
  type DialogAnswerV1,
  type DialogAskV1,
  dialogAnswerFileName,
  dialogAskFileName,
} from "../../../../../src/contracts/dialogs.js";
import { TREE_FILES } from "../../../../../src/contracts/layout.js";
import { sendMessageTool } from "../../../../../src/extension/tools/send-message.js";
import type { DialogHandling } from "../../../../../src/extension/turns/dialogs/dialog-routing.js";
import { DialogDesk, type DialogPresenter } from "../../../../../src/extension/turns/dialogs/dialogs.js";
import { runningTurns } from "../../../../../src/extension/ui/child-dialogs.js";
import { cleanupRuntimes, type RuntimeHarness, runtimeHarness } from "../../../../support/runtime-harness.js";

afterEach(cleanupRuntimes);

function ask(seq: number, over: Partial<DialogAskV1> = {}): DialogAskV1 {
  return {
    version: 1,
    id: `req-${seq}`,
    seq,
    method: "select",
    title: `Allow command ${seq}?`,
    options: ["Yes", "No"],
    askedAt: "2026-12-03T10:00:00.000Z",
    expiresAt: "2026-12-03T10:05:00.000Z",
    ...over,
  };
}

/** What a child's wrapper does when pi asks: the ask file, whole. */
function writeAsk(runDir: string, dialog: DialogAskV1): void {
  const folder = path.join(runDir, "dialogs");
  fs.mkdirSync(folder, { recursive: true });
  fs.writeFileSync(path.join(folder, dialogAskFileName(dialog.seq)), JSON.stringify(dialog));
}

/** What a child's wrapper does at a dialog's time-out. */
function writeTimeout(runDir: string, dialog: DialogAskV1): void {
  const answer: DialogAnswerV1 = {
    version: 1,
    id: dialog.id,
    cancelled: true,
    answeredBy: "timeout",
    answeredAt: "2026-12-03T10:05:00.000Z",
  };
  fs.writeFileSync(path.join(runDir, "dialogs", dialogAnswerFileName(dialog.seq)), JSON.stringify(answer));
}

function readAnswer(runDir: string, seq: number): DialogAnswerV1 | undefined {
  const file = path.join(runDir, "dialogs", dialogAnswerFileName(seq));
  return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, "utf8")) as DialogAnswerV1) : undefined;
}

function records(h: RuntimeHarness): Array<Record<string, unknown>> {
  const file = path.join(h.tree.root, TREE_FILES.dialogs);
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** A fake pi dialog: each call waits until the test answers it; an abort resolves it undefined. */
function fakeDialogs() {
  const shown: Array<{ title: string; answer(value: string | boolean | undefined): void; aborted(): boolean }> = [];
  const present: DialogPresenter = (_ask, title, signal) =>
    new Promise((resolve) => {
      signal.addEventListener("abort", () => resolve(undefined));
      shown.push({ title, answer: resolve, aborted: () => signal.aborted });
    });
  return { shown, present };
}

async function setUp(handling: DialogHandling, present?: DialogPresenter) {
  const h = await runtimeHarness();
  const worker = await h.child("worker");
  await h.runtime.requestTurn(worker, "spawn");
  const runDir = h.turns.last.runDir;
  fs.mkdirSync(runDir, { recursive: true });
  const desk = new DialogDesk({
    handling,
    runs: () => runningTurns(h.runtime),
    present,
    question: (notice) => h.runtime.notify(notice),
    recordPath: path.join(h.tree.root, TREE_FILES.dialogs),
    report: (line) => h.problems.push(line),
  });
  h.runtime.dialogDesk = desk;
  return { h, desk, runDir };
}

/** Waits until `check` holds, looking again after each turn of the event loop (no timer). */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !check(); i++) await new Promise((resolve) => setImmediate(resolve));
  expect(check()).toBe(true);
}

describe("a child's dialog for the person", () => {
  it("is shown headed with the child's path, one at a time in order; each answer goes to its own ask and is recorded", async () => {
    const ui = fakeDialogs();
    const { h, desk, runDir } = await setUp("present", ui.present);
    writeAsk(runDir, ask(1));
    writeAsk(runDir, ask(2));
    await desk.scan();
    expect(ui.shown.map((dialog) => dialog.title)).toEqual(["/root/worker asks: Allow command 1?"]);
    expect(desk.waitingForPerson).toBe(2);

    ui.shown[0]!.answer("Yes");
    await until(() => ui.shown.length === 2);
    expect(ui.shown[1]!.title).toBe("/root/worker asks: Allow command 2?");
    expect(readAnswer(runDir, 1)).toMatchObject({ id: "req-1", value: "Yes", answeredBy: "person" });
    expect(readAnswer(runDir, 2)).toBeUndefined();
    expect(desk.waitingForPerson).toBe(1);

    ui.shown[1]!.answer(undefined);
    await until(() => readAnswer(runDir, 2) !== undefined);
    expect(readAnswer(runDir, 2)).toMatchObject({ id: "req-2", cancelled: true, answeredBy: "person" });
    expect(records(h)).toEqual([
      expect.objectContaining({ agent: "/root/worker", run: "0001-spawn", seq: 1, value: "Yes", answeredBy: "person" }),
      expect.objectContaining({ seq: 2, cancelled: true, answeredBy: "person" }),
    ]);
    // Nothing for the model: the person answered.
    expect(h.runtime.mailbox.pending).toBe(0);
  });

  it("one the wrapper cancelled at its time-out is closed if shown, dropped if waiting, and recorded as the time-out's", async () => {
    const ui = fakeDialogs();
    const { h, desk, runDir } = await setUp("present", ui.present);
    writeAsk(runDir, ask(1));
    writeAsk(runDir, ask(2));
    writeAsk(runDir, ask(3));
    await desk.scan();
    writeTimeout(runDir, ask(1));
    writeTimeout(runDir, ask(2));
    await desk.scan();
    expect(ui.shown[0]!.aborted()).toBe(true);
    // The next shown is the third: the second left the line unseen.
    await until(() => ui.shown.length === 2);
    expect(ui.shown[1]!.title).toBe("/root/worker asks: Allow command 3?");
    expect(readAnswer(runDir, 1)?.answeredBy).toBe("timeout");
    expect(records(h).map((line) => [line.seq, line.answeredBy])).toEqual([
      [1, "timeout"],
      [2, "timeout"],
    ]);
    expect(desk.waitingForPerson).toBe(1);
  });

  it("an ask seen again by the next scan is not shown twice", async () => {
    const ui = fakeDialogs();
    const { desk, runDir } = await setUp("present", ui.present);
    writeAsk(runDir, ask(1));
    await desk.scan();
    await desk.scan();
    expect(ui.shown).toHaveLength(1);
  });
});

describe("a root that comes back (a new process over the same running turn)", () => {
  it("shows the dialogs still waiting, not those answered while it was away", async () => {
    const ui = fakeDialogs();
    const { h, runDir } = await setUp("present", ui.present);
    writeAsk(runDir, ask(1));
    writeAsk(runDir, ask(2));
    // The wrapper timed the first out while no root was there.
    writeTimeout(runDir, ask(1));
    const again = new DialogDesk({
      handling: "present",
      runs: () => runningTurns(h.runtime),
      present: ui.present,
      question: (notice) => h.runtime.notify(notice),
      recordPath: path.join(h.tree.root, TREE_FILES.dialogs),
      report: (line) => h.problems.push(line),
    });
    await again.scan();
    expect(ui.shown.map((dialog) => dialog.title)).toEqual(["/root/worker asks: Allow command 2?"]);
    expect(again.waitingForPerson).toBe(1);
  });
});

describe("a child's dialog for the parent model", () => {
  const pi = {} as ExtensionAPI;

  it("is a question notice, answered with send_message answer; the answer file and the record say parent", async () => {
    const { h, desk, runDir } = await setUp("parent_model");
    writeAsk(runDir, ask(1, { title: "⚠️ Dangerous command: rm -rf x" }));
    await desk.scan();
    const [notice] = h.runtime.mailbox.take(5);
    expect(notice).toMatchObject({
      agent_name: "/root/worker",
      type: "question",
      question_id: "worker.0001.1",
      method: "select",
      title: "⚠️ Dangerous command: rm -rf x",
      options: ["Yes", "No"],
    });
    expect(notice?.report).toContain(
      'send_message {"target": "/root/worker", "answer": {"question_id": "worker.0001.1"',
    );

    const tool = sendMessageTool({ pi, runtime: () => h.runtime });
    const result = await tool.execute(
      "call",
      { target: "worker", answer: { question_id: "worker.0001.1", value: "No" } },
      undefined,
      undefined,
      undefined as never,
    );
    expect(result.details).toEqual({ answered: "worker.0001.1", answered_by: "parent" });
    expect(readAnswer(runDir, 1)).toMatchObject({ id: "req-1", value: "No", answeredBy: "parent" });
    expect(records(h)).toEqual([expect.objectContaining({ seq: 1, value: "No", answeredBy: "parent" })]);

    // A question that is gone is a tool error that says so.
    await expect(
      tool.execute(
        "call",
        { target: "worker", answer: { question_id: "worker.0001.1", value: "Yes" } },
        undefined,
        undefined,
        undefined as never,
      ),
    ).rejects.toThrow('no question "worker.0001.1" of /root/worker is waiting');
  });

  it("an answer that does not fit the question is refused and the question still waits", async () => {
    const { h, desk, runDir } = await setUp("parent_model");
    writeAsk(runDir, ask(1));
    await desk.scan();
    await expect(desk.answerQuestion("/root/worker", { question_id: "worker.0001.1", value: "Maybe" })).rejects.toThrow(
      "is not one of its options",
    );
    expect(desk.openQuestions()).toEqual(["worker.0001.1"]);
    expect(readAnswer(runDir, 1)).toBeUndefined();
    expect(h.problems).toEqual([]);
  });

  it("a question the wrapper timed out is gone: the answer is refused, the record says timeout", async () => {
    const { h, desk, runDir } = await setUp("parent_model");
    writeAsk(runDir, ask(1));
    await desk.scan();
    writeTimeout(runDir, ask(1));
    await desk.scan();
    expect(desk.openQuestions()).toEqual([]);
    await expect(desk.answerQuestion("/root/worker", { question_id: "worker.0001.1", value: "Yes" })).rejects.toThrow(
      "is waiting",
    );
    expect(records(h)).toEqual([expect.objectContaining({ answeredBy: "timeout", cancelled: true })]);
  });

  it("an answer that loses the race with the time-out says so", async () => {
    const { desk, runDir } = await setUp("parent_model");
    writeAsk(runDir, ask(1));
    await desk.scan();
    writeTimeout(runDir, ask(1));
    await expect(desk.answerQuestion("/root/worker", { question_id: "worker.0001.1", value: "Yes" })).rejects.toThrow(
      "was answered first (timeout)",
    );
    expect(readAnswer(runDir, 1)?.answeredBy).toBe("timeout");
  });
});

describe("deny", () => {
  it("cancels each dialog at once and records it", async () => {
    const { h, desk, runDir } = await setUp("deny");
    writeAsk(runDir, ask(1));
    await desk.scan();
    expect(readAnswer(runDir, 1)).toMatchObject({ cancelled: true, answeredBy: "deny" });
    expect(records(h)).toEqual([expect.objectContaining({ answeredBy: "deny", cancelled: true })]);
    expect(h.runtime.mailbox.pending).toBe(0);
  });
});

describe("a turn that ends", () => {
  it("takes its dialogs with it: the person's line and the parent's questions let them go", async () => {
    const { h, desk, runDir } = await setUp("parent_model");
    writeAsk(runDir, ask(1));
    await desk.scan();
    expect(desk.openQuestions()).toHaveLength(1);
    h.turns.last.finish(undefined);
    await h.runtime.children.get("/root/worker")?.settled;
    await desk.scan();
    expect(desk.openQuestions()).toEqual([]);
  });

  it("is over once its result.json exists, before its record says so: the shown dialog closes and the waiting one is dropped", async () => {
    const ui = fakeDialogs();
    const { h, desk, runDir } = await setUp("present", ui.present);
    writeAsk(runDir, ask(1));
    writeAsk(runDir, ask(2));
    await desk.scan();
    expect(ui.shown).toHaveLength(1);
    // The wrapper wrote its result (an interrupt, a time limit); the turn still runs here.
    fs.writeFileSync(path.join(runDir, "result.json"), "{}");
    expect(runningTurns(h.runtime).map((run) => run.runDir)).toEqual([runDir]);
    await desk.scan();
    expect(ui.shown[0]!.aborted()).toBe(true);
    expect(desk.waitingForPerson).toBe(0);
    expect(ui.shown).toHaveLength(1);
  });

  it("a question of a run whose result.json exists is let go", async () => {
    const { desk, runDir } = await setUp("parent_model");
    writeAsk(runDir, ask(1));
    await desk.scan();
    expect(desk.openQuestions()).toHaveLength(1);
    fs.writeFileSync(path.join(runDir, "result.json"), "{}");
    await desk.scan();
    expect(desk.openQuestions()).toEqual([]);
  });
});
