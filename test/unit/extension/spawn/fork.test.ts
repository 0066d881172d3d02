import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { SessionManager } from "@mariozechner/pi-coding-agent";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LIMITS } from "../../../../src/contracts/tree.js";
import {
  forkMessages,
  hasAssistant,
  renderForkTranscript,
  splitTurns,
  writeForkSession,
} from "../../../../src/extension/spawn/fork.js";
import { PI_LINE_NAME, REPO_ROOT } from "../../../support/pi-home.js";

const usage = {
  input: 1,
  output: 1,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 2,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};
let clock = 1_000;

function user(text: string) {
  return { role: "user", content: [{ type: "text", text }], timestamp: clock++ };
}

function assistant(content: unknown[], provider = "fake") {
  const stopReason = content.some((b) => (b as { type: string }).type === "toolCall") ? "toolUse" : "stop";
  return {
    role: "assistant",
    content,
    api: "openai-completions",
    provider,
    model: "fast",
    usage,
    stopReason,
    timestamp: clock++,
  };
}

const text = (t: string) => ({ type: "text", text: t });
const call = (id: string, name: string, args: unknown = {}) => ({ type: "toolCall", id, name, arguments: args });

function result(toolCallId: string, toolName: string, output: string, isError = false) {
  return { role: "toolResult", toolCallId, toolName, content: [text(output)], isError, timestamp: clock++ };
}

let nextId = 0;
/** Session entries as getBranch() returns them, root first. */
function branch(...items: unknown[]): unknown[] {
  let parentId: string | null = null;
  return items.map((item) => {
    const id = (nextId++).toString(16).padStart(8, "0");
    const isMessage = typeof item === "object" && item !== null && "role" in item;
    const entry = isMessage ? { type: "message", message: item } : (item as object);
    const out = { ...entry, id, parentId, timestamp: new Date(clock).toISOString() };
    parentId = id;
    return out;
  });
}

const spawnCall = call("spawn-1", "spawn_agent", { task_name: "kid", message: "go" });

/** Three finished turns, then the current one that is calling spawn_agent. */
function parentBranch(): unknown[] {
  return branch(
    user("turn one"),
    assistant([text("answer one")]),
    { type: "model_change", provider: "fake", modelId: "fast" },
    user("turn two"),
    assistant([call("c1", "bash", { command: "ls" })]),
    result("c1", "bash", "a.txt\nb.txt"),
    assistant([text("answer two")]),
    { type: "custom", customType: "pi-subagents", data: { kind: "agent" } },
    { type: "message", message: { role: "custom", customType: "note", content: "x", display: true, timestamp: 1 } },
    {
      type: "message",
      message: {
        role: "bashExecution",
        command: "ls",
        output: "",
        exitCode: 0,
        cancelled: false,
        truncated: false,
        timestamp: 1,
      },
    },
    user("turn three"),
    assistant([text("answer three")]),
    user("turn four: spawn a kid"),
    assistant([call("c2", "read", { path: "a.txt" })]),
    result("c2", "read", "content of a"),
    assistant([text("spawning"), spawnCall]),
  );
}

function texts(messages: unknown[]): string[] {
  return messages.map((m) => {
    const msg = m as {
      role: string;
      content: Array<{ type: string; text?: string; name?: string; thinking?: string }>;
    };
    return `${msg.role}:${msg.content.map((b) => b.text ?? b.name ?? b.thinking).join("|")}`;
  });
}

