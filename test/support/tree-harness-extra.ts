/**
 * Vitest helpers for tree scenarios on top of tree-harness.ts: a harness per test, cleaned up
 * after it, and assertions on what the root model received. The runner-free pieces (Program,
 * waitForAll, toolResultFor, …) live in tree-program.ts and are re-exported here for the tests.
 */
import fs from "node:fs";
import path from "node:path";
import { afterEach, expect } from "vitest";
import type { ChatRequest } from "./scripted-llm.js";
import { describePid, startTree, type TreeHarness, type TreeOptions } from "./tree-harness.js";
import { type Json, noticesIn, toolResultFor } from "./tree-program.js";

export * from "./tree-program.js";

/**
 * `tree(opts, modelsFor?)` starts a harness that is cleaned up after each test (call at the top
 * of a test file). `modelsFor` writes models.json once the scripted LLM's URL is known.
 */
export function useTrees(): (opts: TreeOptions, modelsFor?: (url: string) => unknown) => Promise<TreeHarness> {
  let harnesses: TreeHarness[] = [];
  afterEach(async () => {
    for (const h of harnesses.reverse()) await h.cleanup();
    harnesses = [];
  });
  return async (opts, modelsFor) => {
    const h = await startTree(opts);
    harnesses.push(h);
    if (modelsFor) fs.writeFileSync(path.join(h.home.dir, "models.json"), JSON.stringify(modelsFor(h.llm.url)));
    return h;
  };
}

export async function expectNoSurvivors(h: TreeHarness): Promise<void> {
  const alive = await h.survivors();
  expect(alive.map(describePid)).toEqual([]);
}

export function expectCleanExit(run: { code: number | null; timedOut: boolean; stderr: string }): void {
  expect(run.timedOut, run.stderr.slice(-2000)).toBe(false);
  expect(run.code, run.stderr.slice(-2000)).toBe(0);
}

export function lastRootRequest(h: TreeHarness): ChatRequest {
  return h.requestsOf("/root").at(-1)!;
}

/** The conversation of `req` from its last user message on (one pi process's own turn). */
export function sinceLastPrompt(req: ChatRequest): ChatRequest {
  const users = req.messages.flatMap((m, i) => (m.role === "user" ? [i] : []));
  return { ...req, messages: req.messages.slice(users.at(-1) ?? 0) };
}

/** The one JSON result of the root's `name` call whose arguments match `args`. */
export function rootResult(h: TreeHarness, name: string, args: Json = {}, req = lastRootRequest(h)): Json {
  return JSON.parse(rootText(h, name, args, req)) as Json;
}

/** The raw text the root model got for its one `name` call matching `args` (a tool error is its message). */
export function rootText(h: TreeHarness, name: string, args: Json = {}, req = lastRootRequest(h)): string {
  const texts = toolResultFor(req, name, args);
  expect(texts, `${name} ${JSON.stringify(args)}`).toHaveLength(1);
  return texts[0]!;
}

/** Every notice wait_agent returned to the root in `req`'s conversation, in order. */
export function allNotices(h: TreeHarness, req = lastRootRequest(h)): Json[] {
  return noticesIn(req);
}

/** The tree's dialog log (dialogs.jsonl), one record per line. */
export function dialogRecords(h: TreeHarness): Json[] {
  return fs
    .readFileSync(path.join(h.treeDir(), "dialogs.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Json);
}

/** `agents` of the root's latest list_agents result. */
export function lastList(h: TreeHarness, req = lastRootRequest(h)): Json[] {
  const lists = toolResultFor(req, "list_agents");
  return (JSON.parse(lists.at(-1)!) as Json).agents as Json[];
}
