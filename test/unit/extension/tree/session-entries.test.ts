import { describe, expect, it } from "vitest";
import { runName } from "../../../../src/contracts/layout.js";
import { checkMeta } from "../../../../src/contracts/meta-check.js";
import { agentEntry, ENTRY_TYPE, recordsFromEntries } from "../../../../src/extension/tree/session-entries.js";
import { buildMeta, currentPiBinary } from "../../../../src/extension/turns/wrapper/launcher.js";
import { agentRecord } from "../../../support/records.js";

const record = agentRecord({
  role: "implementation",
  activeTools: ["read", "bash"],
  extensions: ["/pkg/dist/extension/index.js"],
  sessionPath: "/tree/agents/worker/session.jsonl",
  runs: ["0001-spawn"],
  spawnedAt: "2026-11-30T00:00:00.000Z",
});

describe("session records", () => {
  it("an agent entry carries what a restore needs without the tree directory", () => {
    expect(agentEntry(record)).toMatchObject({
      kind: "agent",
      path: "/root/worker",
      nickname: "Euclid",
      role: "implementation",
      model: "fake/fast",
      reasoning: "medium",
      status: "completed",
      health: "healthy",
      activeTools: ["read", "bash"],
      sessionPath: "/tree/agents/worker/session.jsonl",
      runDir: "0001-spawn",
    });
  });

  it("rebuilding from entries keeps the latest entry per agent and ignores other entries", () => {
    const entries = [
      { type: "custom", customType: ENTRY_TYPE, data: agentEntry({ ...record, status: "running" }) },
      { type: "custom", customType: "someone-else", data: { kind: "agent", path: "/root/x" } },
      { type: "message", message: { role: "user", content: "hi" } },
      { type: "custom", customType: ENTRY_TYPE, data: agentEntry(record) },
    ];
    const { records: rebuilt, refused } = recordsFromEntries(entries);
    expect(refused).toEqual([]);
    expect(rebuilt).toHaveLength(1);
    expect(rebuilt[0]).toMatchObject({
      version: 1,
      kind: "agent",
      path: "/root/worker",
      status: "completed",
      inbox: [],
      undelivered: [],
    });
  });

  it("an agent's limits survive a rebuild from entries (its follow-ups keep them)", () => {
    const limited = { ...record, limits: { max_turns: 9, time_limit: 120 } };
    const { records: rebuilt } = recordsFromEntries([
      { type: "custom", customType: ENTRY_TYPE, data: agentEntry(limited) },
    ]);
    expect(rebuilt[0]?.limits).toEqual({ max_turns: 9, time_limit: 120 });
  });
});

describe("launcher", () => {
  it("run directories sort in run order", () => {
    expect([runName(10, "followup"), runName(2, "followup"), runName(1, "spawn")].sort()).toEqual([
      "0001-spawn",
      "0002-followup",
      "0010-followup",
    ]);
  });

  it("meta.json asks the wrapper for the agent's model, reasoning, tools, extensions, session, limits and tree identity", () => {
    const meta = buildMeta(
      {
        record,
        agentDir: "/tree/agents/worker",
        treeDir: "/tree",
        prompt: "[NEW_TASK from /root · task worker]\ngo",
        kind: "spawn",
        cwd: "/work",
        instructions: "",
        limits: { max_turns: 5, time_limit: 1 },
      },
      "/tree/agents/worker/runs/0001-spawn",
    );
    // The turn limit is time_limit's (the wrapper wraps the turn up): no hard timeoutMs any more.
    expect(meta.timeoutMs).toBeUndefined();
    expect(meta).toMatchObject({
      task: "[NEW_TASK from /root · task worker]\ngo",
      cwd: "/work",
      resultPath: "/tree/agents/worker/runs/0001-spawn/result.json",
      agentPath: "/root/worker",
      resolvedModel: "fake/fast",
      thinking: "medium",
      tools: ["read", "bash"],
      extensions: ["/pkg/dist/extension/index.js"],
      noExtensions: true,
      sessionPath: "/tree/agents/worker/session.jsonl",
      limits: { max_turns: 5, time_limit: 1 },
      env: { PI_SUBAGENTS_TREE_DIR: "/tree", PI_SUBAGENTS_AGENT_PATH: "/root/worker" },
    });
  });

  it("a runner agent's meta.json names its runner and its runner workspace folder (kept between turns); a local one neither", () => {
    const spec = {
      agentDir: "/tree/agents/worker",
      treeDir: "/tree",
      prompt: "go",
      kind: "spawn" as const,
      cwd: "/work",
      instructions: "",
      limits: {},
    };
    const runner = { name: "box", kind: "sandbox" as const, capacity: 3 };
    const remote = buildMeta({ ...spec, record: { ...record, runner } }, "/tree/agents/worker/runs/0001-spawn");
    expect(remote).toMatchObject({ runner, runnerWorkspacePath: "/tree/agents/worker/runner-workspace" });
    const local = buildMeta({ ...spec, record }, "/tree/agents/worker/runs/0001-spawn");
    expect(local.runner).toBeUndefined();
    expect(local.runnerWorkspacePath).toBeUndefined();
  });

  it("meta.json asks for dialogs only when the turn's spec carries them, and checks back", () => {
    const spec = {
      record,
      agentDir: "/tree/agents/worker",
      treeDir: "/tree",
      prompt: "go",
      kind: "spawn" as const,
      cwd: "/work",
      instructions: "",
      limits: {},
    };
    expect(buildMeta(spec, "/tree/agents/worker/runs/0001-spawn")).not.toHaveProperty("dialogs");
    const meta = buildMeta({ ...spec, dialogs: { timeoutMs: 90_000 } }, "/tree/agents/worker/runs/0001-spawn");
    expect(meta.dialogs).toEqual({ timeoutMs: 90_000 });
    expect(checkMeta({ version: 1, ...meta }, "/tree").problems).toEqual([]);
    // Each a problem naming the field (the wrapper's own tests hold its words).
    const bad = checkMeta({ version: 1, ...meta, dialogs: { timeoutMs: -1 } }, "/tree").problems;
    expect(bad).toEqual([expect.stringContaining('meta.json field "dialogs.timeoutMs" must be')]);
    expect(checkMeta({ version: 1, ...meta, dialogs: true }, "/tree").problems).toEqual([
      expect.stringContaining('meta.json field "dialogs" must be an object'),
    ]);
  });

  it("children run the parent's own pi unless PI_SUBAGENTS_PI_BIN says otherwise", () => {
    expect(currentPiBinary({ PI_SUBAGENTS_PI_BIN: "/opt/pi" }, ["node", "/x"])).toBe("/opt/pi");
    expect(currentPiBinary({}, ["node", "/definitely/not/here"])).toBeUndefined();
    expect(currentPiBinary({}, ["node", process.execPath])).toBe(process.execPath);
  });
});
