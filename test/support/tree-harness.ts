/**
 * One agent-tree scenario against the real pi: a scripted LLM routed by agent, a hermetic pi
 * home, a tree base directory inside it, and the root run as `pi --mode json -np -e <repo>`.
 *
 *   const t = await startTree({ scripts: { "/root": [...], "/root/scout": [...] } });
 *   cleanups.push(t.cleanup);
 *   const run = await t.runRoot("go");
 *   expect(t.rootResults()[1]).toMatchObject({ agent_name: "/root/scout" });
 *   expect(await t.survivors()).toEqual([]);
 *
 * Process checks (Linux): every process of the scenario — root pi, wrappers, child pis, the
 * bash tool's grandchildren — carries this home's PI_CODING_AGENT_DIR in its environment, so
 * `scenarioPids()` finds them by reading /proc/<pid>/environ of the current user's processes
 * (never by name), and `cleanup()` SIGKILLs exactly those pids. The run-start pids recorded
 * in every `runs/<run>/events.jsonl` (`runPids()`) carry the marker as well.
 */
import fs from "node:fs";
import path from "node:path";
import type { AgentRecordV1 } from "../../src/contracts/tree.js";
import { processArgs, processesWithEnvSync } from "../../src/lib/process.js";
import { makePiHome, type PiHome, type PiHomeOptions, REPO_ROOT } from "./pi-home.js";
import { killAll, type ProcessResult } from "./processes.js";
import { type ChatRequest, type ScriptedLlm, startScriptedLlm } from "./scripted-llm.js";
import { type AgentStep, lastToolResult, routeByAgent, type TreeScript, toolResults } from "./tree-llm.js";

export interface TreeOptions {
  /** Steps per agent path (`/root`, `/root/scout_one`, …), see routeByAgent. */
  scripts?: Record<string, AgentStep[]>;
  retry?: PiHomeOptions["retry"];
  models?: unknown;
  extraSettings?: Record<string, unknown>;
  /** Extra environment for the root (and so, inherited, the whole tree). */
  env?: Record<string, string>;
  /** PI_SUBAGENTS_DIR; default `trees/` inside the (temporary) home. scripts/stress-test keeps it. */
  baseDir?: string;
}

export interface RunRootOptions {
  /** Hard limit of the root run (default 60 s). */
  timeoutMs?: number;
  /** Arguments placed before the prompt, after `--mode json -np -e <repo>`. */
  args?: string[];
  env?: Record<string, string>;
}

export interface TreeHarness {
  llm: ScriptedLlm;
  home: PiHome;
  /** The router: `tree.requests.get(path)`, `tree.add(path, ...steps)`. */
  tree: TreeScript;
  /** PI_SUBAGENTS_DIR: the base holding `<root session id>/` tree directories. */
  baseDir: string;
  /** The tree directory of the (single) root session that ran; throws if none or several. */
  treeDir(): string;
  /** Runs the root pi to completion (never rejects on a non-zero exit). */
  runRoot(prompt: string, opts?: RunRootOptions): Promise<ProcessResult>;
  /** Every chat request an agent made, in order (`[]` when none). */
  requestsOf(agent: string): ChatRequest[];
  /** For each root request, the last tool result it carried (`undefined` for the first). */
  rootResults(): unknown[];
  /** Every tool result an agent received, in order (read from its last request). */
  allResultsOf(agent: string): unknown[];
  /** agent.json records under the tree directory, in spawn order. */
  readRecords(): Promise<AgentRecordV1[]>;
  /** pids of every run's `run_start` (the child pi processes), across the tree. */
  runPids(): Promise<number[]>;
  /** Live processes of this scenario (root, wrappers, children, tool grandchildren). */
  scenarioPids(): number[];
  /** Scenario pids still alive after waiting up to `timeoutMs` (default 5 s) for them to exit. */
  survivors(timeoutMs?: number): Promise<number[]>;
  /** Kills what is left of the scenario (by pid), closes the LLM, removes the home. */
  cleanup(): Promise<void>;
}

