/**
 * A TreeRuntime for unit tests: a temp tree directory and the fake launcher, so every turn
 * is finished by the test itself (no process, no sleep).
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { AgentRecordV1 } from "../../src/contracts/tree.js";
import type { TreeLimits } from "../../src/extension/config.js";
import { TreeDir } from "../../src/extension/tree/tree-dir.js";
import { childState } from "../../src/extension/turns/child-state.js";
import { type ChildState, TreeRuntime } from "../../src/extension/turns/runtime.js";
import type { Clock } from "../../src/lib/clock.js";
import { FakeTurns } from "./fake-turns.js";
import { agentRecord } from "./records.js";

export interface RuntimeHarness {
  tree: TreeDir;
  turns: FakeTurns;
  runtime: TreeRuntime;
  /** A direct child of /root, recorded, whose first turn carries `task`; not started yet. */
  child(name: string, task?: string, overrides?: Partial<AgentRecordV1>): Promise<ChildState>;
  /** A new runtime (a restarted process of /root) over the same tree directory and launcher. */
  restarted(): TreeRuntime;
  /** Every line the runtimes reported to the user (hooks.problem), in order. */
  problems: string[];
}

const dirs: string[] = [];
const runtimes: TreeRuntime[] = [];

/** Removes every tree directory the harness made (call in afterEach). */
export async function cleanupRuntimes(): Promise<void> {
  // A record write still landing would re-create a folder being removed (ENOTEMPTY).
  await Promise.all(runtimes.splice(0).map((runtime) => runtime.writesSettled()));
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
}

export async function runtimeHarness(
  limits: Partial<TreeLimits> = {},
  tree?: (root: string) => TreeDir,
  clock?: Clock,
): Promise<RuntimeHarness> {
  const root = await mkdtemp(path.join(os.tmpdir(), "runtime-test-"));
  dirs.push(root);
  const treeDir = tree ? tree(root) : new TreeDir(root);
  await treeDir.init("session");
  const turns = new FakeTurns();
  const all: TreeLimits = { maxActiveChildTurns: 3, maxDepth: 3, maxSpawns: 64, turnTimeoutMs: 60_000, ...limits };
  const problems: string[] = [];
  const make = () => {
    const made = new TreeRuntime({ self: "/root", isRoot: true, treeDir: root }, treeDir, all, root, {
      turns,
      hooks: { problem: (line) => problems.push(line) },
      ...(clock && { clock }),
    });
    runtimes.push(made);
    return made;
  };
  const runtime = make();
  let seq = 0;
  return {
    tree: treeDir,
    turns,
    runtime,
    async child(name, task = `task for ${name}`, overrides = {}) {
      const record = agentRecord({
        path: `/root/${name}`,
        nickname: `N${++seq}`,
        spawnSeq: seq,
        status: "pending_init",
        sessionPath: path.join(treeDir.agentDir(`/root/${name}`), "session.jsonl"),
        inbox: [{ kind: "NEW_TASK", from: "/root", text: task, sentAt: new Date().toISOString() }],
        ...overrides,
      });
      const state: ChildState = childState(record);
      runtime.children.set(record.path, state);
      await treeDir.writeRecord(record);
      return state;
    },
    restarted: make,
    problems,
  };
}