describe("forkMessages", () => {
  it("splits into turns at user messages and keeps only user/assistant/toolResult", () => {
    const all = forkMessages(parentBranch(), { kind: "all" }, { childProvider: "fake" });
    expect(splitTurns(all).map((turn) => texts(turn)[0])).toEqual([
      "user:turn one",
      "user:turn two",
      "user:turn three",
      "user:turn four: spawn a kid",
    ]);
    expect(all.map((m) => (m as { role: string }).role)).not.toContain("custom");
    expect(all.map((m) => (m as { role: string }).role)).not.toContain("bashExecution");
  });

  it("takes the last N turns and leaves out the pending spawn_agent call", () => {
    expect(texts(forkMessages(parentBranch(), { kind: "recent", turns: 2 }, { childProvider: "fake" }))).toEqual([
      "user:turn three",
      "assistant:answer three",
      "user:turn four: spawn a kid",
      "assistant:read",
      "toolResult:content of a",
    ]);
    expect(texts(forkMessages(parentBranch(), { kind: "recent", turns: 1 }, { childProvider: "fake" }))).toEqual([
      "user:turn four: spawn a kid",
      "assistant:read",
      "toolResult:content of a",
    ]);
  });

  it("forks every turn when N is larger than the history, and nothing for none", () => {
    const entries = parentBranch();
    const all = forkMessages(entries, { kind: "all" }, { childProvider: "fake" });
    expect(all).toHaveLength(11);
    expect(forkMessages(entries, { kind: "recent", turns: 99 }, { childProvider: "fake" })).toEqual(all);
    expect(forkMessages(parentBranch(), { kind: "none" }, { childProvider: "fake" })).toEqual([]);
    expect(forkMessages([], { kind: "all" }, { childProvider: "fake" })).toEqual([]);
  });

  it("drops the spawn_agent message together with results of sibling calls already answered", () => {
    const entries = branch(
      user("do two things"),
      assistant([call("a", "read", { path: "x" }), call("s", "spawn_agent", {})]),
      result("a", "read", "x content"),
    );
    expect(texts(forkMessages(entries, { kind: "all" }, { childProvider: "fake" }))).toEqual(["user:do two things"]);
  });

  it("never ends with an assistant message whose tool calls have no results", () => {
    const entries = branch(
      user("one"),
      assistant([text("ok")]),
      user("two"),
      assistant([call("x", "bash", {})]), // aborted before its result was written
      user("three"),
      assistant([call("y", "bash", {})]),
      result("y", "bash", "done"),
      assistant([call("z", "bash", {})]),
    );
    const out = forkMessages(entries, { kind: "all" }, { childProvider: "fake" });
    expect(texts(out).at(-1)).toBe("toolResult:done");
    expect(texts(forkMessages(entries.slice(0, 4), { kind: "all" }, { childProvider: "fake" }))).toEqual([
      "user:one",
      "assistant:ok",
      "user:two",
    ]);
  });

  it("strips transport signatures and caps thinking", () => {
    const signature = `{"id":"rs_1","encrypted_content":"${"e".repeat(20_000)}"}`;
    const entries = branch(
      user("think"),
      assistant([
        { type: "thinking", thinking: "t".repeat(10_000), thinkingSignature: signature },
        { type: "text", text: "answer", textSignature: '{"v":1,"id":"msg_abc"}' },
      ]),
      user("now spawn"),
    );
    const before = JSON.stringify(entries);
    const out = forkMessages(entries, { kind: "all" }, { childProvider: "fake" });
    expect(JSON.stringify(entries)).toBe(before);
    expect(JSON.stringify(out)).not.toMatch(/thinkingSignature|textSignature/);
    const blocks = (out[1] as { content: Array<{ type: string; thinking?: string }> }).content;
    expect(blocks[0]?.thinking?.length).toBe(LIMITS.thinkingChars);
    expect(blocks[1]).toEqual({ type: "text", text: "answer" });
  });

  it("drops thinking from messages of another provider, and messages left empty", () => {
    const entries = branch(
      user("q"),
      assistant([{ type: "thinking", thinking: "private" }], "anthropic"),
      assistant([{ type: "thinking", thinking: "mine" }, text("a")], "openai"),
      assistant([{ type: "thinking", thinking: "theirs" }, text("b")], "anthropic"),
    );
    const toOpenai = forkMessages(entries, { kind: "all" }, { childProvider: "openai" });
    expect(texts(toOpenai)).toEqual(["user:q", "assistant:mine|a", "assistant:b"]);
    const toAnthropic = forkMessages(entries, { kind: "all" }, { childProvider: "anthropic" });
    expect(texts(toAnthropic)).toEqual(["user:q", "assistant:private", "assistant:a", "assistant:theirs|b"]);
  });

  it("honours the latest compaction like pi: summary first, summarised messages left out", () => {
    const entries = branch(
      user("old"),
      assistant([text("old answer")]),
      user("kept"),
      assistant([text("kept answer")]),
    );
    const firstKept = (entries[2] as { id: string }).id;
    const all = [
      ...entries,
      ...branch(
        { type: "compaction", summary: "we did old things", firstKeptEntryId: firstKept, tokensBefore: 9 },
        user("after"),
      ),
    ];
    const out = texts(forkMessages(all, { kind: "all" }, { childProvider: "fake" }));
    expect(out).toHaveLength(4);
    expect(out[0]).toMatch(/^user:The conversation history before this point was compacted.*we did old things/s);
    expect(out.slice(1)).toEqual(["user:kept", "assistant:kept answer", "user:after"]);
  });
});

