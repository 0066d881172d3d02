/**
 * A turn that has ended but is still being recorded (report saved, record written) must keep
 * counting as active: otherwise a wait_agent running in that window answers `idle: true` and
 * the notice lands a moment later. Seen under load in the e2e scenarios 03 and 05.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ResultV1 } from "../../../src/contracts/result.js";
import type { AgentRecordV1 } from "../../../src/contracts/tree.js";
import { emptyUsage } from "../../../src/contracts/usage.js";
import { TreeDir } from "../../../src/extension/tree/tree-dir.js";
import { agentRecord } from "../../support/records.js";

let finishTurn: ((result: ResultV1 | undefined) => void) | undefined;
vi.mock("../../../src/extension/turns/launcher.js", () => ({
  startTurn: async () => ({
    runDir: "/nowhere",
    runName: "0001-spawn",
    pid: undefined,
    finished: new Promise<ResultV1 | undefined>((resolve) => (finishTurn = resolve)),
    stop: () => undefined,
  }),
}));

const { TreeRuntime } = await import("../../../src/extension/turns/runtime.js");

/** A tree directory whose record writes can be held. */
class SlowTree extends TreeDir {
  hold: Promise<void> | undefined;
  override async writeRecord(record: AgentRecordV1): Promise<void> {
    if (this.hold) await this.hold;
    return super.writeRecord(record);
  }
}

let dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  dirs = [];
});

function record(): AgentRecordV1 {
  return agentRecord({
    reasoning: "low",
    status: "pending_init",
    sessionPath: "/nowhere/session.jsonl",
    inbox: [{ kind: "NEW_TASK", from: "/root", text: "go", sentAt: new Date().toISOString() }],
  });
}

describe("a finished turn being recorded", () => {
  it("still counts as active until its notice is in the mailbox", async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), "runtime-settling-"));
    dirs.push(root);
    const tree = new SlowTree(root);
    await tree.init("session");
    const rt = new TreeRuntime(
      { self: "/root", isRoot: true, treeDir: root },
      tree,
      { maxActiveChildTurns: 3, maxDepth: 3, maxSpawns: 64, turnTimeoutMs: 60_000 },
      root,
    );
    const state = { record: record() };
    rt.children.set(state.record.path, state);
    await rt.requestTurn(state, "spawn");
    expect(rt.hasActiveTurns()).toBe(true);

    let release!: () => void;
    tree.hold = new Promise<void>((resolve) => (release = resolve));
    finishTurn!({ status: "completed", finalText: "done", usage: emptyUsage(), turns: 1 } as unknown as ResultV1);
    await new Promise((r) => setTimeout(r, 20));
    // Ended, not yet recorded: no notice yet, and not idle either.
    expect(rt.mailbox.pending).toBe(0);
    expect(rt.hasActiveTurns()).toBe(true);

    tree.hold = undefined;
    release();
    await vi.waitFor(() => expect(rt.mailbox.pending).toBe(1));
    expect(rt.hasActiveTurns()).toBe(false);
    expect(rt.mailbox.take(5)[0]).toMatchObject({ agent_name: "/root/worker", type: "completed", report: "done" });
  });
});
