/**
 * Fallback models through the tree, real pi and scripted LLM: a child whose model
 * answers 429 finishes on its fallback; the notice names both; the failed model cools down, so
 * list_agents shows the model in use, list_models shows the cooling one, and a spawn that names only it is refused.
 */
import { describe, expect, it } from "vitest";
import { type ChatRequest, reply } from "../support/scripted-llm.js";
import { expectCleanExit, rootResult, rootText, useTrees } from "../support/tree-harness-extra.js";

const tree = useTrees();

describe("fallback models in a tree", () => {
  it("a child's 429 moves it to its fallback; the notice names both; the failed model cools down for the tree", async () => {
    const child = (req: ChatRequest) =>
      req.model === "deep" ? reply.error(429, "Rate limit reached") : reply.text("child done on fast");
    const h = await tree({
      scripts: {
        "/root": [
          reply.toolCall("spawn_agent", {
            task_name: "worker",
            message: "do the work",
            fork_turns: "none",
            model: "fake/deep",
            fallback_models: ["fake/fast"],
          }),
          reply.toolCall("wait_agent", { timeout_ms: 60_000 }),
          reply.toolCall("list_agents", {}),
          reply.toolCall("list_models", {}),
          reply.toolCall("spawn_agent", {
            task_name: "again",
            message: "more",
            fork_turns: "none",
            model: "fake/deep",
          }),
          reply.toolCall("spawn_agent", {
            task_name: "bad",
            message: "x",
            fork_turns: "none",
            fallback_models: ["fake/nope"],
          }),
          reply.text("ROOT DONE"),
        ],
        "/root/worker": [child, child],
      },
    });
    expectCleanExit(await h.runRoot("delegate", { timeoutMs: 120_000 }));

    expect(rootResult(h, "spawn_agent", { task_name: "worker" })).toMatchObject({
      model: "fake/deep",
      reasoning: "high",
    });
    const waited = JSON.stringify(rootResult(h, "wait_agent", { timeout_ms: 60_000 }));
    expect(waited).toContain('"model":"fake/fast"');
    expect(waited).toContain('"attempts":[{"model":"fake/deep","error_class":"rate_limit"');
    expect(waited).toContain("child done on fast");
    // The fallback's first request carried the task the failed model had.
    expect(JSON.stringify(h.requestsOf("/root/worker").map((r) => r.model))).toBe('["deep","fast"]');
    expect(JSON.stringify(h.requestsOf("/root/worker")[1]?.messages)).toContain("do the work");

    // list_agents shows the model in use: the fallback its turn finished on.
    expect(rootResult(h, "list_agents")).toMatchObject({
      agents: [{ agent_name: "/root/worker", model: "fake/fast", reasoning: "high" }],
    });

    const models = rootResult(h, "list_models") as { models: Array<{ model: string; cooling_until?: string }> };
    const deep = models.models.find((m) => m.model === "fake/deep");
    expect(Date.parse(String(deep?.cooling_until))).toBeGreaterThan(Date.now());
    expect(models.models.find((m) => m.model === "fake/fast")?.cooling_until).toBeUndefined();

    expect(rootText(h, "spawn_agent", { task_name: "again" })).toMatch(
      /model fake\/deep is cooling down until .* \(rate_limit\) and the spawn names no fallback_models/,
    );
    expect(rootText(h, "spawn_agent", { task_name: "bad" })).toContain(
      'fallback_models: "fake/nope" is not a model you can use',
    );
    const records = await h.readRecords();
    expect(records.find((r) => r.path === "/root/worker")?.fallbacks).toEqual([
      { model: "fake/fast", reasoning: "high" },
    ]);
  });
});
