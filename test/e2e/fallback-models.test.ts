/**
 * Fallback models with the REAL pi of the line under test against the scripted LLM:
 * a model that fails with a provider error after pi's retries (none here: pi-home turns them
 * off) hands the turn to the next model in the same session, and that model's first request
 * carries the conversation so far.
 */
import { afterEach, describe, expect, it } from "vitest";
import { fakeModels, makePiHome, PI_LINE_NAME, type RetrySettings } from "../support/pi-home.js";
import { killAll } from "../support/processes.js";
import { type ChatRequest, type Reply, reply, startScriptedLlm, userTexts } from "../support/scripted-llm.js";
import { cleanupWrapperCases, defaultMeta, wrapperCase } from "../support/wrapper-harness.js";

let cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  await killAll();
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
  await cleanupWrapperCases();
});

/** fakeModels plus `fake/flaky`, the model that fails. */
function modelsWithFlaky(url: string): unknown {
  const models = fakeModels(url) as { providers: { fake: { models: object[] } } };
  models.providers.fake.models.push({ id: "flaky", reasoning: true });
  return models;
}

/** flaky: a tool call, then `failure`; fast: the answer. */
async function setup(failure: Reply, retry?: RetrySettings) {
  const llm = await startScriptedLlm();
  cleanups.push(() => llm.close());
  const home = await makePiHome({ llmUrl: llm.url, models: modelsWithFlaky(llm.url), ...(retry && { retry }) });
  cleanups.push(() => home.cleanup());
  let flakyCalls = 0;
  llm.onRequest((req: ChatRequest) => {
    if (req.model !== "flaky") return reply.text("finished on fast");
    flakyCalls += 1;
    return flakyCalls === 1 ? reply.toolCall("bash", { command: "echo step-one" }, { id: "call_1" }) : failure;
  });
  const wrapper = await wrapperCase({
    meta: defaultMeta({
      graceMs: 5000,
      task: "do the two steps",
      requestedModel: "fake/flaky",
      fallbackModels: ["fake/fast"],
      sessionPath: "out/session.jsonl",
    }),
  });
  // Two pi starts per run: on a loaded machine pi 0.73 alone can take 10 s to start.
  return { llm, run: () => wrapper.run({ env: home.env, timeoutMs: 90_000 }) };
}

const FAILURES: Array<[string, Reply, string]> = [
  ["429 with Retry-After", reply.error(429, "Rate limit reached", { headers: { "retry-after": "30" } }), "rate_limit"],
  ["503", reply.error(503, "Service Unavailable"), "overloaded"],
  ["500", reply.error(500, "upstream exploded"), "server_error"],
  ["401", reply.error(401, "Incorrect API key provided", { type: "invalid_request_error" }), "auth"],
  ["a closed connection", reply.close(), "connection"],
];

describe("fallback models with the real pi", () => {
  it.each(FAILURES)(
    "%s: the turn finishes on the next model, whose first request carries the conversation so far",
    async (_name, failure, errorClass) => {
      const { llm, run } = await setup(failure);
      const out = await run();
      expect(out.result).toMatchObject({
        status: "completed",
        finalText: "finished on fast",
        resolvedModel: "fake/fast",
      });
      expect(out.result?.attempts).toEqual([
        expect.objectContaining({ model: "fake/flaky", error_class: errorClass, at: expect.any(String) }),
      ]);
      expect(llm.requests.map((r) => r.model)).toEqual(["flaky", "flaky", "fast"]);
      const first = llm.requests[2] as ChatRequest;
      // The conversation so far: the task, the tool call and its result, then the note to go on.
      const users = userTexts(first);
      expect(users[0]).toBe("do the two steps");
      expect(users.at(-1)).toMatch(/fake\/flaky failed with a provider error .*now runs on fake\/fast/);
      const call = first.messages.find((m) => m.role === "assistant" && m.tool_calls);
      expect(JSON.stringify(call?.tool_calls)).toContain("echo step-one");
      expect(String(first.messages.find((m) => m.role === "tool")?.content)).toContain("step-one");
      // The failed answer is not sent: one assistant message, the tool call.
      expect(first.messages.filter((m) => m.role === "assistant")).toHaveLength(1);
      // Nothing done was redone: one tool call in the whole run.
      expect(out.result?.toolCalls).toBe(1);
      expect(out.events.filter((e) => e.type === "run_start")).toHaveLength(2);
    },
  );

  // pi 1.x relays a Retry-After longer than retry.provider.maxRetryDelayMs in its message
  // ("Server requested 30s retry delay"); pi 0.73 never says it (docs/agents.md).
  it.runIf(PI_LINE_NAME === "current")(
    "pi 1.x: a 429's Retry-After, as pi relays it, is the failed model's cool-down",
    async () => {
      const failure = reply.error(429, "Rate limit reached", { headers: { "retry-after": "30" } });
      const { run } = await setup(failure, { enabled: false, provider: { maxRetries: 1, maxRetryDelayMs: 1000 } });
      const out = await run();
      expect(out.result).toMatchObject({ status: "completed", finalText: "finished on fast" });
      expect(out.result?.attempts).toEqual([
        expect.objectContaining({ model: "fake/flaky", error_class: "rate_limit", retry_after_ms: 30_000 }),
      ]);
      expect(out.result?.attempts?.[0]?.message).toMatch(/Server requested 30s retry delay/);
    },
  );

  it("a 400 never switches: the turn fails on its own model", async () => {
    const { llm, run } = await setup(
      reply.error(400, "Invalid request: bad tool schema", { type: "invalid_request_error" }),
    );
    const out = await run();
    expect(out.result).toMatchObject({ status: "failed", stopReason: "error" });
    expect(out.result?.attempts).toEqual([expect.objectContaining({ model: "fake/flaky", error_class: "other" })]);
    expect(llm.requests.map((r) => r.model)).toEqual(["flaky", "flaky"]);
  });
});
