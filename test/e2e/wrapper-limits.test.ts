/**
 * Limits with the REAL pi of the line under test against the scripted LLM: the
 * wrapper counts the child's requests, tokens, cost and time from its stream; at a limit the
 * wrap-up message reaches the child as a steering message, so the model sees it in its next
 * request; an answer in the grace ends the run `completed`, none ends it `interrupted` with
 * the process gone. result.json carries `limit` either way.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fakeModels, makePiHome, type PiHomeOptions } from "../support/pi-home.js";
import { killAll, waitForPidExit } from "../support/processes.js";
import { type ChatRequest, reply, startScriptedLlm, userTexts } from "../support/scripted-llm.js";
import { cleanupWrapperCases, defaultMeta, wrapperCase } from "../support/wrapper-harness.js";

let cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  await killAll();
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
  await cleanupWrapperCases();
});

async function setup(
  limits: Record<string, number>,
  homeOptions: (llmUrl: string) => Omit<PiHomeOptions, "llmUrl"> = () => ({}),
) {
  const llm = await startScriptedLlm();
  cleanups.push(() => llm.close());
  const home = await makePiHome({ llmUrl: llm.url, ...homeOptions(llm.url) });
  cleanups.push(() => home.cleanup());
  // No inboxPath: the wrapper makes a private inbox for the wrap-up (a script's run).
  const wrapper = await wrapperCase({ meta: defaultMeta({ graceMs: 5000, limits }) });
  return { llm, home, run: () => wrapper.run({ env: home.env }) };
}

/** A tool call that takes long enough for the wrap-up to be handed to pi before its next request. */
const work = (n: number, seconds = 0.5) =>
  reply.toolCall("bash", { command: `sleep ${seconds}; echo step-${n}` }, { text: `step ${n}` });

const wrapUpIn = (request: ChatRequest | undefined) =>
  request ? userTexts(request).filter((text) => text.startsWith("[LIMIT ")) : [];

const runStartPid = async (dir: string): Promise<number> => {
  const first = (await readFile(path.join(dir, "out/events.jsonl"), "utf8")).split("\n")[0]!;
  return (JSON.parse(first) as { pid: number }).pid;
};

describe("subagent-wrapper limits with the real pi", () => {
  it("max_turns: a child that keeps calling tools gets the wrap-up in its next request, answers, and the run is completed with limit", async () => {
    const { llm, run } = await setup({ max_turns: 2 });
    llm.script([work(1), work(2), reply.text("Done: steps 1-2. Left: step 3. Files: untouched.")]);
    const out = await run();
    expect(out.result).toMatchObject({
      status: "completed",
      finalText: "Done: steps 1-2. Left: step 3. Files: untouched.",
      limit: { name: "max_turns", value: 2, used: 2 },
      forcedExit: false,
    });
    expect(llm.requests).toHaveLength(3);
    expect(wrapUpIn(llm.requests[1])).toEqual([]);
    const [wrapUp] = wrapUpIn(llm.requests[2]);
    expect(wrapUp).toMatch(/^\[LIMIT max_turns\] This turn has reached its limit: 2 of 2 model requests\./);
    expect(wrapUp).toContain("Finish the tool call under way, start nothing new");
    expect(out.events.map((e) => e.type)).toContain("message_delivered");
  });

  it("a child that ignores the wrap-up is stopped after the grace: interrupted, its last text kept, limit kept, pi gone", async () => {
    const { llm, run } = await setup({ max_turns: 1, grace_turns: 1 });
    llm.script([work(1), reply.toolCall("bash", { command: "sleep 30" }, { text: "ignoring the limit" })]);
    const out = await run();
    expect(out.result).toMatchObject({
      status: "interrupted",
      finalText: "ignoring the limit",
      limit: { name: "max_turns", value: 1, used: 1 },
      forcedExit: true,
    });
    expect(out.result?.errorMessage).toContain("no answer within the grace of 1 model request");
    expect(wrapUpIn(llm.requests[1])).toHaveLength(1);
    expect(llm.requests).toHaveLength(2);
    // Stopped at once, not after the 30 s tool.
    expect(out.durationMs).toBeLessThan(20_000);
    await waitForPidExit(await runStartPid(out.dir), 5000);
  });

  it("max_tokens: input + output as usage counts them", async () => {
    const { llm, run } = await setup({ max_tokens: 20 });
    // 10 in + 5 out a request: reached at the second.
    llm.script([work(1, 0), work(2), reply.text("wrapped up")]);
    const out = await run();
    expect(out.result).toMatchObject({
      status: "completed",
      finalText: "wrapped up",
      limit: { name: "max_tokens", value: 20, used: 30 },
    });
    expect(wrapUpIn(llm.requests[2])).toHaveLength(1);
  });

  it("max_cost: USD from pi's usage cost", async () => {
    // pi prices the model from models.json ($ per million tokens): 15 tokens × $1 000/M = $0.015 a request.
    const priced = (llmUrl: string) => {
      const models = fakeModels(llmUrl) as { providers: { fake: { models: object[] } } };
      models.providers.fake.models = [
        { id: "fast", reasoning: true, cost: { input: 1000, output: 1000, cacheRead: 0, cacheWrite: 0 } },
      ];
      return { models };
    };
    const { llm, run } = await setup({ max_cost: 0.02 }, priced);
    llm.script([work(1, 0), work(2), reply.text("wrapped up on cost")]);
    const out = await run();
    expect(out.result).toMatchObject({
      status: "completed",
      finalText: "wrapped up on cost",
      limit: { name: "max_cost", value: 0.02, used: 0.03 },
    });
    expect(wrapUpIn(llm.requests[2])).toHaveLength(1);
  });

  it("time_limit: reached while a tool runs, the wrap-up is in the request after it", async () => {
    const { llm, run } = await setup({ time_limit: 1 });
    llm.script([work(1, 3), reply.text("out of time: did step 1")]);
    const out = await run();
    expect(out.result).toMatchObject({
      status: "completed",
      finalText: "out of time: did step 1",
      limit: { name: "time_limit", value: 1 },
    });
    expect(wrapUpIn(llm.requests[1])).toHaveLength(1);
  });
});
