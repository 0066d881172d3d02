/**
 * Runs the REAL pi CLI of the line under test (pi 1.x, or 0.73.1: test/support/pi-home.ts)
 * against the scripted LLM on 127.0.0.1. These pin down the pi behaviours the wrapper relies on,
 * and how the two lines differ (docs/pi-versions.md); when pi changes, they fail here first
 * instead of deep inside a wrapper test.
 */
import { existsSync, realpathSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { makePiHome, PI_LINE_NAME, type PiHomeOptions } from "../support/pi-home.js";
import { assistantMessages, eventTypes, lastAssistant, messageText, ofType, parseNdjson } from "../support/pi-json.js";
import { killAll, pidAlive, waitForPidExit } from "../support/processes.js";
import { reply, startScriptedLlm, userTexts } from "../support/scripted-llm.js";

let cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  await killAll();
  for (const c of cleanups.reverse()) await c();
  cleanups = [];
});

async function setup(opts: Omit<PiHomeOptions, "llmUrl"> = {}) {
  const llm = await startScriptedLlm();
  cleanups.push(() => llm.close());
  const home = await makePiHome({ llmUrl: llm.url, ...opts });
  cleanups.push(() => home.cleanup());
  return { llm, home };
}

const JSON_ARGS = ["--mode", "json", "-np"];

/** What this line does: pi 1.x (`current`) or pi 0.73.1. */
const onLine = <T>(current: T, older: T): T => (PI_LINE_NAME === "current" ? current : older);

describe("real pi in json mode", () => {
  it("streams a text answer: session header first, assistant message_end with stop", async () => {
    const { llm, home } = await setup();
    llm.script([reply.text("hello from the script")]);

    const r = await home.runPi([...JSON_ARGS, "say hi"]);
    expect(r.code).toBe(0);
    expect(r.timedOut).toBe(false);
    const events = parseNdjson(r.stdout);

    const header = events[0]!;
    expect(header).toMatchObject({ type: "session", version: 3 });
    expect(typeof header.id).toBe("string");
    expect(realpathSync(String(header.cwd))).toBe(realpathSync(home.cwd));

    const msg = lastAssistant(events)!;
    expect(messageText(msg)).toBe("hello from the script");
    expect(msg).toMatchObject({ stopReason: "stop", provider: "fake", model: "fast", api: "openai-completions" });
    // pi 1.x ends all its automatic work with agent_settled (`aborted` false).
    expect(eventTypes(events).slice(-2)).toEqual(onLine(["agent_end", "agent_settled"], ["turn_end", "agent_end"]));
    if (PI_LINE_NAME === "current") expect(events.at(-1)).toEqual({ type: "agent_settled", aborted: false });
    // pi 1.x sends its system prompt as a role "system" message first; 0.73.1 sends none.
    const roles = ofType(events, "message_end").map((e) => e.message?.role);
    expect(roles).toEqual(onLine(["system", "user", "assistant"], ["user", "assistant"]));

    // stdin is "ignore" (/dev/null): pi reads it, finds it empty and adds nothing.
    expect(llm.requests).toHaveLength(1);
    expect(userTexts(llm.requests[0]!)).toEqual(["say hi"]);
    expect(llm.requests[0]).toMatchObject({ model: "fast", stream: true });
  });

  it("runs a scripted bash tool call and sends its result back as a tool message", async () => {
    const { llm, home } = await setup();
    llm.script([reply.toolCall("bash", { command: "echo hi" }, { id: "call_A" }), reply.text("done")]);

    const r = await home.runPi([...JSON_ARGS, "use bash"]);
    expect(r.code).toBe(0);
    const events = parseNdjson(r.stdout);

    expect(ofType(events, "tool_execution_start")).toEqual([
      { type: "tool_execution_start", toolCallId: "call_A", toolName: "bash", args: { command: "echo hi" } },
    ]);
    expect(ofType(events, "tool_execution_end")[0]).toMatchObject({
      toolCallId: "call_A",
      isError: false,
      result: { content: [{ type: "text", text: "hi\n" }] },
    });
    expect(assistantMessages(events).map((m) => m.stopReason)).toEqual(["toolUse", "stop"]);

    expect(llm.requests).toHaveLength(2);
    const toolMsg = llm.requests[1]!.messages.find((m) => m.role === "tool");
    expect(toolMsg).toMatchObject({ tool_call_id: "call_A", content: "hi\n" });
  });

  it("maps reasoning_content to a thinking block and recomputes usage from prompt/completion tokens", async () => {
    const { llm, home } = await setup();
    llm.script([
      reply.text("ok", {
        thinking: "pondering",
        usage: { prompt_tokens: 100, completion_tokens: 7, total_tokens: 999 },
      }),
    ]);

    const events = parseNdjson((await home.runPi([...JSON_ARGS, "think"])).stdout);
    const msg = lastAssistant(events)!;
    expect(msg.content).toEqual([
      { type: "thinking", thinking: "pondering", thinkingSignature: "reasoning_content" },
      { type: "text", text: "ok" },
    ]);
    // pi ignores total_tokens: totalTokens = input + output + cacheRead + cacheWrite. pi 1.x
    // adds `reasoning` (already counted in output) and cost.totalFromProvider.
    const cost = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };
    expect(msg.usage).toEqual({
      input: 100,
      output: 7,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 107,
      ...onLine({ reasoning: 0, cost: { ...cost, totalFromProvider: false } }, { cost }),
    });
  });

  it("finish_reason length gives stopReason length; an unknown one gives error", async () => {
    const { llm, home } = await setup();
    llm.script([reply.text("cut", { finishReason: "length" }), reply.text("odd", { finishReason: "weird" })]);

    const first = lastAssistant(parseNdjson((await home.runPi([...JSON_ARGS, "a"])).stdout))!;
    expect(first.stopReason).toBe("length");
    const second = lastAssistant(parseNdjson((await home.runPi([...JSON_ARGS, "b"])).stdout))!;
    expect(second).toMatchObject({ stopReason: "error", errorMessage: "Provider finish_reason: weird" });
    expect(messageText(second)).toBe("odd");
  });
});

