import { describe, expect, it } from "vitest";
import type { ResultV1 } from "../../../../src/contracts/result.js";
import type { AgentRecordV1 } from "../../../../src/contracts/tree.js";
import { parseAgentDefinition } from "../../../../src/extension/roles/agent-definitions.js";
import type { ModelInfo } from "../../../../src/extension/roles/models.js";
import type { Role } from "../../../../src/extension/roles/roles.js";
import { type FallbackInput, resolveFallbacks } from "../../../../src/extension/spawn/fallbacks.js";
import { cooldownsFrom } from "../../../../src/extension/tree/cooldowns.js";
import { modelInUse, turnModelReport, turnModels } from "../../../../src/extension/turns/fallback-turns.js";

const fast: ModelInfo = { provider: "fake", id: "fast", reasoning: true };
const deep: ModelInfo = {
  provider: "fake",
  id: "deep",
  reasoning: true,
  thinkingLevelMap: { minimal: null, low: null, medium: null, high: "high", xhigh: "max" },
};
const dumb: ModelInfo = { provider: "fake", id: "dumb", reasoning: false };
const MODELS = new Map([fast, deep, dumb].map((m) => [`${m.provider}/${m.id}`, m]));

const input = (over: Partial<FallbackInput> = {}): FallbackInput => ({
  param: undefined,
  role: undefined,
  settings: undefined,
  model: fast,
  reasoning: "medium",
  findModel: (ref) => MODELS.get(ref),
  cooling: {},
  ...over,
});
const cooling = { until: "2030-01-01T00:00:00.000Z", error_class: "rate_limit", message: "429" };

describe("spawn's fallback models", () => {
  it("spawn beats definition beats settings, each model at the nearest reasoning level", () => {
    const role = { name: "r", filePath: "/a/r.md", fallbackModels: ["fake/dumb"] } as unknown as Role;
    const spawn = resolveFallbacks(input({ param: ["fake/deep"], role, settings: ["fake/dumb"] }));
    expect(spawn).toEqual({
      ok: true,
      value: expect.objectContaining({ fallbacks: [{ model: "fake/deep", reasoning: "high" }] }),
    });
    const definition = resolveFallbacks(input({ role, settings: ["fake/deep"] }));
    expect(definition.ok && definition.value.fallbacks).toEqual([{ model: "fake/dumb", reasoning: "off" }]);
    const settings = resolveFallbacks(input({ settings: ["fake/deep", "fake/fast", "fake/deep"] }));
    // The child's own model and repeats are left out.
    expect(settings.ok && settings.value.fallbacks).toEqual([{ model: "fake/deep", reasoning: "high" }]);
    expect(resolveFallbacks(input()).ok && resolveFallbacks(input())).toMatchObject({ value: { fallbacks: [] } });
    // [] is "none" over the role's and the settings'; null and "" are "not given".
    expect(resolveFallbacks(input({ param: [], role, settings: ["fake/deep"] }))).toMatchObject({
      value: { fallbacks: [] },
    });
    for (const param of [null, ""])
      expect(resolveFallbacks(input({ param, settings: ["fake/deep"] }))).toMatchObject({
        value: { fallbacks: [{ model: "fake/deep" }] },
      });
  });

  it("an unknown model is a spawn error naming it and where it came from", () => {
    expect(resolveFallbacks(input({ param: ["fake/deep", "fake/nope"] }))).toEqual({
      ok: false,
      error: 'fallback_models: "fake/nope" is not a model you can use (list_models shows them)',
    });
    expect(resolveFallbacks(input({ param: "fake/deep" }))).toMatchObject({
      ok: false,
      error: expect.stringContaining("must be a list"),
    });
    const role = { name: "r", filePath: "/a/r.md", fallbackModels: ["x/y"] } as unknown as Role;
    expect(resolveFallbacks(input({ role }))).toMatchObject({
      error: expect.stringContaining("fallback_models of /a/r.md"),
    });
    expect(resolveFallbacks(input({ settings: ["x/y"] }))).toMatchObject({
      error: expect.stringContaining("subagents.fallback_models"),
    });
  });

  it("a cooling model is skipped: the child starts on the first free fallback, or the spawn fails clearly", () => {
    const skipped = resolveFallbacks(input({ param: ["fake/deep", "fake/dumb"], cooling: { "fake/fast": cooling } }));
    expect(skipped).toMatchObject({
      ok: true,
      value: {
        model: deep,
        reasoning: "high",
        fallbacks: [{ model: "fake/dumb", reasoning: "off" }],
        note: expect.stringContaining("fake/fast is cooling down until 2030-01-01T00:00:00.000Z (rate_limit)"),
      },
    });
    const none = resolveFallbacks(
      input({ param: ["fake/deep"], cooling: { "fake/fast": cooling, "fake/deep": cooling } }),
    );
    expect(none).toEqual({
      ok: false,
      error:
        "model fake/fast is cooling down until 2030-01-01T00:00:00.000Z (rate_limit) and so is every fallback model",
    });
    expect(resolveFallbacks(input({ cooling: { "fake/fast": cooling } }))).toMatchObject({
      error: expect.stringContaining("the spawn names no fallback_models"),
    });
  });

  it("agent definitions read fallback_models as a list or a comma list, and report a bad one with the file's other problems", () => {
    const doc = (fm: string) => `---\nname: r\ndescription: d\n${fm}\n---\nbody\n`;
    const listed = parseAgentDefinition(doc("fallback_models:\n  - fake/deep\n  - fake/dumb"), "/a/r.md", "user");
    expect(listed.ok && listed.definition.fallbackModels).toEqual(["fake/deep", "fake/dumb"]);
    const comma = parseAgentDefinition(doc("fallback_models: fake/deep, fake/dumb"), "/a/r.md", "user");
    expect(comma.ok && comma.definition.fallbackModels).toEqual(["fake/deep", "fake/dumb"]);
    const bad = parseAgentDefinition(doc("fallback_models: deep\nisolation: box"), "/a/r.md", "user");
    expect(bad.ok ? "" : bad.rejected.problem).toBe(
      'isolation "box" must be none or worktree; fallback_models holds "deep", which is not written provider/id',
    );
  });
});

