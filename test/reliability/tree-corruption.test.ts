/**
 * Area 8 — a damaged tree directory before a restart. Each case damages one thing in a tree
 * left by a previous process (a record, a result, a folder, an inbox, a pid file) and starts
 * a new process on it, as session_start does. Every case must: start (restore never throws
 * and never hangs), answer list_agents, wait_agent and get_agent_report, restore the healthy
 * agents with their real statuses, and report each damaged thing in exactly one line — once,
 * however often the tools read it again. The runtime is the real one with the real launcher
 * (its restore reads real files and waits for real wrappers; none runs here).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { afterAll, describe, expect, it } from "vitest";
import { RUN_FILES, TREE_FILES } from "../../src/contracts/layout.js";
import type { AgentRecordV1 } from "../../src/contracts/tree.js";
import { followupTaskTool } from "../../src/extension/tools/followup-task.js";
import { getAgentReportTool } from "../../src/extension/tools/get-agent-report.js";
import { listAgentsTool } from "../../src/extension/tools/list-agents.js";
import { waitAgentTool } from "../../src/extension/tools/wait-agent.js";
import { agentEntry, ENTRY_TYPE } from "../../src/extension/tree/session-entries.js";
import { TreeDir } from "../../src/extension/tree/tree-dir.js";
import { saveReport } from "../../src/extension/turns/delivery/reports.js";
import { restore } from "../../src/extension/turns/restore.js";
import { TreeRuntime } from "../../src/extension/turns/runtime.js";
import { turnResult } from "../support/fake-turns.js";
import { agentRecord } from "../support/records.js";

const LIMITS = { maxActiveChildTurns: 3, maxDepth: 3, maxSpawns: 64, turnTimeoutMs: 60_000 };
/** Far above what any case needs (a few ms); reaching it is a hang. */
const HANG_MS = 8000;

interface Tree {
  dir: string;
  tree: TreeDir;
  agentDir(agentPath: string): string;
  runDir(agentPath: string): string;
  write(record: AgentRecordV1): Promise<void>;
  /** Session entries the root would hold for the healthy agents (the fallback restore uses). */
  entries: unknown[];
}

/** What the previous process left: alpha completed (with a report and a grandchild), beta running with a result, victim completed. */
async function healthyTree(): Promise<Tree> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "psa-corrupt-"));
  const tree = new TreeDir(path.join(dir, "tree"));
  await tree.init("session");
  const t: Tree = {
    dir,
    tree,
    agentDir: (agentPath) => tree.agentDir(agentPath),
    runDir: (agentPath) => path.join(tree.agentDir(agentPath), TREE_FILES.runs, "0001-spawn"),
    write: (record) => tree.writeRecord(record),
    entries: [],
  };
  const records = [
    agentRecord({ path: "/root/alpha", nickname: "Euclid", spawnSeq: 1, status: "completed", runs: ["0001-spawn"] }),
    agentRecord({ path: "/root/beta", nickname: "Archimedes", spawnSeq: 2, status: "running", runs: ["0001-spawn"] }),
    agentRecord({ path: "/root/victim", nickname: "Ptolemy", spawnSeq: 3, status: "completed", runs: ["0001-spawn"] }),
    agentRecord({
      path: "/root/alpha/sub",
      nickname: "Hypatia",
      spawnSeq: 4,
      status: "completed",
      runs: ["0001-spawn"],
    }),
  ];
  for (const record of records) {
    await fs.mkdir(t.runDir(record.path), { recursive: true });
    await fs.writeFile(path.join(t.runDir(record.path), RUN_FILES.events), "");
    await t.write(record);
    t.entries.push({ type: "custom", customType: ENTRY_TYPE, data: agentEntry(record) });
  }
  await fs.writeFile(
    path.join(t.runDir("/root/beta"), RUN_FILES.result),
    JSON.stringify(turnResult({ finalText: "beta done" })),
  );
  await saveReport(t.agentDir("/root/alpha"), { runId: "r", turn: 1, outcome: "completed", text: "alpha's report" });
  return t;
}

