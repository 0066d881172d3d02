/**
 * What every pi that loads the extension evaluates at its start — every child's pi among them,
 * though most children never delegate: the static imports of dist/extension/index.js, followed
 * file by file (dynamic import() is left out: it runs when first used). pi loads an extension
 * through jiti with its module cache off, so a package that pi itself has loaded already
 * (TypeBox) is evaluated a second time when the extension imports it at start, and so is each
 * of the extension's own modules. And when a child's pi starts the tree's machinery: only when
 * its own children left something to take back, else at its first tool call.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import piSubagentTree from "../../../src/extension/index.js";
import { loadPart } from "../../../src/extension/tools/common.js";
import { REPO_ROOT } from "../../support/pi-home.js";
import { agentRecord } from "../../support/records.js";

const ENTRY = path.join(REPO_ROOT, "dist", "extension", "index.js");

/** The files and packages reached from `entry` through static imports and re-exports. */
function staticGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const text = fs.readFileSync(file, "utf8");
    for (const [, spec] of text.matchAll(/^\s*(?:import|export)\s(?:[^"';]*?\sfrom\s)?["']([^"']+)["']/gm)) {
      if (spec!.startsWith(".")) visit(path.resolve(path.dirname(file), spec!));
      else if (!spec!.startsWith("node:")) packages.add(spec!);
    }
  };
  visit(entry);
  return { files, packages };
}

/** The relative modules `file` imports with import(), resolved. */
function dynamicImports(file: string): string[] {
  return [...fs.readFileSync(file, "utf8").matchAll(/\bimport\(\s*["'](\.[^"']+)["']\s*\)/g)].map(([, spec]) =>
    path.resolve(path.dirname(file), spec!),
  );
}

/** Every compiled module of the extension. */
function extensionModules(dir = path.dirname(ENTRY)): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return extensionModules(file);
    return file.endsWith(".js") ? [file] : [];
  });
}

/** pi's own packages, under the names the extension imports them by. */
const PI_PACKAGE = /^@(mariozechner|earendil-works)\//;
const reachesPi = (file: string) => [...staticGraph(file).packages].some((name) => PI_PACKAGE.test(name));

/**
 * At most this many modules at load (45 today, from 136 when the whole tree loaded): the tools'
 * definitions, the session's light hooks and the contracts they name. A module more or less is
 * fine; the tree's machinery coming back is not.
 */
const MAX_MODULES_AT_LOAD = 55;

describe("what the extension loads at start", () => {
  const graph = staticGraph(ENTRY);
  const extensionFiles = [...graph.files].map((file) => path.relative(path.dirname(ENTRY), file));

  it("does not import TypeBox: the tools' schemas are plain JSON Schema objects", () => {
    expect([...graph.packages]).not.toContain("typebox");
  });

  it("leaves the terminal UI library and the root's UI modules to the root: a child's pi draws nothing", () => {
    expect([...graph.packages]).not.toContain("@mariozechner/pi-tui");
    const ui = extensionFiles.filter((f) => f.startsWith("ui"));
    for (const rootOnly of [
      "tool-render",
      "session-ui",
      "agents-command",
      "durable-exit",
      "agents-clean",
      "quit-watch",
      "widget",
      "child-dialogs",
    ])
      expect(ui).not.toContain(`ui/${rootOnly}.js`);
  });

  it("leaves the tree's machinery to its first use: no runtime, turns, spawn, isolation, progress or file parsing", () => {
    const machinery = extensionFiles.filter(
      (f) =>
        /^(turns|spawn|isolation|progress)\//.test(f) ||
        ["session.js", "tree/tree-dir.js", "roles/definition-files.js", "roles/models.js"].includes(f),
    );
    // The one name a message's details carry, read by the notice hold at every message.
    expect(machinery).toEqual(["turns/delivery/delivery-keys.js"]);
    expect([...graph.packages]).not.toContain("minimatch");
  });

  it(`stays small: at most ${MAX_MODULES_AT_LOAD} modules`, () => {
    expect(graph.files.size).toBeLessThanOrEqual(MAX_MODULES_AT_LOAD);
  });
});

describe("a part imported on first use", () => {
  /*
   * pi's jiti resolves pi's packages by the names pi gives them (an alias) and lets Node load a
   * module whose imports Node can resolve itself; such a module's import() is then Node's own,
   * which may not know those names. So a module whose static graph reaches no pi package may
   * import() only parts that reach none either; the others are imported from index.ts.
   */
  it("from a module Node may load itself, reaches no pi package", () => {
    const crossings = extensionModules()
      .filter((file) => !reachesPi(file))
      .flatMap((file) => dynamicImports(file).map((part) => ({ file, part })))
      .filter(({ part }) => reachesPi(part))
      .map(
        ({ file, part }) => `${path.relative(path.dirname(ENTRY), file)} → ${path.relative(path.dirname(ENTRY), part)}`,
      );
    expect(crossings).toEqual([]);
  });

  it("the rule sees parts: index.ts imports the spawn, which reaches pi's package", () => {
    expect(dynamicImports(ENTRY)).toContain(path.join(path.dirname(ENTRY), "spawn", "spawn.js"));
    expect(reachesPi(path.join(path.dirname(ENTRY), "spawn", "spawn.js"))).toBe(true);
  });
});

