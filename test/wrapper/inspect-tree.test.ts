/**
 * `subagent-wrapper inspect <tree directory>`: the folder the extension keeps per root
 * session shows as a whole tree — every agent with its path, nickname, status, role, model,
 * runs (outcome, duration, reason) and worktree — as text and as JSON.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AgentRecordV1 } from "../../src/contracts/tree.js";
import { turnResult } from "../support/fake-turns.js";
import { runProcess } from "../support/processes.js";
import { agentRecord } from "../support/records.js";
import { WRAPPER_BIN } from "../support/wrapper-harness.js";

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

const cli = (args: string[]) => runProcess(process.execPath, [WRAPPER_BIN, ...args], { timeoutMs: 20_000 });

async function agent(
  treeDir: string,
  record: Partial<AgentRecordV1> & { worktree?: object },
  runs: Record<string, object | "events-only"> = {},
) {
  const dir = path.join(treeDir, "agents", ...record.path!.split("/").slice(2));
  await mkdir(dir, { recursive: true });
  await writeFile(
    path.join(dir, "agent.json"),
    JSON.stringify(agentRecord({ ...record, runs: Object.keys(runs) } as Partial<AgentRecordV1>)),
  );
  for (const [name, result] of Object.entries(runs)) {
    const runDir = path.join(dir, "runs", name);
    await mkdir(runDir, { recursive: true });
    if (result === "events-only") {
      await writeFile(
        path.join(runDir, "events.jsonl"),
        `${JSON.stringify({ type: "run_start", seq: 1, ts: Date.now() - 4000, runId: "r", pid: process.pid, argv: [] })}\n`,
      );
    } else await writeFile(path.join(runDir, "result.json"), JSON.stringify(result));
  }
}

async function sampleTree(): Promise<string> {
  const treeDir = await mkdtemp(path.join(os.tmpdir(), "inspect-tree-"));
  dirs.push(treeDir);
  await writeFile(
    path.join(treeDir, "tree.json"),
    JSON.stringify({ version: 1, rootSession: "/s/root.jsonl", createdAt: "2026-12-01T10:00:00.000Z" }),
  );
  const usage = {
    input: 10,
    output: 5,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 1500,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0.0123 },
  };
  await agent(
    treeDir,
    {
      path: "/root/scout",
      nickname: "Euclid",
      role: "scout",
      reasoning: "low",
      status: "completed",
      spawnSeq: 1,
      usage,
    },
    {
      "0001-spawn": turnResult({ durationMs: 2100 }),
    },
  );
  await agent(
    treeDir,
    {
      path: "/root/lead",
      nickname: "Archimedes",
      status: "errored",
      health: "unhealthy",
      spawnSeq: 2,
      worktree: {
        path: "/t/worktrees/lead",
        branch: "subagent/7f3a9c2e-lead",
        baseCommit: "c".repeat(40),
        gitDir: "/t/repo/.git",
        subdir: "",
        head: {
          commit: "d".repeat(40),
          changedFiles: ["a.ts", "b.ts", "c.ts", "d.ts"],
          changedFilesTotal: 5,
          insertions: 9,
          deletions: 1,
        },
      },
    },
    {
      "0001-spawn": turnResult({ durationMs: 5300 }),
      "0002-followup": turnResult({ status: "failed", durationMs: 1000, errorMessage: "500 scripted\nerror" }),
    },
  );
  await agent(
    treeDir,
    { path: "/root/lead/check", nickname: "Ptolemy", status: "running", spawnSeq: 3 },
    { "0001-spawn": "events-only" },
  );
  await agent(treeDir, { path: "/root/last", nickname: "Hypatia", status: "pending_init", spawnSeq: 4 });
  return treeDir;
}

describe("subagent-wrapper inspect <tree directory>", () => {
  it("draws the whole tree: each agent's path, nickname, role, status, model, runs with outcomes and durations, worktree, branch and how to bring its work in", async () => {
    const treeDir = await sampleTree();
    const shown = await cli(["inspect", treeDir]);
    expect(shown.stderr).toBe("");
    expect(shown.code).toBe(0);
    expect(shown.stdout.split("\n")).toEqual([
      `tree      ${treeDir}  (root session /s/root.jsonl, created 2026-12-01T10:00:00.000Z)`,
      "agents    4 agents: 1 completed, 1 errored, 1 running, 1 queued · 1,500 tokens · $0.0123",
      "",
      "/root",
      "├─ /root/scout · Euclid · scout · completed · fake/fast · low · 1,500 tokens · $0.0123",
      "│     0001-spawn completed in 2.1 s",
      "├─ /root/lead · Archimedes · default · errored, unhealthy · fake/fast · medium · 0 tokens · $0.0000",
      "│  │  worktree branch subagent/7f3a9c2e-lead at /t/worktrees/lead",
      "│  │           ccccccc..ddddddd, 5 files: a.ts, b.ts, c.ts +2 more",
      `│  │           bring it in: subagent-wrapper bring ${"c".repeat(40)} ${"d".repeat(40)}`,
      "│  │  0001-spawn completed in 5.3 s",
      "│  │  0002-followup failed in 1.0 s: 500 scripted error",
      "│  └─ /root/lead/check · Ptolemy · default · running · fake/fast · medium · 0 tokens · $0.0000",
      expect.stringMatching(/^│ {8}0001-spawn running for [45]\.\d s so far$/),
      "└─ /root/last · Hypatia · default · queued · fake/fast · medium · 0 tokens · $0.0000",
      "      no run yet",
      "",
      `one run in detail: subagent-wrapper inspect ${path.join(treeDir, "agents", "lead", "check", "runs", "0001-spawn")}`,
      "",
    ]);
  });

  it("--json gives every agent with its runs and worktree", async () => {
    const treeDir = await sampleTree();
    const shown = await cli(["inspect", treeDir, "--json"]);
    expect(shown.code).toBe(0);
    const json = JSON.parse(shown.stdout);
    expect(json).toMatchObject({ kind: "tree", tree: treeDir, root_session: "/s/root.jsonl", problems: [] });
    expect(json.agents.map((a: { agent_name: string; status: string }) => [a.agent_name, a.status])).toEqual([
      ["/root/scout", "completed"],
      ["/root/lead", "errored"],
      ["/root/lead/check", "running"],
      ["/root/last", "pending_init"],
    ]);
    expect(json.agents[1]).toMatchObject({
      worktree: {
        branch: "subagent/7f3a9c2e-lead",
        path: "/t/worktrees/lead",
        base_commit: "c".repeat(40),
        head_commit: "d".repeat(40),
        changed_files: ["a.ts", "b.ts", "c.ts", "d.ts"],
        changed_files_total: 5,
        merge_hint: `subagent-wrapper bring ${"c".repeat(40)} ${"d".repeat(40)}`,
      },
      runs: [
        { name: "0001-spawn", status: "completed", duration_ms: 5300, reason: null },
        { name: "0002-followup", status: "failed", duration_ms: 1000, reason: "500 scripted\nerror" },
      ],
    });
  });

  it("an agent record that cannot be read is named (exit 1); the rest still shows", async () => {
    const treeDir = await sampleTree();
    await mkdir(path.join(treeDir, "agents", "broken"), { recursive: true });
    await writeFile(path.join(treeDir, "agents", "broken", "agent.json"), "{ half");
    const shown = await cli(["inspect", treeDir]);
    expect(shown.code).toBe(1);
    expect(shown.stdout).toContain("├─ /root/scout · Euclid");
    expect(shown.stdout).toMatch(/✗ .*agents\/broken\/agent\.json is not valid JSON: /);
  });

  it("an empty tree directory (a session that spawned nothing) says so", async () => {
    const treeDir = await mkdtemp(path.join(os.tmpdir(), "inspect-tree-"));
    dirs.push(treeDir);
    await mkdir(path.join(treeDir, "agents"));
    const shown = await cli(["inspect", treeDir]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toBe(`tree      ${treeDir}\nagents    none yet\n\n/root\n`);
  });

  it("a record no root updated after its turn ended takes the status and usage of the runs' result.json", async () => {
    const treeDir = await mkdtemp(path.join(os.tmpdir(), "inspect-tree-"));
    dirs.push(treeDir);
    const usage = (totalTokens: number, total: number) => ({
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total },
    });
    // A detached child that completed on its own, and one that `stop` interrupted: both still `running`.
    const alone = turnResult({ usage: usage(1200, 0.01) });
    await agent(treeDir, { path: "/root/alone", status: "running", spawnSeq: 1 }, { "0001-spawn": alone });
    const stopped = turnResult({ status: "interrupted", usage: usage(800, 0.02) });
    await agent(treeDir, { path: "/root/stopped", status: "running", spawnSeq: 2 }, { "0001-spawn": stopped });
    // Still going: its record's word stands.
    await agent(treeDir, { path: "/root/busy", status: "running", spawnSeq: 3 }, { "0001-spawn": "events-only" });
    const shown = await cli(["inspect", treeDir]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("agents    3 agents: 1 completed, 1 interrupted, 1 running · 2,000 tokens · $0.03");
    expect(shown.stdout).toMatch(/\/root\/alone · .* · completed · .* · 1,200 tokens/);
    expect(shown.stdout).toMatch(/\/root\/stopped · .* · interrupted · .* · 800 tokens/);
  });

  it("shows every dialog a child opened, who answered it and when (dialogs.jsonl), as text and in --json", async () => {
    const treeDir = await mkdtemp(path.join(os.tmpdir(), "inspect-tree-"));
    dirs.push(treeDir);
    await agent(treeDir, { path: "/root/fixer", status: "running", spawnSeq: 1 });
    const asked = { version: 1, run: "0001-spawn", askedAt: "2026-12-03T10:00:00.000Z" };
    const lines = [
      {
        ...asked,
        agent: "/root/fixer",
        seq: 1,
        method: "select",
        title: "⚠️ Dangerous command:\n\n  rm -rf build\n\nAllow?",
        options: ["Yes", "No"],
        answeredBy: "person",
        answeredAt: "2026-12-03T10:00:04.000Z",
        value: "No",
      },
      {
        ...asked,
        agent: "/root/fixer",
        seq: 2,
        method: "confirm",
        title: "Push?",
        answeredBy: "timeout",
        answeredAt: "2026-12-03T10:05:00.000Z",
        cancelled: true,
      },
    ];
    // The second line torn (a full disk): skipped and counted.
    await writeFile(
      path.join(treeDir, "dialogs.jsonl"),
      `${JSON.stringify(lines[0])}\n{"agent": "/root/fi\n${JSON.stringify(lines[1])}\n`,
    );
    const shown = await cli(["inspect", treeDir]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(
      [
        "dialogs   2 dialogs",
        '  2026-12-03T10:00:04.000Z  /root/fixer select "⚠️ Dangerous command: rm -rf build Allow?" → "No" (person)',
        '  2026-12-03T10:05:00.000Z  /root/fixer confirm "Push?" → cancelled (timeout)',
        "  1 line of dialogs.jsonl could not be read",
      ].join("\n"),
    );
    const json = JSON.parse((await cli(["inspect", "--json", treeDir])).stdout) as { dialogs: unknown[] };
    expect(json.dialogs).toEqual(lines);
  });

  it("a tree without dialogs shows no dialogs section", async () => {
    const treeDir = await mkdtemp(path.join(os.tmpdir(), "inspect-tree-"));
    dirs.push(treeDir);
    const shown = await cli(["inspect", treeDir]);
    expect(shown.stdout).not.toContain("dialogs");
  });
});