const victimFile = (t: Tree) => path.join(t.agentDir("/root/victim"), TREE_FILES.record);
const mkfifo = (file: string) => execFileSync("mkfifo", [file]);
/** Removes `file` (a folder too), then puts `make`'s thing in its place. */
async function replace(file: string, make: (file: string) => unknown): Promise<void> {
  await fs.rm(file, { recursive: true, force: true });
  await make(file);
}
const replaceWithFifo = (file: string) => replace(file, mkfifo);
/** A file where one of the tree's own folders belongs. */
const fileForFolder = (name: string) => (t: Tree) =>
  replace(path.join(t.tree.root, name), (file) => fs.writeFile(file, "x"));
/** The victim left running, its wrapper.pid made by `make`. */
const victimPid = (make: (file: string) => unknown) => async (t: Tree) => {
  await victimRunning(t);
  await make(path.join(t.runDir("/root/victim"), RUN_FILES.wrapperPid));
};
/** Rewrites the victim's record with `change` applied to its JSON. */
const victimJson = (change: (record: Record<string, unknown>) => unknown) => async (t: Tree) => {
  const record = JSON.parse(await fs.readFile(victimFile(t), "utf8")) as Record<string, unknown>;
  await fs.writeFile(victimFile(t), JSON.stringify(change(record)));
};
const victimText = (text: string | Buffer) => async (t: Tree) => fs.writeFile(victimFile(t), text);
/** The victim as the previous process left it: running its first turn. */
const victimRunning = async (t: Tree) => victimJson((r) => ({ ...r, status: "running" }))(t);
const victimResult = (write: (file: string) => Promise<unknown>) => async (t: Tree) => {
  await victimRunning(t);
  await write(path.join(t.runDir("/root/victim"), RUN_FILES.result));
};

interface Case {
  name: string;
  damage: (t: Tree) => Promise<unknown>;
  /** Agent paths list_agents names as damaged. */
  damaged?: string[];
  /** Lines reported to the user (default: one per damaged agent). */
  lines?: number;
  /** The victim's status after restore, when it is not damaged (default completed). */
  victim?: string | "absent";
  /** The healthy agents are gone with the damage (a file where `agents/` belongs). */
  noAgents?: boolean;
  /** Restore from the session's entries (the tree directory has lost its agents). */
  fromSession?: boolean;
  /** What happens in the tree after the restore, before the tools are called. */
  after?: (t: Tree) => Promise<unknown>;
}