/** A pi with this extension loaded: its handlers, its tools, and what a session's context needs. */
function fakePi() {
  const handlers = new Map<string, Array<(event: unknown, ctx: unknown) => unknown>>();
  const tools = new Map<string, { name: string; execute: (...args: unknown[]) => Promise<{ details: unknown }> }>();
  const notes: string[] = [];
  const pi = {
    on: (name: string, handler: (event: unknown, ctx: unknown) => unknown) =>
      handlers.set(name, [...(handlers.get(name) ?? []), handler]),
    registerTool: (tool: { name: string; execute: (...args: unknown[]) => Promise<{ details: unknown }> }) =>
      tools.set(tool.name, tool),
    getAllTools: () => [...tools.values()].map(({ name }) => ({ name })),
    appendEntry: () => undefined,
  };
  const ctx = {
    cwd: os.tmpdir(),
    hasUI: false,
    ui: { notify: (line: string) => notes.push(line) },
    sessionManager: { getSessionFile: () => undefined, getSessionId: () => "session", getEntries: () => [] },
  };
  const emit = async (name: string, event: unknown = {}) => {
    for (const handler of handlers.get(name) ?? []) await handler(event, ctx);
  };
  return { pi, tools, ctx, emit, notes };
}

describe("when a child's pi starts its tree", () => {
  let base: string;
  let treeDir: string;
  let agentDir: string;

  beforeEach(() => {
    base = fs.mkdtempSync(path.join(os.tmpdir(), "psa-load-"));
    treeDir = path.join(base, "tree");
    // What the parent's spawn left: the child's folder and its record, nothing of the tree's own folders.
    agentDir = path.join(treeDir, "agents", "worker");
    fs.mkdirSync(path.join(agentDir, "runs"), { recursive: true });
    fs.writeFileSync(
      path.join(agentDir, "agent.json"),
      JSON.stringify(agentRecord({ status: "running", runs: ["0001-spawn"] })),
    );
    vi.stubEnv("PI_SUBAGENTS_TREE_DIR", treeDir);
    vi.stubEnv("PI_SUBAGENTS_AGENT_PATH", "/root/worker");
    vi.stubEnv("PI_CODING_AGENT_DIR", path.join(base, "agent"));
    vi.stubEnv("HOME", path.join(base, "home"));
  });

  afterEach(() => {
    vi.unstubAllEnvs();
    fs.rmSync(base, { recursive: true, force: true });
  });

  /** Whether the tree's machinery has run here: starting it prepares the tree directory (tree.json). */
  const started = () => fs.existsSync(path.join(treeDir, "tree.json"));

  it("with nothing of its own children in its folder: not at session_start, at its first tool call", async () => {
    const { pi, tools, ctx, emit } = fakePi();
    await piSubagentTree(pi as never);
    await emit("session_start");
    expect(tools.get("spawn_agent")).toBeDefined();
    expect(started()).toBe(false);
    const listed = await tools.get("list_agents")!.execute("call-1", {}, undefined, undefined, ctx);
    expect(started()).toBe(true);
    expect(listed.details).toMatchObject({ agents: [], total_usage: { total_tokens: 0 } });
    await emit("session_shutdown");
  });

  it.each([
    ["a child's folder", () => fs.mkdirSync(path.join(agentDir, "helper"))],
    ["its children's notices", () => fs.writeFileSync(path.join(agentDir, "deliveries.json"), "{}")],
    ["its queue", () => fs.writeFileSync(path.join(agentDir, "queue.json"), "{}")],
    [
      "a message in its inbox",
      () => {
        fs.mkdirSync(path.join(agentDir, "inbox"));
        fs.writeFileSync(path.join(agentDir, "inbox", "0001.json"), "{}");
      },
    ],
  ])("with %s in its folder: at session_start, to take them back", async (_what, leave) => {
    leave();
    const { pi, emit } = fakePi();
    await piSubagentTree(pi as never);
    await emit("session_start");
    expect(started()).toBe(true);
    await emit("session_shutdown");
  });

  it("an empty inbox or its own runs and reports are no trace of children", async () => {
    fs.mkdirSync(path.join(agentDir, "inbox"));
    fs.mkdirSync(path.join(agentDir, "reports"));
    const { pi, emit } = fakePi();
    await piSubagentTree(pi as never);
    await emit("session_start");
    expect(started()).toBe(false);
    await emit("session_shutdown");
  });

  it("counts its own answers before the tree starts: the tree's budget sees them once it does", async () => {
    vi.stubEnv("PI_SUBAGENTS_BUDGET_TOKENS", "1000");
    const { pi, tools, ctx, emit } = fakePi();
    await piSubagentTree(pi as never);
    await emit("session_start");
    const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { total: 0.5 } };
    await emit("message_end", { message: { role: "assistant", usage } });
    expect(started()).toBe(false);
    const listed = await tools.get("list_agents")!.execute("call-1", {}, undefined, undefined, ctx);
    expect(listed.details).toMatchObject({ agents: [], budget: { tokens: 1000, spent_tokens: 15 } });
    await emit("session_shutdown");
  });
});

describe("a part loaded on first use", () => {
  it("that cannot be imported is the tool's error, said plainly: pi goes on", async () => {
    const missing = () => import(path.join(os.tmpdir(), "psa-no-such-part.js"));
    await expect(loadPart("the spawn", missing)).rejects.toThrow(
      /^pi-subagent-tree could not load the spawn: .*psa-no-such-part/,
    );
  });
});
