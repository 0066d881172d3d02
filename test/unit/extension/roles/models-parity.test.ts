/**
 * Scope matching against pi's own: every pattern of the table, over the same models, must
 * select what pi 0.73.1's `resolveModelScope` selects, in the same order (and what pi 1.x's
 * `resolveModelScopeFromModels` selects, but for one documented difference). pi does not
 * export those functions from its package entry, so they are loaded from the installed dist;
 * the globs are also checked against minimatch with pi's options, the matcher pi uses for
 * them. Thinking levels are checked against the pi-ai of the line under test.
 */
import path from "node:path";
import { pathToFileURL } from "node:url";
import { minimatch } from "minimatch";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { THINKING_LEVELS } from "../../../../src/contracts/meta.js";
import {
  clampLevel,
  globMatches,
  type ModelInfo,
  modelRef,
  resolveScope,
  supportedLevels,
} from "../../../../src/extension/roles/models.js";
import { PI_LINE_NAME, REPO_ROOT } from "../../../support/pi-home.js";

type PiResolve = (
  patterns: string[],
  registry: { getAvailable(): Promise<ModelInfo[]> },
) => Promise<Array<{ model: ModelInfo }>>;

const m = (provider: string, id: string, name?: string): ModelInfo => ({ provider, id, name, reasoning: true });
const MODELS = [
  m("anthropic", "claude-sonnet-4-5", "Claude Sonnet 4.5"),
  m("anthropic", "claude-sonnet-4-5-20250929"),
  m("anthropic", "claude-opus-4-7", "Claude Opus 4.7"),
  m("openai", "gpt-5.4"),
  m("openai", "gpt-5"),
  m("openrouter", "openai/gpt-5.4"),
  m("openrouter", "qwen/qwen3:exacto"),
  m("deepseek", "deepseek-v4-flash"),
  m("deepseek-responses", "deepseek-v4-flash"),
  m("google", "gemini-2.5-pro"),
];

const PATTERNS = [
  "*sonnet*",
  "anthropic/*",
  "ANTHROPIC/*OPUS*",
  "*/gpt-5*",
  "gpt-?",
  "gpt-5.?",
  "claude-[os]*",
  "claude-[!o]*",
  "[!a]*/*",
  "deepseek-[rx]*/*",
  "openrouter/*",
  "openrouter/**",
  "**",
  "*",
  "{openai,google}/*",
  "*-{pro,flash}",
  "+(gpt|gemini)-*",
  "!(gpt)*",
  "openai/*:low",
  "*:high",
  "*:exacto",
  "qwen/*",
  "[",
  "gpt-5[",
  "*\\*",
  "sonnet",
  "Sonnet 4.5",
  "openai/gpt-5.4:high",
  "gpt-5.4:turbo",
  "deepseek-v4-flash",
  "openrouter/openai/gpt-5.4",
  "llama",
];

let piResolve: PiResolve;

beforeAll(async () => {
  const file = path.join(
    REPO_ROOT,
    "node_modules",
    "pi-coding-agent-0.73", // @mariozechner/pi-coding-agent 0.73.1, under its npm alias (scripts/pi-lines.mjs)
    "dist",
    "core",
    "model-resolver.js",
  );
  piResolve = ((await import(pathToFileURL(file).href)) as { resolveModelScope: PiResolve }).resolveModelScope;
  // pi warns on stderr for every pattern that matches nothing.
  vi.spyOn(console, "warn").mockImplementation(() => undefined);
});

afterAll(() => {
  vi.restoreAllMocks();
});