describe("real pi and provider errors", () => {
  it("with retries disabled: one request, last message_end has stopReason error, exit 0", async () => {
    const { llm, home } = await setup({ retry: false });
    llm.script([reply.error(500, "boom")]);

    const r = await home.runPi([...JSON_ARGS, "fail please"]);
    expect(r.code).toBe(0);
    const events = parseNdjson(r.stdout);
    const errorMessage = onLine('500: {"message":"boom","type":"server_error","code":null}', "500 boom");
    expect(lastAssistant(events)).toMatchObject({ stopReason: "error", errorMessage, content: [] });
    expect(ofType(events, "auto_retry_start")).toEqual([]);
    expect(llm.requests).toHaveLength(1);
  });

  it(
    onLine(
      "retry.enabled:false alone: one request (pi 1.x does not let the OpenAI SDK retry)",
      "retry.enabled:false alone still lets the OpenAI SDK retry a 500 twice",
    ),
    async () => {
      const { llm, home } = await setup({ retry: { enabled: false } });
      llm.script([reply.error(500, "e1"), reply.error(500, "e2"), reply.error(500, "e3")]);

      const events = parseNdjson((await home.runPi([...JSON_ARGS, "x"])).stdout);
      expect(llm.requests).toHaveLength(onLine(1, 3));
      expect(assistantMessages(events)).toHaveLength(1);
      expect(lastAssistant(events)?.errorMessage).toBe(
        onLine('500: {"message":"e1","type":"server_error","code":null}', "500 e3"),
      );
    },
  );

  it("with pi's retry: error, agent_end, auto_retry_start, then a fresh agent_start that succeeds", async () => {
    const { llm, home } = await setup({ retry: true });
    llm.script([reply.error(503, "busy"), reply.text("recovered")]);

    const events = parseNdjson((await home.runPi([...JSON_ARGS, "x"])).stdout);
    const types = eventTypes(events);
    const retryAt = types.indexOf("auto_retry_start");
    expect(types[retryAt - 1]).toBe("agent_end");
    // pi 1.x says so on agent_end, and hides the failed attempt from the next request with a context_edit entry.
    expect(ofType(events, "agent_end")[0]).toMatchObject(onLine({ willRetry: true }, {}));
    expect(types.slice(retryAt + 1, retryAt + 3)).toEqual(
      onLine(["entry_appended", "agent_start"], ["agent_start", "turn_start"]),
    );
    if (PI_LINE_NAME === "current")
      expect(events[events.indexOf(ofType(events, "auto_retry_start")[0]!) + 1]).toMatchObject({
        entry: { type: "context_edit", replacement: null },
      });
    const busy = onLine('503: {"message":"busy","type":"server_error","code":null}', "503 busy");
    expect(ofType(events, "auto_retry_start")[0]).toMatchObject({ attempt: 1, errorMessage: busy });
    expect(ofType(events, "auto_retry_end")[0]).toMatchObject({ success: true, attempt: 1 });
    expect(assistantMessages(events).map((m) => m.stopReason)).toEqual(["error", "stop"]);
    expect(llm.requests).toHaveLength(2);
  });
});

describe("real pi process behaviour", () => {
  it("SIGTERM during a hanging reply exits 143 without agent_end", async () => {
    const { llm, home } = await setup();
    llm.script([reply.hang("partial")]);

    const child = home.spawnPi([...JSON_ARGS, "hang"]);
    await llm.waitForRequests(1);
    process.kill(child.pid, "SIGTERM");
    const r = await child.done;
    expect(r.code).toBe(143);
    expect(eventTypes(parseNdjson(r.stdout))).not.toContain("agent_end");
    expect(await waitForPidExit(r.pid)).toBe(true);
    expect(pidAlive(r.pid)).toBe(false);
  });

  it("piped stdin is trimmed and glued to the first message with no separator", async () => {
    const { llm, home } = await setup();
    await home.runPi([...JSON_ARGS, "say hi"], { input: "  from stdin \n" });
    expect(userTexts(llm.requests[0]!)).toEqual(["from stdinsay hi"]);
  });

  it("an argument starting with '-' is an unknown option: exit 1 before any request", async () => {
    const { llm, home } = await setup();
    const r = await home.runPi([...JSON_ARGS, "-rf everything"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("Unknown option: -rf everything");
    expect(llm.requests).toHaveLength(0);
  });

  it("cleanup leaves no temp dir behind", async () => {
    const { home } = await setup();
    expect(existsSync(home.root)).toBe(true);
    await home.cleanup();
    expect(existsSync(home.root)).toBe(false);
  });
});
