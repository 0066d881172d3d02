/**
 * What the nine coordination tools cost every model request of every agent that loads the
 * extension: their names, descriptions and parameter schemas, as pi sends them to the
 * OpenAI-compatible server. Measured on the request body the scripted server received (so
 * whatever pi adds or changes on the way counts), with the built-in roles only.
 */
import { describe, expect, it } from "vitest";
import { COORDINATION_TOOLS } from "../../src/extension/roles/tool-names.js";
import { reply } from "../support/scripted-llm.js";
import { expectCleanExit, useTrees } from "../support/tree-harness-extra.js";

/**
 * The nine tools together, in characters of `JSON.stringify` of their `tools` entries: what
 * each of the agents' model requests pays for them, kept small on purpose (one short sentence
 * per parameter).
 */
const TOOLS_CHARS_BOUND = 5500;

const tree = useTrees();

describe("the coordination tools in a model request", () => {
  it(`take at most ${TOOLS_CHARS_BOUND} characters of the request body together`, async () => {
    const h = await tree({ scripts: { "/root": [reply.text("ROOT DONE")] } });
    expectCleanExit(await h.runRoot("hi"));
    const [request] = h.requestsOf("/root");
    const entries = (request?.tools ?? []).filter((entry) => COORDINATION_TOOLS.has(entry.function.name));
    expect(entries.map((entry) => entry.function.name).sort()).toEqual([...COORDINATION_TOOLS].sort());

    const sizes = Object.fromEntries(entries.map((entry) => [entry.function.name, JSON.stringify(entry).length]));
    const total = Object.values(sizes).reduce((sum, size) => sum + size, 0);
    const figures = `${total} characters: ${Object.entries(sizes)
      .sort(([, a], [, b]) => b - a)
      .map(([name, size]) => `${name} ${size}`)
      .join(", ")}`;
    console.log(`coordination tools in the request body: ${figures}`);
    expect(total, figures).toBeLessThanOrEqual(TOOLS_CHARS_BOUND);
  });
});