describe("scope matching is pi's", () => {
  it.each(PATTERNS)("%s selects what pi's resolveModelScope selects", async (pattern) => {
    const pi = await piResolve([pattern], { getAvailable: async () => MODELS });
    expect(resolveScope(MODELS, [pattern]).map(modelRef)).toEqual(pi.map(({ model }) => modelRef(model)));
  });

  it("several patterns: pattern order, no duplicates, as pi", async () => {
    const patterns = ["gpt-5.4", "openai/*", "*sonnet*", "claude-opus-4-7", "anthropic/*"];
    const pi = await piResolve(patterns, { getAvailable: async () => MODELS });
    expect(resolveScope(MODELS, patterns).map(modelRef)).toEqual(pi.map(({ model }) => modelRef(model)));
  });

  it.each(PATTERNS.filter((pattern) => /[*?[]/.test(pattern) && !pattern.includes(":")))(
    "%s matches as minimatch with pi's options",
    (glob) => {
      for (const model of MODELS) {
        const expected =
          minimatch(`${model.provider}/${model.id}`, glob, { nocase: true }) ||
          minimatch(model.id, glob, { nocase: true });
        expect(globMatches(model, glob), `${modelRef(model)} ~ ${glob}`).toBe(expected);
      }
    },
  );
});

// pi 1.x's modules need Node 22: this part runs on the current line only.
describe.skipIf(PI_LINE_NAME !== "current")("scope matching on pi 1.x", () => {
  type PiResolveFromModels = (patterns: string[], models: ModelInfo[]) => { scopedModels: Array<{ model: ModelInfo }> };
  let resolve1x: PiResolveFromModels;
  beforeAll(async () => {
    const file = path.join(
      REPO_ROOT,
      "node_modules",
      "@earendil-works",
      "pi-coding-agent",
      "dist",
      "core",
      "model-resolver.js",
    );
    resolve1x = ((await import(pathToFileURL(file).href)) as { resolveModelScopeFromModels: PiResolveFromModels })
      .resolveModelScopeFromModels;
  });
  const select = (patterns: string[]) => resolve1x(patterns, MODELS).scopedModels.map(({ model }) => modelRef(model));

  it.each(PATTERNS.filter((pattern) => pattern !== "deepseek-v4-flash"))(
    "%s selects what pi 1.x selects",
    (pattern) => {
      expect(resolveScope(MODELS, [pattern]).map(modelRef)).toEqual(select([pattern]));
    },
  );

  it.skipIf(PI_LINE_NAME !== "current")(
    "the one difference: an id two providers share, named bare, is both on pi 1.x and the first on 0.73.1 (as here)",
    () => {
      expect(select(["deepseek-v4-flash"])).toEqual([
        "deepseek/deepseek-v4-flash",
        "deepseek-responses/deepseek-v4-flash",
      ]);
      expect(resolveScope(MODELS, ["deepseek-v4-flash"]).map(modelRef)).toEqual(["deepseek/deepseek-v4-flash"]);
    },
  );
});

describe(`thinking levels are pi-ai's (${PI_LINE_NAME} line)`, () => {
  type PiAi = {
    getSupportedThinkingLevels(m: ModelInfo): string[];
    clampThinkingLevel(m: ModelInfo, level: string): string;
  };
  let piAi: PiAi;
  beforeAll(async () => {
    const scope = PI_LINE_NAME === "current" ? "@earendil-works" : "@mariozechner";
    piAi = (await import(
      pathToFileURL(path.join(REPO_ROOT, "node_modules", scope, "pi-ai", "dist", "models.js")).href
    )) as PiAi;
  });
  const LEVEL_MODELS: ModelInfo[] = [
    { provider: "p", id: "plain", reasoning: true },
    { provider: "p", id: "none", reasoning: false },
    {
      provider: "p",
      id: "deep",
      reasoning: true,
      thinkingLevelMap: { minimal: null, low: null, medium: null, high: "high", xhigh: "max" },
    },
    { provider: "p", id: "xhigh", reasoning: true, thinkingLevelMap: { xhigh: "xhigh" } },
    { provider: "p", id: "no-off", reasoning: true, thinkingLevelMap: { off: null, minimal: null } },
    // A model that maps pi 1.x's `max` exists only on 1.x.
    ...(PI_LINE_NAME === "current"
      ? [{ provider: "p", id: "max", reasoning: true, thinkingLevelMap: { xhigh: "xhigh", max: "max" } }]
      : []),
  ];
  // pi 0.73.1 never gives `max` (its --thinking refuses it), so it is asked only of 1.x.
  const levels = THINKING_LEVELS.filter((level) => PI_LINE_NAME === "current" || level !== "max");

  it.each(LEVEL_MODELS.map((model) => [model.id, model] as const))(
    "%s: the supported levels and every clamp",
    (_id, model) => {
      expect(supportedLevels(model)).toEqual(piAi.getSupportedThinkingLevels(model));
      for (const level of levels) expect(clampLevel(model, level), level).toBe(piAi.clampThinkingLevel(model, level));
    },
  );
});