const record = (over: Partial<AgentRecordV1> = {}) =>
  ({
    model: "fake/fast",
    reasoning: "medium",
    fallbacks: [
      { model: "fake/deep", reasoning: "high" },
      { model: "fake/dumb", reasoning: "off" },
    ],
    ...over,
  }) as AgentRecordV1;

describe("a turn's models", () => {
  it("later turns skip a cooling model, keep the others in order, and use them all when every one cools", () => {
    expect(turnModels(record(), {})).toEqual({
      model: "fake/fast",
      thinking: "medium",
      fallbackModels: ["fake/deep", "fake/dumb"],
    });
    expect(turnModels(record(), { "fake/fast": cooling })).toEqual({
      model: "fake/deep",
      thinking: "high",
      fallbackModels: ["fake/dumb"],
    });
    const all = { "fake/fast": cooling, "fake/deep": cooling, "fake/dumb": cooling };
    expect(turnModels(record(), all).model).toBe("fake/fast");
  });

  it("the notice names the model that finished at its level, and those that failed", () => {
    const result = {
      resolvedModel: "fake/deep",
      attempts: [{ model: "fake/fast", error_class: "overloaded", message: "503", at: "2026-01-01T00:00:00Z" }],
    } as ResultV1;
    expect(turnModelReport(record(), result)).toEqual({
      model: "fake/deep",
      reasoning: "high",
      attempts: [{ model: "fake/fast", error_class: "overloaded", message: "503" }],
    });
    expect(turnModelReport(record(), { resolvedModel: "fake/fast" } as ResultV1)).toBeUndefined();
    const many = Array.from({ length: 12 }, (_, i) => ({
      model: `p/m${i}`,
      error_class: "connection",
      message: "x".repeat(300),
      at: "2026-01-01T00:00:00Z",
    }));
    const bounded = turnModelReport(record(), { resolvedModel: "fake/deep", attempts: many } as ResultV1);
    expect(bounded?.attempts.map((a) => a.model)).toEqual(many.slice(-8).map((a) => a.model));
    expect(bounded?.attempts[0]?.message).toHaveLength(160);
    expect(modelInUse(record(), "fake/dumb")).toEqual({ model: "fake/dumb", reasoning: "off" });
    expect(modelInUse(record(), undefined)).toEqual({ model: "fake/fast", reasoning: "medium" });
  });

  it("cool-downs: Retry-After when named, else 60 s for a rate limit and 1 h for a quota; other errors none", () => {
    const at = "2026-01-01T00:00:00.000Z";
    expect(
      cooldownsFrom([
        { model: "a/x", error_class: "rate_limit", message: "429", at, retry_after_ms: 30_000 },
        { model: "b/y", error_class: "rate_limit", message: "429", at },
        { model: "c/z", error_class: "quota", message: "429 quota", at },
        { model: "d/w", error_class: "overloaded", message: "503", at },
      ]),
    ).toEqual({
      "a/x": { until: "2026-01-01T00:00:30.000Z", error_class: "rate_limit", message: "429" },
      "b/y": { until: "2026-01-01T00:01:00.000Z", error_class: "rate_limit", message: "429" },
      "c/z": { until: "2026-01-01T01:00:00.000Z", error_class: "quota", message: "429 quota" },
    });
  });
});