/** Entries of several branch() calls as one chain (each entry's parent is the one before it). */
function chain(...parts: unknown[][]): unknown[] {
  return parts
    .flat()
    .map((entry, i, all) => ({ ...(entry as object), parentId: i === 0 ? null : (all[i - 1] as { id: string }).id }));
}

describe("forkMessages and pi 1.x sessions", () => {
  /** The branch of a pi 1.x parent whose first answer failed, was retried and hidden by a context_edit entry. */
  function retriedBranch(): unknown[] {
    const entries = branch(
      { role: "system", content: "", sections: { preamble: "You are a coding assistant" }, timestamp: clock++ },
      user("do it"),
      {
        ...assistant([]),
        stopReason: "error",
        errorMessage: '503: {"message":"overloaded"}',
      },
    );
    const failed = (entries[2] as { id: string }).id;
    return chain(
      entries,
      branch({ type: "context_edit", targetId: failed, replacement: null }, assistant([text("done after the retry")])),
    );
  }

  it("leaves out the system message and the retried attempt a context_edit hides", () => {
    expect(texts(forkMessages(retriedBranch(), { kind: "all" }, { childProvider: "fake" }))).toEqual([
      "user:do it",
      "assistant:done after the retry",
    ]);
  });

  it("a context_edit hides its entry (replacement null) or carries the new content (a string is one text block in an assistant message)", () => {
    const entries = branch(
      user("question"),
      assistant([text("a very long answer")]),
      user("second"),
      assistant([text("hidden answer")]),
    );
    const [, answer, , hidden] = entries.map((entry) => (entry as { id: string }).id);
    const edited = chain(
      entries,
      branch(
        { type: "context_edit", targetId: answer, replacement: { content: "first edit" } },
        { type: "context_edit", targetId: answer, replacement: { content: "shortened" } },
        { type: "context_edit", targetId: hidden, replacement: null },
        user("next"),
      ),
    );
    expect(texts(forkMessages(edited, { kind: "all" }, { childProvider: "fake" }))).toEqual([
      "user:question",
      "assistant:shortened",
      "user:second",
      "user:next",
    ]);
  });

  it("a failed or aborted attempt without a context_edit (pi 0.73.1 keeps it) is not carried either: pi sends it to no provider", () => {
    const entries = branch(
      user("try"),
      { ...assistant([text("half an answer")]), stopReason: "error", errorMessage: "boom" },
      user("again"),
      { ...assistant([text("partial")]), stopReason: "aborted" },
      user("once more"),
      assistant([text("full answer")]),
    );
    expect(texts(forkMessages(entries, { kind: "all" }, { childProvider: "fake" }))).toEqual([
      "user:try",
      "user:again",
      "user:once more",
      "assistant:full answer",
    ]);
  });

  it.skipIf(PI_LINE_NAME !== "current")(
    "keeps what pi 1.x's own context builder keeps for a retried attempt",
    async () => {
      const file = path.join(
        REPO_ROOT,
        "node_modules",
        "@earendil-works",
        "pi-coding-agent",
        "dist",
        "core",
        "session-manager.js",
      );
      const { buildSessionContext } = (await import(pathToFileURL(file).href)) as {
        buildSessionContext(entries: unknown[]): { messages: unknown[] };
      };
      const entries = retriedBranch();
      const pi = buildSessionContext(entries).messages.filter((m) =>
        ["user", "assistant", "toolResult"].includes((m as { role: string }).role),
      );
      expect(texts(forkMessages(entries, { kind: "all" }, { childProvider: "fake" }))).toEqual(texts(pi));
    },
  );
});

