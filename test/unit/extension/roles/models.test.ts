import { describe, expect, it } from "vitest";
import {
  clampLevel,
  isThinkingLevel,
  listModels,
  type ModelInfo,
  modelRef,
  parseModelRef,
  resolveScope,
  scopePatterns,
  supportedLevels,
} from "../../../../src/extension/roles/models.js";

const plain: ModelInfo = { provider: "fake", id: "fast", reasoning: true, contextWindow: 128_000 };
const noReasoning: ModelInfo = { provider: "fake", id: "dumb", reasoning: false };
// Like DeepSeek V4 Flash: only high and max (mapped from xhigh).
const deep: ModelInfo = {
  provider: "fake",
  id: "deep",
  reasoning: true,
  thinkingLevelMap: { minimal: null, low: null, medium: null, high: "high", xhigh: "max" },
};
const withXhigh: ModelInfo = { provider: "openai", id: "gpt-x", reasoning: true, thinkingLevelMap: { xhigh: "xhigh" } };
// pi 1.x's `max`, mapped explicitly.
const withMax: ModelInfo = {
  provider: "openai",
  id: "gpt-max",
  reasoning: true,
  thinkingLevelMap: { xhigh: "xhigh", max: "max" },
};
const noOff: ModelInfo = {
  provider: "p",
  id: "always-thinks",
  reasoning: true,
  thinkingLevelMap: { off: null, minimal: null },
};
const onlyLow: ModelInfo = {
  provider: "p",
  id: "low-only",
  reasoning: true,
  thinkingLevelMap: { off: null, minimal: null, medium: null, high: null },
};

describe("model references", () => {
  it("writes provider/id", () => {
    expect(modelRef(plain)).toBe("fake/fast");
  });

  it.each([
    ["fake/fast", { provider: "fake", id: "fast" }],
    ["openrouter/openai/gpt-5", { provider: "openrouter", id: "openai/gpt-5" }],
    ["fast", undefined],
    ["/fast", undefined],
    ["fake/", undefined],
    ["", undefined],
  ])("parseModelRef(%j)", (ref, expected) => {
    expect(parseModelRef(ref)).toEqual(expected);
  });

  it.each([
    ["off", true],
    ["xhigh", true],
    ["max", true],
    ["maximum", false],
    ["High", false],
    ["", false],
    [3, false],
  ])("isThinkingLevel(%j) → %s", (value, ok) => {
    expect(isThinkingLevel(value)).toBe(ok);
  });
});

describe("supportedLevels (pi-ai getSupportedThinkingLevels)", () => {
  it.each([
    ["a non-reasoning model", noReasoning, ["off"]],
    ["a reasoning model without a map (no xhigh)", plain, ["off", "minimal", "low", "medium", "high"]],
    ["null entries are unsupported; xhigh mapped explicitly counts", deep, ["off", "high", "xhigh"]],
    ["xhigh in the map", withXhigh, ["off", "minimal", "low", "medium", "high", "xhigh"]],
    ["max only when mapped explicitly (pi 1.x)", withMax, ["off", "minimal", "low", "medium", "high", "xhigh", "max"]],
    ["off can be unsupported too", noOff, ["low", "medium", "high"]],
  ])("%s", (_label, model, levels) => {
    expect(supportedLevels(model)).toEqual(levels);
  });

  it("ignores a non-reasoning model's map", () => {
    expect(supportedLevels({ ...withXhigh, reasoning: false })).toEqual(["off"]);
  });
});

describe("clampLevel (pi-ai clampThinkingLevel: upward first, then downward)", () => {
  it.each([
    [plain, "medium", "medium"],
    [plain, "xhigh", "high"],
    [noReasoning, "high", "off"],
    [deep, "low", "high"],
    [deep, "minimal", "high"],
    [deep, "off", "off"],
    [deep, "xhigh", "xhigh"],
    [noOff, "off", "low"],
    [onlyLow, "xhigh", "low"],
    [onlyLow, "high", "low"],
    [onlyLow, "off", "low"],
    [plain, "max", "high"],
    [withXhigh, "max", "xhigh"],
    [withMax, "max", "max"],
    [deep, "max", "xhigh"],
  ] as const)("%#: %j at %s → %s", (model, level, expected) => {
    expect(clampLevel(model, level)).toBe(expected);
  });
});

describe("scopePatterns", () => {
  const node = ["/usr/bin/node", "/usr/lib/pi/cli.js"];
  it.each([
    ["--models a,b", [...node, "--models", "a, b"], {}, ["a", "b"]],
    ["--models=a,b", [...node, "--models=a,b"], {}, ["a", "b"]],
    ["the last --models wins", [...node, "--models", "a", "-p", "hi", "--models", "c"], {}, ["c"]],
    ["command line before settings", [...node, "--models", "a"], { enabledModels: ["s"] }, ["a"]],
    ["settings enabledModels", node, { enabledModels: ["anthropic/*", "gpt-5"] }, ["anthropic/*", "gpt-5"]],
    ["no scope", node, {}, undefined],
    ["an empty enabledModels is no scope", node, { enabledModels: [] }, undefined],
    ["enabledModels of the wrong type", node, { enabledModels: "gpt" }, undefined],
    ["non-string entries are skipped", node, { enabledModels: ["a", 3] }, ["a"]],
    ["--models without a value", [...node, "--models"], { enabledModels: ["s"] }, ["s"]],
    ["a value of another option is not the flag", [...node, "--session", "--models", "x"], {}, undefined],
  ])("%s", (_label, argv, settings, expected) => {
    expect(scopePatterns(argv, settings)).toEqual(expected);
  });
});