/** Reads every agent.json below `<treeDir>/agents`, in spawn order. */
export async function readRecords(treeDir: string): Promise<AgentRecordV1[]> {
  const records: AgentRecordV1[] = [];
  const walk = (dir: string) => {
    for (const entry of safeReaddir(dir)) {
      if (!entry.isDirectory()) continue;
      const sub = path.join(dir, entry.name);
      const file = path.join(sub, "agent.json");
      if (fs.existsSync(file)) records.push(JSON.parse(fs.readFileSync(file, "utf8")) as AgentRecordV1);
      if (!["runs", "reports", "inbox"].includes(entry.name)) walk(sub);
    }
  };
  walk(path.join(treeDir, "agents"));
  return records.sort((a, b) => a.spawnSeq - b.spawnSeq);
}

/** The `run_start` pids of every `events.jsonl` below `<treeDir>/agents`. */
export function readRunPids(treeDir: string): number[] {
  const pids: number[] = [];
  const walk = (dir: string) => {
    for (const entry of safeReaddir(dir)) {
      const sub = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(sub);
      else if (entry.name === "events.jsonl") {
        for (const line of fs.readFileSync(sub, "utf8").split("\n")) {
          try {
            const rec = JSON.parse(line) as { type?: string; pid?: number };
            if (rec.type === "run_start" && typeof rec.pid === "number") pids.push(rec.pid);
          } catch {
            // partial line
          }
        }
      }
    }
  };
  walk(path.join(treeDir, "agents"));
  return pids;
}

function safeReaddir(dir: string): fs.Dirent[] {
  try {
    return fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startTree(opts: TreeOptions = {}): Promise<TreeHarness> {
  const llm = await startScriptedLlm();
  let home: PiHome;
  try {
    home = await makePiHome({
      llmUrl: llm.url,
      retry: opts.retry,
      ...(opts.models !== undefined && { models: opts.models }),
      ...(opts.extraSettings && { extraSettings: opts.extraSettings }),
      ...(opts.env && { env: opts.env }),
    });
  } catch (err) {
    await llm.close();
    throw err;
  }
  const baseDir = opts.baseDir ?? path.join(home.root, "trees");
  fs.mkdirSync(baseDir, { recursive: true });
  const tree = routeByAgent(llm, opts.scripts ?? {});
  const marker = `PI_CODING_AGENT_DIR=${home.dir}`;

  const treeDir = () => {
    const dirs = safeReaddir(baseDir).filter((e) => e.isDirectory());
    if (dirs.length !== 1) throw new Error(`expected one tree directory in ${baseDir}, found ${dirs.length}`);
    return path.join(baseDir, dirs[0]!.name);
  };
  const requestsOf = (agent: string) => tree.requests.get(agent) ?? [];
  const scenarioPids = () => processesWithEnvSync(marker);
  const runPids = async () => {
    const dirs = safeReaddir(baseDir).filter((e) => e.isDirectory());
    return dirs.flatMap((d) => readRunPids(path.join(baseDir, d.name)));
  };

  return {
    llm,
    home,
    tree,
    baseDir,
    treeDir,
    runRoot: (prompt, o = {}) =>
      home.runPi(["--mode", "json", "-np", "-e", REPO_ROOT, ...(o.args ?? []), prompt], {
        timeoutMs: o.timeoutMs ?? 60_000,
        env: { ...home.env, PI_SUBAGENTS_DIR: baseDir, ...o.env },
      }),
    requestsOf,
    rootResults: () => requestsOf("/root").map((req, i) => (i === 0 ? undefined : lastToolResult(req))),
    allResultsOf: (agent) => {
      const last = requestsOf(agent).at(-1);
      return last ? toolResults(last) : [];
    },
    readRecords: async () => readRecords(treeDir()),
    runPids,
    scenarioPids,
    async survivors(timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        // Run pids (events.jsonl) and wrappers carry the marker too, so this covers them;
        // a bare liveness check of run pids could blame an unrelated process that reused one.
        const alive = scenarioPids();
        if (alive.length === 0 || Date.now() >= deadline) return alive;
        await sleep(50);
      }
    },
    async cleanup() {
      await killAll();
      for (const pid of scenarioPids()) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
      await llm.close();
      await home.cleanup();
    },
  };
}

/** Describes a live pid for failure messages (`pid cmdline`). */
export function describePid(pid: number): string {
  const args = processArgs(pid);
  return args ? `${pid} ${args.join(" ")}` : `${pid} (gone)`;
}