describe("hasAssistant and renderForkTranscript", () => {
  it("renders a readable transcript without thinking, with capped tool results", () => {
    const messages = [
      user("list files"),
      assistant([{ type: "thinking", thinking: "secret" }, text("Let me look."), call("c", "bash", { command: "ls" })]),
      result("c", "bash", "z".repeat(5000)),
      result("d", "read", "nope", true),
      { role: "user", content: "plain string", timestamp: 1 },
    ];
    expect(hasAssistant(messages)).toBe(true);
    expect(hasAssistant([user("x")])).toBe(false);
    const out = renderForkTranscript(messages);
    expect(
      out.startsWith(
        '[user]\nlist files\n\n[assistant]\nLet me look.\n[tool call bash] {"command":"ls"}\n[tool result bash] zzz',
      ),
    ).toBe(true);
    expect(out).not.toContain("secret");
    expect(out).toContain(`${"z".repeat(1999)}…\n[tool error read] nope\n\n[user]\nplain string`);
  });
});

describe("writeForkSession", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "fork-test-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("writes a session pi's own SessionManager reads back message for message", async () => {
    const messages = forkMessages(parentBranch(), { kind: "all" }, { childProvider: "fake" });
    const file = path.join(dir, "agents", "kid", "session.jsonl");
    await writeForkSession(file, messages, { cwd: dir, parentSession: "/parent/session.jsonl" });

    const lines = (await readFile(file, "utf8"))
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({ type: "session", version: 3, cwd: dir, parentSession: "/parent/session.jsonl" });
    expect(lines[0].id).toMatch(/^[0-9a-f-]{36}$/);
    expect(lines[1]).toMatchObject({ type: "message", parentId: null });
    for (const line of lines.slice(1)) expect(line.id).toMatch(/^[0-9a-f]{8}$/);

    const session = SessionManager.open(file);
    expect(session.getHeader()).toMatchObject({ id: lines[0].id, parentSession: "/parent/session.jsonl" });
    expect(session.getCwd()).toBe(dir);
    expect(session.buildSessionContext().messages).toEqual(messages);
    expect(session.getBranch().map((e) => (e.type === "message" ? e.message : e))).toEqual(messages);
    expect(session.buildSessionContext().model).toEqual({ provider: "fake", modelId: "fast" });

    // pi continues the file: a new message is appended once, with no second header.
    session.appendMessage({ role: "user", content: "next task", timestamp: Date.now() });
    const after = (await readFile(file, "utf8"))
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(after.filter((e) => e.type === "session")).toHaveLength(1);
    expect(after).toHaveLength(lines.length + 1);
    expect(after.at(-1)).toMatchObject({ parentId: lines.at(-1).id });
    expect(SessionManager.open(file).buildSessionContext().messages).toHaveLength(messages.length + 1);
  });

  it("leaves parentSession out when none is given", async () => {
    const file = path.join(dir, "s.jsonl");
    await writeForkSession(file, [user("q"), assistant([text("a")])], { cwd: "/w" });
    const header = JSON.parse((await readFile(file, "utf8")).split("\n")[0]!);
    expect(header).not.toHaveProperty("parentSession");
    expect(SessionManager.open(file).buildSessionContext().messages).toHaveLength(2);
  });

  it("refuses a history pi could not continue (no assistant message)", async () => {
    await expect(writeForkSession(path.join(dir, "s.jsonl"), [user("q")], { cwd: dir })).rejects.toThrow(
      /assistant message/,
    );
  });
});