// Expected values match pi 0.73.1's own resolveModelScope (models-parity.test.ts checks more against it).
describe("scope matching (pi's resolveModelScope)", () => {
  const m = (provider: string, id: string, name?: string): ModelInfo => ({ provider, id, name, reasoning: true });
  const sonnet = m("anthropic", "claude-sonnet-4-5", "Claude Sonnet 4.5");
  const sonnetDated = m("anthropic", "claude-sonnet-4-5-20250929");
  const opus = m("anthropic", "claude-opus-4-7");
  const gpt = m("openai", "gpt-5.4");
  const routed = m("openrouter", "openai/gpt-5.4");
  const flash = m("deepseek", "deepseek-v4-flash");
  const flash2 = m("deepseek-responses", "deepseek-v4-flash");
  const all = [sonnet, sonnetDated, opus, gpt, routed, flash, flash2];
  const refs = (patterns: string[]): string[] => resolveScope(all, patterns).map(modelRef);

  it.each([
    ["exact provider/id", ["openai/gpt-5.4"], ["openai/gpt-5.4"]],
    ["case-insensitive", ["OpenAI/GPT-5.4"], ["openai/gpt-5.4"]],
    ["an id with a slash, canonically", ["openrouter/openai/gpt-5.4"], ["openrouter/openai/gpt-5.4"]],
    ["a unique bare id", ["claude-opus-4-7"], ["anthropic/claude-opus-4-7"]],
    ["an ambiguous bare id picks one substring match", ["deepseek-v4-flash"], ["deepseek/deepseek-v4-flash"]],
    ["a substring picks the alias over the dated id", ["sonnet"], ["anthropic/claude-sonnet-4-5"]],
    ["a substring of the display name", ["Sonnet 4.5"], ["anthropic/claude-sonnet-4-5"]],
    ["a thinking suffix is ignored", ["openai/gpt-5.4:high"], ["openai/gpt-5.4"]],
    ["an invalid suffix is peeled off too", ["openai/gpt-5.4:turbo"], ["openai/gpt-5.4"]],
    [
      "a glob over provider/id",
      ["anthropic/*"],
      ["anthropic/claude-sonnet-4-5", "anthropic/claude-sonnet-4-5-20250929", "anthropic/claude-opus-4-7"],
    ],
    ["a glob over the bare id", ["*flash"], ["deepseek/deepseek-v4-flash", "deepseek-responses/deepseek-v4-flash"]],
    // The bare id of the OpenRouter model is openai/gpt-5.4, so `openai/*` selects it too.
    ["a glob with a thinking suffix", ["openai/*:low"], ["openai/gpt-5.4", "openrouter/openai/gpt-5.4"]],
    ["* stays within one segment (as minimatch)", ["openrouter/*"], []],
    ["** crosses segments", ["openrouter/**"], ["openrouter/openai/gpt-5.4"]],
    ["? and classes", ["gpt-5.?", "deepseek-[rx]*/*"], ["openai/gpt-5.4", "deepseek-responses/deepseek-v4-flash"]],
    ["case-insensitive globs", ["ANTHROPIC/*OPUS*"], ["anthropic/claude-opus-4-7"]],
    [
      "pattern order, no duplicates",
      ["gpt-5.4", "openai/*", "claude-opus-4-7"],
      ["openai/gpt-5.4", "openrouter/openai/gpt-5.4", "anthropic/claude-opus-4-7"],
    ],
    [
      "a negated class",
      ["[!a]*/*"],
      [
        "openai/gpt-5.4",
        "openrouter/openai/gpt-5.4",
        "deepseek/deepseek-v4-flash",
        "deepseek-responses/deepseek-v4-flash",
      ],
    ],
    ["no match", ["llama"], []],
  ])("%s", (_label, patterns, expected) => {
    expect(refs(patterns)).toEqual(expected);
  });

  it("a substring pattern picks one model among the available, any model that contains it when alone", () => {
    expect(resolveScope(all, ["sonnet"])).not.toContainEqual(sonnetDated);
    expect(resolveScope([sonnetDated], ["sonnet"])).toEqual([sonnetDated]);
    expect(resolveScope([flash2], ["deepseek/deepseek-v4-flash"])).toEqual([]);
    expect(resolveScope([flash2], ["*/deepseek-v4-flash"])).toEqual([flash2]);
    expect(resolveScope([gpt], ["gpt-5.4:xhigh"])).toEqual([gpt]);
    expect(resolveScope([gpt], [])).toEqual([]);
  });
});

describe("listModels", () => {
  const available = [plain, deep, noReasoning];

  it("lists every available model without a scope", () => {
    expect(listModels(available, undefined)).toEqual({
      models: [
        { model: "fake/fast", reasoning_levels: ["off", "minimal", "low", "medium", "high"], context_window: 128_000 },
        { model: "fake/deep", reasoning_levels: ["off", "high", "xhigh"], context_window: null },
        { model: "fake/dumb", reasoning_levels: ["off"], context_window: null },
      ],
    });
  });

  it("lists only scoped models, marked scoped", () => {
    expect(listModels(available, ["fake/deep", "dumb"])).toEqual({
      models: [
        { model: "fake/deep", reasoning_levels: ["off", "high", "xhigh"], context_window: null },
        { model: "fake/dumb", reasoning_levels: ["off"], context_window: null },
      ],
      scoped: true,
    });
  });

  it("treats a scope that matches nothing (or no pattern) as no scope, as pi does", () => {
    expect(listModels(available, ["nothing-like-this"]).scoped).toBeUndefined();
    expect(listModels(available, ["nothing-like-this"]).models).toHaveLength(3);
    expect(listModels(available, []).scoped).toBeUndefined();
  });
});
