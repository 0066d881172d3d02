/**
 * send_message to a child, live and queued, through the runtime's TurnOperations seam: the
 * fake launcher records what a run's inbox would hold and answers what its events.jsonl would
 * confirm, the tree directory is real. Each message reaches the child's conversation exactly
 * once, in send order, whichever side stops when.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { afterEach, describe, expect, it } from "vitest";
import { TREE_FILES } from "../../../../../src/contracts/layout.js";
import type { PendingPart } from "../../../../../src/contracts/tree.js";
import { listAgentsTool } from "../../../../../src/extension/tools/list-agents.js";
import { sendMessageTool } from "../../../../../src/extension/tools/send-message.js";
import {
  dropConfirmed,
  liveRuns,
  nextMessageId,
  pendingMessageCount,
  queuedPartCount,
} from "../../../../../src/extension/turns/delivery/live-messages.js";
import { restore } from "../../../../../src/extension/turns/restore.js";
import type { ChildState } from "../../../../../src/extension/turns/runtime.js";
import { postLiveMessage } from "../../../../../src/extension/turns/wrapper/launcher.js";
import { deliveredMessageIds } from "../../../../../src/extension/turns/wrapper/run-reads.js";
import { turnResult } from "../../../../support/fake-turns.js";
import { agentRecord } from "../../../../support/records.js";
import { cleanupRuntimes, runtimeHarness } from "../../../../support/runtime-harness.js";

afterEach(cleanupRuntimes);

const message = (id: string, text: string, liveRun?: string): PendingPart => ({
  kind: "MESSAGE",
  from: "/root",
  text,
  sentAt: "2026-01-01T00:00:00.000Z",
  id,
  ...(liveRun && { liveRun }),
});

async function recorded(state: ChildState): Promise<void> {
  await state.settled;
}

describe("the bookkeeping of messages to a child (pure)", () => {
  it("gives ids in order and counts messages not yet read, queued, live and interrupted alike", () => {
    const record = agentRecord();
    expect([nextMessageId(record), nextMessageId(record)]).toEqual([
      { id: "msg-1", seq: 1 },
      { id: "msg-2", seq: 2 },
    ]);
    expect(record.messageSeq).toBe(2);
    record.inbox = [
      message("msg-1", "a", "0001-spawn"),
      { kind: "FOLLOWUP_TASK", from: "/root", text: "f", sentAt: "" },
      message("msg-2", "b"),
    ];
    record.undelivered = [message("msg-0", "old"), { kind: "NEW_TASK", from: "/root", text: "t", sentAt: "" }];
    expect(pendingMessageCount(record)).toBe(3);
    expect(queuedPartCount(record, "0001-spawn")).toBe(2);
    expect(queuedPartCount(record, undefined)).toBe(3);
    expect(liveRuns(record)).toEqual(["0001-spawn"]);
  });

  it("drops only what the named run confirmed, keeping the rest in send order", () => {
    const record = agentRecord({
      inbox: [
        message("msg-1", "a", "0001-spawn"),
        message("msg-2", "b", "0001-spawn"),
        message("msg-3", "c", "0002-followup"),
        message("msg-4", "d"),
      ],
    });
    expect(dropConfirmed(record, "0001-spawn", new Set(["msg-2", "msg-3", "msg-4"]))).toBe(1);
    expect(record.inbox.map((part) => part.id)).toEqual(["msg-1", "msg-3", "msg-4"]);
  });
});

describe("send_message to a running child", () => {
  it("is written into the running turn's inbox in its MESSAGE envelope, recorded first, and says live", async () => {
    const h = await runtimeHarness();
    const worker = await h.child("worker");
    await h.runtime.requestTurn(worker, "spawn");
    const runDir = h.turns.last.runDir;

    const delivery = await h.runtime.queueMessage(worker, "skip the legacy/ folder");
    expect(delivery).toEqual({
      delivered: "live",
      messageId: "msg-1",
      pendingMessages: 1,
      queuedMessages: 0,
      status: "running",
    });
    expect(h.turns.live.get(runDir)).toEqual([
      { id: "msg-1", seq: 1, text: "[MESSAGE from /root · task worker · id msg-1]\nskip the legacy/ folder" },
    ]);
    // The tree directory lists it, with its id and where it was sent, until the run confirms it.
    expect((await h.tree.readRecord("/root/worker"))?.inbox).toEqual([
      expect.objectContaining({ kind: "MESSAGE", id: "msg-1", liveRun: "0001-spawn", text: "skip the legacy/ folder" }),
    ]);
  });

  it("that the run read is not given again: the next turn carries only what came after", async () => {
    const h = await runtimeHarness();
    const worker = await h.child("worker");
    await h.runtime.requestTurn(worker, "spawn");
    const first = h.turns.last;
    await h.runtime.queueMessage(worker, "read me now");
    h.turns.confirm(first.runDir, "msg-1");
    first.finish(turnResult({ finalText: "done" }));
    await recorded(worker);
    expect(worker.record.inbox).toEqual([]);
    expect(pendingMessageCount(worker.record)).toBe(0);

    await h.runtime.followup(worker, "next");
    expect(h.turns.last.spec.prompt).toBe("[FOLLOWUP_TASK from /root · task worker]\nnext");
  });

  it("that the run ended before reading goes with the next turn, in send order with queued parts, each in its own envelope", async () => {
    const h = await runtimeHarness();
    const worker = await h.child("worker");
    await h.runtime.requestTurn(worker, "spawn");
    const first = h.turns.last;
    expect((await h.runtime.queueMessage(worker, "one")).delivered).toBe("live");
    await h.runtime.followup(worker, "the follow-up");
    expect((await h.runtime.queueMessage(worker, "two")).delivered).toBe("live");
    expect((await h.runtime.queueMessage(worker, "three")).delivered).toBe("live");
    // The child read "three" only (a message reaches pi in order, but a test may confirm any).
    h.turns.confirm(first.runDir, "msg-3");
    first.finish(turnResult({ finalText: "first" }));
    await recorded(worker);

    expect(h.turns.started).toHaveLength(2);
    expect(h.turns.last.spec.prompt).toBe(
      [
        "[MESSAGE from /root · task worker · id msg-1]\none",
        "[FOLLOWUP_TASK from /root · task worker]\nthe follow-up",
        "[MESSAGE from /root · task worker · id msg-2]\ntwo",
      ].join("\n\n"),
    );
    expect(worker.record.inbox).toEqual([]);
  });

  it("sent while the turn's end is being recorded goes to that run and, unread there, with the next turn", async () => {
    const h = await runtimeHarness();
    const worker = await h.child("worker");
    await h.runtime.requestTurn(worker, "spawn");
    const first = h.turns.last;
    first.finish(turnResult({ finalText: "done" }));
    // The wrapper has exited; its turn is not recorded yet.
    const late = await h.runtime.queueMessage(worker, "just too late");
    await recorded(worker);
    expect(late.delivered).toBe("live");
    expect(worker.record.status).toBe("completed");
    expect(worker.record.inbox).toEqual([expect.objectContaining({ id: "msg-1", liveRun: "0001-spawn" })]);
    await h.runtime.followup(worker, "go on");
    expect(h.turns.last.spec.prompt).toBe(
      "[MESSAGE from /root · task worker · id msg-1]\njust too late\n\n[FOLLOWUP_TASK from /root · task worker]\ngo on",
    );
  });

  it("read by a stopped turn that left no trace in the session is given again after that turn's prompt", async () => {
    const h = await runtimeHarness();
    const worker = await h.child("worker", "the task");
    await h.runtime.requestTurn(worker, "spawn");
    const first = h.turns.last;
    await h.runtime.queueMessage(worker, "early note");
    h.turns.confirm(first.runDir, "msg-1");
    await h.runtime.interrupt(worker);
    expect(worker.record.status).toBe("interrupted");

    await h.runtime.followup(worker, "resume");
    expect(h.turns.last.spec.prompt).toBe(
      [
        "[NEW_TASK from /root · task worker]\nthe task",
        "[MESSAGE from /root · task worker · id msg-1]\nearly note",
        "[FOLLOWUP_TASK from /root · task worker]\nresume",
      ].join("\n\n"),
    );
  });

  it("whose turn is being stopped, or whose run's inbox cannot be written, is queued instead", async () => {
    const h = await runtimeHarness();
    h.turns.onStop = "hold";
    const worker = await h.child("worker");
    await h.runtime.requestTurn(worker, "spawn");
    h.turns.failNextPost = new Error("EROFS");
    expect(await h.runtime.queueMessage(worker, "not writable")).toMatchObject({
      delivered: "queued",
      queuedMessages: 1,
      pendingMessages: 1,
    });
    expect(worker.record.inbox[0]).not.toHaveProperty("liveRun");

    await h.runtime.dispatch(worker, { type: "stop_asked", by: "interrupt" });
    expect(await h.runtime.queueMessage(worker, "while stopping")).toMatchObject({
      delivered: "queued",
      queuedMessages: 2,
      pendingMessages: 2,
    });
    expect(h.turns.live.get(h.turns.last.runDir)).toBeUndefined();
  });
});

describe("send_message to a child with no running turn", () => {
  it("is queued, written nowhere, and starts no turn", async () => {
    const h = await runtimeHarness();
    const idle = await h.child("idle", "x", { status: "completed", runs: ["0001-spawn"], inbox: [] });
    expect(await h.runtime.queueMessage(idle, "for later")).toEqual({
      delivered: "queued",
      messageId: "msg-1",
      pendingMessages: 1,
      queuedMessages: 1,
      status: "completed",
    });
    expect(h.turns.started).toHaveLength(0);
    expect(h.turns.live.size).toBe(0);
  });
});

describe("restore of live messages", () => {
  it("drops what the runs confirmed and keeps the rest, once: a second restore changes nothing", async () => {
    const h = await runtimeHarness();
    await h.tree.writeRecord(
      agentRecord({
        status: "completed",
        runs: ["0001-spawn", "0002-followup"],
        messageSeq: 3,
        inbox: [
          message("msg-1", "one", "0001-spawn"),
          message("msg-2", "two", "0002-followup"),
          message("msg-3", "three", "0002-followup"),
        ],
      }),
    );
    const runDir = (run: string) => path.join(h.tree.agentDir("/root/worker"), TREE_FILES.runs, run);
    h.turns.confirm(runDir("0002-followup"), "msg-2");

    const first = h.restarted();
    await restore(first, []);
    expect(first.children.get("/root/worker")?.record.inbox.map((part) => part.id)).toEqual(["msg-1", "msg-3"]);
    expect((await h.tree.readRecord("/root/worker"))?.inbox.map((part) => part.id)).toEqual(["msg-1", "msg-3"]);

    const second = h.restarted();
    await restore(second, []);
    expect(second.children.get("/root/worker")?.record.inbox.map((part) => part.id)).toEqual(["msg-1", "msg-3"]);
  });

  it("a turn that was running when the parent went away: its confirmed messages are dropped, unless its stop left no trace", async () => {
    for (const [result, expected] of [
      [turnResult({ status: "completed", turns: 2 }), ["msg-2"]],
      [turnResult({ status: "interrupted", turns: 0 }), ["msg-1", "msg-2"]],
    ] as const) {
      const h = await runtimeHarness();
      await h.tree.writeRecord(
        agentRecord({
          status: "running",
          runs: ["0001-spawn"],
          runningParts: [{ kind: "NEW_TASK", from: "/root", text: "t", sentAt: "" }],
          inbox: [message("msg-1", "read", "0001-spawn"), message("msg-2", "unread", "0001-spawn")],
        }),
      );
      const runDir = path.join(h.tree.agentDir("/root/worker"), TREE_FILES.runs, "0001-spawn");
      h.turns.previousResults.set(runDir, result);
      h.turns.confirm(runDir, "msg-1");
      const rt = h.restarted();
      await restore(rt, []);
      expect(
        rt.children.get("/root/worker")?.record.inbox.map((part) => part.id),
        result.status,
      ).toEqual(expected);
    }
  });
});

describe("the tools", () => {
  const call = async (tool: { execute: (...args: never[]) => Promise<{ details: unknown }> }, params: object) =>
    (
      await (tool.execute as (...args: unknown[]) => Promise<{ details: unknown }>)(
        "call",
        params,
        undefined,
        undefined,
        {},
      )
    ).details;

  it("send_message says delivered and the counts; list_agents shows pending_messages until the child read them", async () => {
    const h = await runtimeHarness();
    const worker = await h.child("worker");
    await h.runtime.requestTurn(worker, "spawn");
    const deps = { pi: {} as ExtensionAPI, runtime: () => h.runtime };
    const send = sendMessageTool(deps);
    const list = listAgentsTool(deps);

    expect(await call(send, { target: "worker", message: "note" })).toEqual({
      delivered: "live",
      target: "/root/worker",
      message_id: "msg-1",
      pending_messages: 1,
      queued_messages: 0,
      agent_status: "running",
    });
    const listed = (await call(list, {})) as { agents: Array<Record<string, unknown>> };
    expect(listed.agents[0]).toMatchObject({ agent_name: "/root/worker", pending_messages: 1 });

    h.turns.confirm(h.turns.last.runDir, "msg-1");
    h.turns.last.finish(turnResult({ finalText: "done" }));
    await recorded(worker);
    const after = (await call(list, {})) as { agents: Array<Record<string, unknown>> };
    expect(after.agents[0]).not.toHaveProperty("pending_messages");
  });

  it("send_message refuses a message over the bound, before anything is recorded", async () => {
    const h = await runtimeHarness();
    const worker = await h.child("worker");
    await h.runtime.requestTurn(worker, "spawn");
    const send = sendMessageTool({ pi: {} as ExtensionAPI, runtime: () => h.runtime });
    await expect(call(send, { target: "worker", message: "x".repeat(8001) })).rejects.toThrow(
      "message is 8001 characters; the limit is 8000",
    );
    expect(worker.record.inbox).toEqual([]);
    expect(worker.record.messageSeq).toBeUndefined();
  });
});

describe("what a run's files say its child read", () => {
  it("the run's message_delivered records, and unread-looking messages the child's session holds as a user message", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "live-ids-"));
    try {
      const runDir = path.join(dir, "runs", "0001-spawn");
      await mkdir(path.join(runDir, "inbox"), { recursive: true });
      const session = path.join(dir, "session.jsonl");
      await writeFile(path.join(runDir, "meta.json"), JSON.stringify({ sessionPath: session }));
      const text = (id: string) => `[MESSAGE from /root · task worker · id ${id}]\nnote ${id}`;
      for (const [seq, id] of [
        [1, "msg-1"],
        [2, "msg-2"],
        [3, "msg-3"],
        [4, "msg-10"],
      ] as const) {
        await postLiveMessage(runDir, seq, { id, text: text(id) });
      }
      await writeFile(
        path.join(runDir, "events.jsonl"),
        [
          JSON.stringify({ type: "run_start", seq: 1, ts: 1, runId: "r", pid: 1, argv: [] }),
          JSON.stringify({ type: "message_delivered", seq: 2, ts: 2, id: "msg-1", text: text("msg-1") }),
          '{"type":"message_delivered","seq":3,"ts":3,"id":"msg-',
        ].join("\n"),
      );
      const user = (content: unknown) => JSON.stringify({ type: "message", message: { role: "user", content } });
      await writeFile(
        session,
        [
          // msg-2: pi put it in the conversation as it stopped (no wrapper recorded it).
          user([{ type: "text", text: text("msg-2") }]),
          // msg-3: only quoted inside a longer prompt, and by an assistant: not read as a message.
          user([{ type: "text", text: `${text("msg-3")}\n\n[FOLLOWUP_TASK from /root · task worker]\ngo` }]),
          JSON.stringify({
            type: "message",
            message: { role: "assistant", content: [{ type: "text", text: text("msg-3") }] },
          }),
          // msg-10 mentions msg-1's id as a prefix; it is read, msg-1 (already known) stays known.
          user(text("msg-10")),
        ].join("\n"),
      );
      expect([...(await deliveredMessageIds(runDir))].sort()).toEqual(["msg-1", "msg-10", "msg-2"]);
      expect([...(await deliveredMessageIds(path.join(dir, "runs", "none")))]).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("a run whose wrapper died (no result.json)", () => {
  it("is read once its pi is gone: what pi wrote to the session as it stopped counts", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "live-ids-"));
    try {
      const runDir = path.join(dir, "runs", "0001-spawn");
      await mkdir(path.join(runDir, "inbox"), { recursive: true });
      const session = path.join(dir, "session.jsonl");
      await writeFile(session, "");
      await writeFile(path.join(runDir, "meta.json"), JSON.stringify({ sessionPath: session }));
      const text = "[MESSAGE from /root · task worker · id msg-1]\nnote";
      await postLiveMessage(runDir, 1, { id: "msg-1", text });
      // A stand-in for the orphaned pi: it puts the queued message in the session, then exits.
      const line = JSON.stringify({ type: "message", message: { role: "user", content: [{ type: "text", text }] } });
      const pi = spawn(
        process.execPath,
        [
          "-e",
          `setTimeout(() => require("fs").appendFileSync(${JSON.stringify(session)}, ${JSON.stringify(`${line}\n`)}), 300)`,
        ],
        {
          stdio: "ignore",
        },
      );
      const exited = once(pi, "exit");
      await writeFile(
        path.join(runDir, "events.jsonl"),
        `${JSON.stringify({ type: "run_start", seq: 1, ts: 1, runId: "r", pid: pi.pid, argv: [] })}\n`,
      );
      expect([...(await deliveredMessageIds(runDir))]).toEqual(["msg-1"]);
      await exited;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
