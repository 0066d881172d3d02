/**
 * Scope matching against pi's own: every pattern of the table, over the same models, must
 * select what pi 0.73.1's `resolveModelScope` selects, in the same order. pi does not export
 * that function from its package entry, so it is loaded from the installed dist; the globs
 * are also checked against minimatch with pi's options, the matcher pi uses for them.
 */
import path from "node:path";
import { pathToFileURL } from "node:url";
import { minimatch } from "minimatch";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { globMatches, type ModelInfo, modelRef, resolveScope } from "../../../src/extension/roles/models.js";
import { REPO_ROOT } from "../../support/pi-home.js";

type PiResolve = (patterns: string[], registry: { getAvailable(): Promise<ModelInfo[]> }) => Promise<Array<{ model: ModelInfo }>>;

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
  const file = path.join(REPO_ROOT, "node_modules", "@mariozechner", "pi-coding-agent", "dist", "core", "model-resolver.js");
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

  it.each(PATTERNS.filter((pattern) => /[*?[]/.test(pattern) && !pattern.includes(":")))("%s matches as minimatch with pi's options", (glob) => {
    for (const model of MODELS) {
      const expected = minimatch(`${model.provider}/${model.id}`, glob, { nocase: true }) || minimatch(model.id, glob, { nocase: true });
      expect(globMatches(model, glob), `${modelRef(model)} ~ ${glob}`).toBe(expected);
    }
  });
});
