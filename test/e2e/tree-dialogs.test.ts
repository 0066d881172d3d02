/**
 * A child's dialog answered by its parent's model, end to end with the real pi and the scripted
 * LLM, on a root without a UI (json mode): the child's bash call writes an ask into its run's
 * dialogs/ folder as its wrapper does for pi's dialog (the wrapper's RPC side is tested on its
 * own), and waits for the answer file. The root's wait_agent returns the question notice, its
 * send_message `answer` writes the answer, and dialogs.jsonl records who answered.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { startRpcRoot } from "../support/rpc-root.js";
import { reply } from "../support/scripted-llm.js";
import {
  allNotices,
  dialogRecords,
  expectCleanExit,
  expectNoSurvivors,
  type Json,
  Program,
  rootResult,
  spawn,
  toolResultFor,
  useTrees,
  waitForAll,
  waitUntil,
} from "../support/tree-harness-extra.js";

const tree = useTrees();

const ASK = {
  version: 1,
  id: "req-1",
  seq: 1,
  method: "select",
  title: "⚠️ Dangerous command: rm -rf build. Allow?",
  options: ["Yes", "No"],
  askedAt: "2026-12-03T10:00:00.000Z",
  expiresAt: "2099-01-01T00:00:00.000Z",
};

/** The child's bash: the ask written whole, then a wait for its answer (a condition, not a duration). */
const ASK_AND_WAIT = [
  'd="$PI_SUBAGENTS_TREE_DIR/agents/worker/runs/0001-spawn/dialogs"',
  'mkdir -p "$d"',
  `printf '%s' '${JSON.stringify(ASK)}' > "$d/.ask.tmp"`,
  'mv "$d/.ask.tmp" "$d/00000001.ask.json"',
  'for i in $(seq 1 1200); do [ -f "$d/00000001.answer.json" ] && break; sleep 0.05; done',
  'cat "$d/00000001.answer.json"',
].join("; ");

describe("a child's dialog on a root without a UI", () => {
  it("reaches the parent model as a question notice; its send_message answer reaches that child, and is recorded", async () => {
    const root = new Program([
      spawn({ task_name: "worker", fork_turns: "none", message: "Clean the build." }),
      waitUntil((notices) => notices.some((n) => n.type === "question")),
      reply.toolCall("send_message", { target: "worker", answer: { question_id: "worker.0001.1", value: "No" } }),
      waitForAll(["/root/worker"], 30_000),
      reply.text("ROOT DONE"),
    ]);
    const h = await tree({
      scripts: {
        "/root": root.steps(),
        "/root/worker": [reply.toolCall("bash", { command: ASK_AND_WAIT }), reply.text("not allowed, left it")],
      },
    });
    expectCleanExit(await h.runRoot("go", { timeoutMs: 90_000 }));

    const question = allNotices(h).find((n) => n.type === "question");
    expect(question).toMatchObject({
      agent_name: "/root/worker",
      question_id: "worker.0001.1",
      method: "select",
      title: ASK.title,
      options: ["Yes", "No"],
    });
    expect(rootResult(h, "send_message", { target: "worker" })).toEqual({
      answered: "worker.0001.1",
      answered_by: "parent",
    });
    // The child's own tool result: the answer file its wrapper would hand to pi.
    const [answerText] = toolResultFor(h.requestsOf("/root/worker").at(-1)!, "bash");
    expect(JSON.parse(answerText!.trim()) as Json).toMatchObject({ id: "req-1", value: "No", answeredBy: "parent" });

    const records = dialogRecords(h);
    expect(records).toEqual([
      expect.objectContaining({ agent: "/root/worker", run: "0001-spawn", seq: 1, value: "No", answeredBy: "parent" }),
    ]);
    // Every child's environment names the root's session; the route says where dialogs go.
    const meta = JSON.parse(
      fs.readFileSync(path.join(h.treeDir(), "agents", "worker", "runs", "0001-spawn", "meta.json"), "utf8"),
    ) as { env: Record<string, string>; dialogs: unknown };
    expect(meta.env.PI_SUBAGENT_PARENT_SESSION).toBe(path.basename(h.treeDir()));
    expect(meta.env.PI_SUBAGENTS_DIALOG_ROUTE).toBe("parent");
    expect(meta.dialogs).toEqual({ timeoutMs: 300_000 });
    await expectNoSurvivors(h);
  }, 150_000);
});

describe("a child's dialog on a root with a UI", () => {
  it("an RPC client gets pi's own dialog headed with the child's path, counted in the status; its answer reaches the child", async () => {
    const root = new Program([
      spawn({ task_name: "worker", fork_turns: "none", message: "Clean the build." }),
      waitForAll(["/root/worker"], 30_000),
      reply.text("ROOT DONE"),
    ]);
    const h = await tree({
      scripts: {
        "/root": root.steps(),
        "/root/worker": [reply.toolCall("bash", { command: ASK_AND_WAIT }), reply.text("allowed, removed it")],
      },
    });
    const rpc = startRpcRoot(h);
    try {
      rpc.send({ type: "prompt", message: "clean up" });
      const dialog = await rpc.rpc.waitFor(
        (line) => line.type === "extension_ui_request" && line.method === "select" && /asks:/.test(line.title),
        60_000,
      );
      expect(dialog.title).toBe(`/root/worker asks: ${ASK.title}`);
      expect(dialog.options).toEqual(["Yes", "No"]);
      await rpc.rpc.waitFor(
        (line) =>
          line.type === "extension_ui_request" &&
          line.method === "setStatus" &&
          /1 dialog waiting/.test(line.statusText ?? ""),
      );
      rpc.send({ type: "extension_ui_response", id: dialog.id, value: "Yes" });
      await rpc.rpc.waitFor((line) => line.type === "agent_end", 60_000);
    } finally {
      await rpc.close();
    }
    const [answerText] = toolResultFor(h.requestsOf("/root/worker").at(-1)!, "bash");
    expect(JSON.parse(answerText!.trim()) as Json).toMatchObject({ id: "req-1", value: "Yes", answeredBy: "person" });
    const record = JSON.parse(fs.readFileSync(path.join(h.treeDir(), "dialogs.jsonl"), "utf8")) as Json;
    expect(record).toMatchObject({ agent: "/root/worker", value: "Yes", answeredBy: "person" });
    expect(h.requestsOf("/root").some((req) => JSON.stringify(req).includes('"question"'))).toBe(false);
    await expectNoSurvivors(h);
  }, 150_000);
});