const V = ["/root/victim"];
const CASES: Case[] = [
  { name: "agent.json is {}", damage: victimText("{}"), damaged: V },
  { name: "agent.json is 5", damage: victimText("5"), damaged: V },
  { name: "agent.json is []", damage: victimText("[]"), damaged: V },
  { name: 'agent.json is "x"', damage: victimText('"x"'), damaged: V },
  { name: "agent.json is null", damage: victimText("null"), damaged: V },
  { name: "agent.json is empty", damage: victimText(""), damaged: V },
  {
    name: "agent.json is truncated",
    damage: async (t) => fs.writeFile(victimFile(t), (await fs.readFile(victimFile(t), "utf8")).slice(0, 200)),
    damaged: V,
  },
  {
    name: "agent.json is binary garbage",
    damage: victimText(Buffer.from([0xff, 0xfe, 0x00, 0x7b, 0x80, 0x81])),
    damaged: V,
  },
  { name: "a record without inbox", damage: victimJson(({ inbox: _, ...r }) => r), damaged: V },
  { name: "an inbox that is a string", damage: victimJson((r) => ({ ...r, inbox: "hello" })), damaged: V },
  {
    name: "a running record without runs",
    damage: victimJson(({ runs: _, ...r }) => ({ ...r, status: "running" })),
    damaged: V,
  },
  {
    name: "a run name that climbs out",
    damage: victimJson((r) => ({ ...r, status: "running", runs: ["../../../../etc"] })),
    damaged: V,
  },
  { name: "a path that climbs out", damage: victimJson((r) => ({ ...r, path: "/root/../../etc" })), damaged: V },
  {
    name: "the path of another agent",
    damage: victimJson((r) => ({ ...r, path: "/root/alpha", taskName: "alpha" })),
    damaged: V,
  },
  { name: "a parent that is not its path's", damage: victimJson((r) => ({ ...r, parent: "/root/alpha" })), damaged: V },
  { name: "version 2", damage: victimJson((r) => ({ ...r, version: 2 })), damaged: V },
  { name: "an unknown status", damage: victimJson((r) => ({ ...r, status: "zombie" })), damaged: V },
  { name: "no usage", damage: victimJson(({ usage: _, ...r }) => r), damaged: V },
  { name: "a spawnSeq that is text", damage: victimJson((r) => ({ ...r, spawnSeq: "3" })), damaged: V },
  {
    name: "a worktree whose subdir climbs out",
    damage: victimJson((r) => ({
      ...r,
      worktree: { path: "/w", branch: "subagent/x", baseCommit: "a".repeat(40), gitDir: "/r/.git", subdir: "../.." },
    })),
    damaged: V,
  },
  {
    name: "pending messages that are not messages",
    damage: victimJson((r) => ({ ...r, undelivered: [1, null] })),
    damaged: V,
  },
  { name: "agent.json is a folder", damage: async (t) => replace(victimFile(t), (file) => fs.mkdir(file)), damaged: V },
  { name: "agent.json is a named pipe", damage: async (t) => replaceWithFifo(victimFile(t)), damaged: V },
  {
    name: "agent.json links to /dev/zero",
    damage: async (t) => replace(victimFile(t), (file) => fs.symlink("/dev/zero", file)),
    damaged: V,
  },
  { name: "agent.json is 65 MiB", damage: async (t) => fs.truncate(victimFile(t), 65 * 1024 * 1024), damaged: V },
  {
    name: "a grandchild's agent.json is {}",
    damage: async (t) => fs.writeFile(path.join(t.agentDir("/root/alpha/sub"), TREE_FILES.record), "{}"),
    damaged: ["/root/alpha/sub"],
  },
  // Not damage: each restores without a line.
  {
    name: "an unknown field (a newer writer's)",
    damage: victimJson((r) => ({ ...r, somethingNew: { path: "/w", branch: "b" } })),
    lines: 0,
  },
  {
    name: "a running record with an empty run list",
    damage: victimJson((r) => ({ ...r, status: "running", runs: [] })),
    lines: 0,
    victim: "interrupted",
  },
  {
    name: "wrapper.pid holds a live pid that is not the wrapper",
    damage: victimPid((file) => fs.writeFile(file, `${process.pid}\n`)),
    lines: 0,
    victim: "interrupted",
  },
  {
    name: "wrapper.pid holds garbage",
    damage: victimPid((file) => fs.writeFile(file, "{{not a pid")),
    lines: 0,
    victim: "interrupted",
  },
  {
    name: "wrapper.pid is a named pipe",
    damage: victimPid(mkfifo),
    lines: 0,
    victim: "interrupted",
  },
  {
    name: "an agent folder without agent.json (a spawn that never finished)",
    damage: async (t) => fs.mkdir(t.agentDir("/root/half")),
    lines: 0,
  },
  // A result.json that cannot be trusted: the turn is over, errored, with why.
  { name: "result.json is {}", damage: victimResult((file) => fs.writeFile(file, "{}")), lines: 1, victim: "errored" },
  {
    name: "result.json is truncated",
    damage: victimResult((file) => fs.writeFile(file, JSON.stringify(turnResult()).slice(0, 50))),
    lines: 1,
    victim: "errored",
  },
  {
    name: "result.json without usage",
    damage: victimResult((file) => fs.writeFile(file, JSON.stringify({ ...turnResult(), usage: "lots" }))),
    lines: 1,
    victim: "errored",
  },
  {
    name: "result.json is a named pipe",
    damage: victimResult(async (file) => mkfifo(file)),
    lines: 1,
    victim: "errored",
  },
  { name: "result.json is a folder", damage: victimResult((file) => fs.mkdir(file)), lines: 1, victim: "errored" },
  // The tree's own folders and shared files.
  {
    name: "spawns is a file",
    damage: fileForFolder("spawns"),
    lines: 1,
  },
  {
    name: "nicknames is a file",
    damage: fileForFolder("nicknames"),
    lines: 1,
  },
  {
    name: "the root's inbox is a file",
    damage: fileForFolder("inbox"),
    lines: 1,
  },
  {
    name: "agents is a file",
    damage: fileForFolder("agents"),
    lines: 1,
    noAgents: true,
  },
  {
    name: "a message in the root's inbox is a named pipe",
    damage: async (t) => mkfifo(path.join(t.tree.root, "inbox", "000000000000001-0000000000-aaaa.json")),
    lines: 1,
  },
  {
    name: "a message in the root's inbox is not a notice",
    damage: async (t) =>
      fs.writeFile(path.join(t.tree.root, "inbox", "000000000000001-0000000000-aaaa.json"), '{"report":5}'),
    lines: 1,
  },
  {
    name: "tree.json is garbage",
    damage: async (t) => fs.writeFile(path.join(t.tree.root, "tree.json"), "\u0000garbage"),
    lines: 0,
  },
  {
    name: "a stored report is a named pipe",
    damage: async (t) => replaceWithFifo(path.join(t.agentDir("/root/alpha"), TREE_FILES.reports, "000001.json")),
    lines: 0,
  },
  {
    name: "a run's events.jsonl is a named pipe",
    damage: async (t) => replaceWithFifo(path.join(t.runDir("/root/alpha"), RUN_FILES.events)),
    lines: 0,
  },
  {
    name: "a parent's queue.json is a named pipe (read for its queued child)",
    damage: async (t) => mkfifo(path.join(t.agentDir("/root/alpha"), TREE_FILES.queue)),
    // alpha's own process queued a child after the restore: list_agents reads alpha's queue for its position.
    after: async (t) =>
      t.write(agentRecord({ path: "/root/alpha/queued", nickname: "Avicenna", spawnSeq: 5, status: "pending_init" })),
    lines: 0,
  },
  {
    name: "the tree directory lost its agents; the session holds one garbage entry",
    damage: async (t) => {
      await fs.rm(path.join(t.tree.root, "agents"), { recursive: true });
      t.entries.push({
        type: "custom",
        customType: ENTRY_TYPE,
        data: { kind: "agent", path: "/root/ghost", status: 5 },
      });
    },
    lines: 1,
    fromSession: true,
  },
];

function withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what} hung (over ${HANG_MS} ms)`)), HANG_MS)),
  );
  return Promise.race([promise, hang]).finally(() => clearTimeout(timer));
}

const tally = { cases: 0, started: 0, hangs: 0, lines: 0 };
afterAll(() => {
  console.log(
    `[reliability] tree corruption: ${tally.cases} cases tried, ${tally.started} sessions started with their healthy agents, ${tally.hangs} hangs, ${tally.lines} damage lines (one per damaged thing)`,
  );
});

// biome-ignore lint/suspicious/noExplicitAny: tool results are read as untyped JSON
type Json = Record<string, any>;

describe(`area 8: ${CASES.length} corruptions of a tree directory before a restart`, () => {
  it.each(CASES)(
    "$name → the session starts, the tools answer, the healthy agents are there, one line per damage",
    async (c) => {
      tally.cases++;
      const t = await healthyTree();
      await c.damage(t);
      // A new process on the same tree directory, as pi's session_start builds it.
      const tree = new TreeDir(t.tree.root);
      const lines: string[] = [];
      try {
        await withTimeout(tree.init("session"), "init");
        const rt = new TreeRuntime({ self: "/root", isRoot: true, treeDir: tree.root }, tree, LIMITS, t.dir, {
          hooks: { problem: (line) => lines.push(line) },
        });
        await withTimeout(restore(rt, c.fromSession ? t.entries : []), "restore");
        await c.after?.(t);
        const deps = { pi: {} as ExtensionAPI, runtime: () => rt };
        const call = async (tool: { execute: (...args: never[]) => Promise<{ details: unknown }> }, params: object) =>
          (
            await withTimeout(
              (tool.execute as (...args: unknown[]) => Promise<{ details: unknown }>)(
                "c",
                params,
                undefined,
                undefined,
                {},
              ),
              "a tool",
            )
          ).details as Json;

        const list = await call(listAgentsTool(deps), {});
        const listed = new Map((list.agents as Json[]).map((agent) => [agent.agent_name, agent.agent_status]));
        const victim = c.damaged?.includes("/root/victim") ? "absent" : (c.victim ?? "completed");
        if (c.noAgents) expect(listed.size).toBe(0);
        else if (c.fromSession)
          expect([...listed.keys()]).toEqual(["/root/alpha", "/root/beta", "/root/victim", "/root/alpha/sub"]);
        else {
          expect(listed.get("/root/alpha")).toBe("completed");
          // beta was running when the previous process went away; its result says completed.
          expect(listed.get("/root/beta")).toBe("completed");
          expect(listed.get("/root/victim")).toBe(victim === "absent" ? undefined : victim);
          if (!c.damaged?.includes("/root/alpha/sub")) expect(listed.get("/root/alpha/sub")).toBe("completed");
          if (c.after) expect(listed.get("/root/alpha/queued")).toBe("pending_init");
        }
        expect(((list.damaged ?? []) as Json[]).map((d) => d.agent_name)).toEqual(c.damaged ?? []);

        const waited = await call(waitAgentTool(deps), { timeout_ms: 0 });
        expect(waited.timed_out === true || waited.idle === true || waited.notices.length > 0).toBe(true);
        if (!c.noAgents && !c.fromSession) {
          expect((await call(getAgentReportTool(deps), { target: "/root/alpha" })).available).toBe(
            c.name !== "a stored report is a named pipe",
          );
        }
        if (c.damaged?.includes("/root/victim")) {
          await expect(call(followupTaskTool(deps), { target: "victim", message: "go on" })).rejects.toThrow(
            /^\/root\/victim's record is damaged \(.+\); it cannot take follow-ups$/,
          );
        }

        // A folder made again holds the claims of the agents that are there.
        if (c.name === "spawns is a file")
          expect((await fs.readdir(path.join(tree.root, "spawns"))).sort()).toEqual([
            "000001",
            "000002",
            "000003",
            "000004",
          ]);
        if (c.name === "nicknames is a file") expect((await tree.takenNicknames()).has("Ptolemy")).toBe(true);
        // Read again: what was reported is not reported twice.
        await call(listAgentsTool(deps), {});
        await call(waitAgentTool(deps), { timeout_ms: 0 });
        const expected = c.lines ?? c.damaged?.length ?? 0;
        expect(lines, lines.join("\n")).toHaveLength(expected);
        for (const line of lines) {
          expect(line).toMatch(/^pi-subagent-tree: /);
          expect(line).not.toContain("\n");
          expect(line.length).toBeLessThan(1000);
        }
        tally.started++;
        tally.lines += lines.length;
        await rt.shutdown();
      } catch (err) {
        if (err instanceof Error && err.message.includes("hung")) tally.hangs++;
        throw err;
      } finally {
        await fs.rm(t.dir, { recursive: true, force: true });
      }
    },
  );
});
