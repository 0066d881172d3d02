/**
 * Shared by the reliability suite: a tag that every process a test starts inherits (so
 * "processes left over" is counted from /proc, not guessed from the pids a test happened to
 * learn), a stand-in `pi` that writes exact bytes, and the tree runtime wired to the real
 * launcher, wrapper and fake pi.
 */
import { randomUUID } from "node:crypto";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { TreeDir } from "../../src/extension/tree/tree-dir.js";
import { type ChildState, childState } from "../../src/extension/turns/child-state.js";
import { TreeRuntime } from "../../src/extension/turns/runtime.js";
import { processesWithEnv } from "../../src/lib/process.js";
import { agentRecord } from "../support/records.js";
import { FAKE_PI_DIR } from "../support/wrapper-harness.js";

/** Every process this worker starts carries it in its environment (inherited down the tree). */
export const TAG_ENV = "PSA_RELIABILITY_TAG";
export const TAG = randomUUID();
process.env[TAG_ENV] = TAG;

export const FAKE_PI_BIN = path.join(FAKE_PI_DIR, "pi");
/** Makes the fake pi run the wrapper's real task extension (its orphan guard included). */
export const LOAD_TASK_EXTENSION = { FAKE_PI_LOAD_EXTENSIONS: "task-extension.js" };

/** Live processes (zombies excluded) whose environment holds this worker's tag. Linux /proc. */
export function leftoverProcesses(): Promise<number[]> {
  return processesWithEnv(`${TAG_ENV}=${TAG}`);
}

/** Polls until no tagged process is left (or `ms` pass); returns what is left. */
export async function settleLeftovers(ms = 8000): Promise<number[]> {
  const deadline = Date.now() + ms;
  let left = await leftoverProcesses();
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    left = await leftoverProcesses();
  }
  return left;
}

/** SIGKILLs tagged processes (a failed test must not leak into the next). */
export async function killLeftovers(): Promise<void> {
  for (const pid of await leftoverProcesses()) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
}

/**
 * A `pi` that ignores its arguments and writes the bytes of `stdout` to its stdout as they
 * are, then exits: garbage no scenario can express (invalid UTF-8, no final newline).
 */
export async function bytesPi(dir: string, stdout: Buffer): Promise<string> {
  const file = path.join(dir, "bytes-pi.mjs");
  const payload = path.join(dir, "bytes-pi.out");
  await writeFile(payload, stdout);
  await writeFile(
    file,
    `#!${process.execPath}\nimport fs from "node:fs";\nprocess.stdout.write(fs.readFileSync(${JSON.stringify(payload)}), () => process.exit(0));\n`,
  );
  await chmod(file, 0o755);
  return file;
}

/** One pi json-mode assistant message_end line. */
export function messageEnd(text: string, stopReason = "stop"): string {
  const usage = {
    input: 1,
    output: 1,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 2,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
  return JSON.stringify({
    type: "message_end",
    message: {
      role: "assistant",
      content: [{ type: "text", text }],
      api: "x",
      provider: "fake",
      model: "fast",
      usage,
      stopReason,
      timestamp: 1,
    },
  });
}

export interface RuntimeCase {
  dir: string;
  tree: TreeDir;
  runtime: TreeRuntime;
  /** A direct child of /root whose first turn will carry `message`. */
  child(name: string, message?: string): ChildState;
  /** Another runtime on this tree (a restarted process): dispose shuts it down too. */
  track(runtime: TreeRuntime): TreeRuntime;
  dispose(): Promise<void>;
}

const LIMITS = { maxActiveChildTurns: 3, maxDepth: 3, maxSpawns: 64, turnTimeoutMs: 60_000 };

/**
 * The extension's TreeRuntime on a temp tree directory, with the real launcher: each turn
 * is a real `subagent-wrapper` running the fake pi (PI_SUBAGENTS_PI_BIN) on `scenario`.
 */
export async function runtimeCase(scenario: object, extraEnv: Record<string, string> = {}): Promise<RuntimeCase> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "psa-reliability-"));
  const saved: Record<string, string | undefined> = {};
  const env: Record<string, string> = {
    PI_SUBAGENTS_PI_BIN: FAKE_PI_BIN,
    FAKE_PI_SCRIPT: JSON.stringify(scenario),
    TMPDIR: dir,
    ...extraEnv,
  };
  for (const [name, value] of Object.entries(env)) {
    saved[name] = process.env[name];
    process.env[name] = value;
  }
  const tree = new TreeDir(path.join(dir, "tree"));
  await tree.init("session");
  const runtime = new TreeRuntime({ self: "/root", isRoot: true, treeDir: tree.root }, tree, LIMITS, dir);
  const runtimes = [runtime];
  let seq = 0;
  return {
    dir,
    tree,
    runtime,
    track(other) {
      runtimes.push(other);
      return other;
    },
    child(name, message = `task for ${name}`) {
      const record = agentRecord({
        path: `/root/${name}`,
        nickname: `N${++seq}`,
        spawnSeq: seq,
        status: "pending_init",
        sessionPath: path.join(tree.agentDir(`/root/${name}`), "session.jsonl"),
        inbox: [{ kind: "NEW_TASK", from: "/root", text: message, sentAt: new Date().toISOString() }],
      });
      const state = childState(record);
      runtime.children.set(record.path, state);
      return state;
    },
    async dispose() {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      // A test that failed half-way leaves turns running, and a runtime may still be landing a
      // queue or record write: removing the folder under them would fail (ENOTEMPTY) or leave
      // it re-created. shutdown stops the turns and waits for every write.
      await Promise.all(runtimes.map((each) => each.shutdown()));
      await rm(dir, { recursive: true, force: true, maxRetries: 3, retryDelay: 100 });
    },
  };
}
