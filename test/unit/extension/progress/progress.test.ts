import { appendFile, mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { emptyUsage } from "../../../../src/contracts/usage.js";
import { treeSpend } from "../../../../src/extension/progress/budget.js";
import { progressFields, TreeProgress } from "../../../../src/extension/progress/progress.js";
import { TreeDir } from "../../../../src/extension/tree/tree-dir.js";
import { agentRecord } from "../../../support/records.js";

let dir: string;
let tree: TreeDir;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "psa-progress-"));
  tree = new TreeDir(path.join(dir, "tree"));
  await tree.init("session-1");
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const usage = (tokens: number, cost: number) => {
  const u = emptyUsage();
  u.input = tokens;
  u.totalTokens = tokens;
  u.cost.total = cost;
  return u;
};

async function appendEvents(agentPath: string, run: string, ...records: object[]): Promise<void> {
  const runDir = path.join(tree.agentDir(agentPath), "runs", run);
  await mkdir(runDir, { recursive: true });
  await appendFile(path.join(runDir, "events.jsonl"), records.map((r) => `${JSON.stringify(r)}\n`).join(""));
}

describe("TreeProgress", () => {
  it("shows a grandchild's queue position from the queue its parent's process publishes", async () => {
    await tree.writeRecord(agentRecord({ path: "/root/mid", nickname: "Euclid", spawnSeq: 1, status: "running" }));
    for (const [i, name] of ["a", "b", "c"].entries()) {
      await tree.writeRecord(
        agentRecord({
          path: `/root/mid/${name}`,
          nickname: `N${i}`,
          spawnSeq: 2 + i,
          status: name === "a" ? "running" : "pending_init",
        }),
      );
    }
    await tree.writeQueue("/root/mid", ["/root/mid/c", "/root/mid/b"]);
    const positions = async () =>
      new Map((await new TreeProgress(tree).snapshot("/root")).map((a) => [a.record.path, a.queuePosition]));
    expect(await positions()).toEqual(
      new Map([
        ["/root/mid", undefined],
        ["/root/mid/a", undefined],
        ["/root/mid/b", 2],
        ["/root/mid/c", 1],
      ]),
    );
    // A stale entry for an agent that is no longer pending shows no position.
    await tree.writeRecord(agentRecord({ path: "/root/mid/c", nickname: "N2", spawnSeq: 4, status: "interrupted" }));
    expect((await positions()).get("/root/mid/c")).toBeUndefined();
  });

  it("adds a running turn's usage so far to its record, rolls usage up per subtree, and tracks tools", async () => {
    // /root/lead finished a turn (100 tokens) and runs another; its child /root/lead/leaf finished (50).
    await tree.writeRecord(
      agentRecord({
        path: "/root/lead",
        nickname: "Euclid",
        spawnSeq: 1,
        status: "running",
        runs: ["0001-spawn", "0002-followup"],
        usage: usage(100, 0.1),
      }),
    );
    await tree.writeRecord(
      agentRecord({
        path: "/root/lead/leaf",
        nickname: "Hypatia",
        spawnSeq: 2,
        status: "completed",
        runs: ["0001-spawn"],
        usage: usage(50, 0.05),
      }),
    );
    await tree.writeRecord(
      agentRecord({ path: "/root/queued", nickname: "Ptolemy", spawnSeq: 3, status: "pending_init" }),
    );
    await appendEvents(
      "/root/lead",
      "0002-followup",
      { type: "run_start", ts: 10_000 },
      { type: "assistant_text", ts: 10_500, text: "", usage: usage(30, 0.03) },
      { type: "tool_call", ts: 10_600, toolCallId: "c", toolName: "bash", args: {} },
    );
    await appendEvents(
      "/root/lead/leaf",
      "0001-spawn",
      { type: "run_start", ts: 1_000 },
      { type: "assistant_text", ts: 2_000, text: "", usage: usage(50, 0.05) },
      { type: "run_end", ts: 4_000, status: "completed", exitCode: 0 },
    );

    const progress = new TreeProgress(tree, (p) => (p === "/root/queued" ? 2 : undefined));
    const snap = await progress.snapshot("/root", { now: () => 13_000 });
    const byPath = new Map(snap.map((a) => [a.record.path, a]));
    const lead = byPath.get("/root/lead")!;
    expect(lead.usage.totalTokens).toBe(130);
    expect(lead.subtreeUsage).toMatchObject({ total_tokens: 180, cost: 0.18 });
    expect(progressFields(lead)).toEqual({ elapsed_ms: 3000, turns: 1, tool_calls: 1, current_tool: "bash" });
    const leaf = byPath.get("/root/lead/leaf")!;
    // A finished turn's usage is already in the record: not counted twice.
    expect(leaf.usage.totalTokens).toBe(50);
    expect(progressFields(leaf)).toEqual({ elapsed_ms: 3000, turns: 1, tool_calls: 0 });
    expect(byPath.get("/root/queued")).toMatchObject({ queuePosition: 2 });
    expect(byPath.get("/root/queued")!.elapsedMs).toBeUndefined();
    expect(await treeSpend(progress)).toMatchObject({ total_tokens: 180, cost: 0.18 });

    // The running turn goes on: the next snapshot reads only what was appended.
    await appendEvents(
      "/root/lead",
      "0002-followup",
      { type: "tool_result", ts: 11_000, toolCallId: "c", toolName: "bash", isError: false },
      { type: "assistant_text", ts: 12_000, text: "", usage: usage(20, 0.02) },
    );
    const later = (await progress.snapshot("/root/lead", { now: () => 14_000 })).map((a) => a.record.path);
    expect(later).toEqual(["/root/lead/leaf"]);
    const again = (await progress.snapshot("/root")).find((a) => a.record.path === "/root/lead")!;
    expect(again.usage.totalTokens).toBe(150);
    expect(progressFields(again).current_tool).toBeUndefined();
    expect(progressFields(again).turns).toBe(2);
  });

  it("counts the agent this process is by its own answers when the wrapper has not written them yet", async () => {
    // /root/self runs its first turn; its answer so far (35 tokens) reached pi before events.jsonl.
    for (const [i, name] of ["self", "other"].entries()) {
      await tree.writeRecord(
        agentRecord({
          path: `/root/${name}`,
          nickname: `N${i}`,
          spawnSeq: 1 + i,
          status: "running",
          runs: ["0001-spawn"],
        }),
      );
      await appendEvents(`/root/${name}`, "0001-spawn", { type: "run_start", ts: 1_000 });
    }
    const own = { path: "/root/self", usage: usage(35, 0.035) };
    const progress = new TreeProgress(tree, undefined, undefined, undefined, () => own);
    const totals = async () =>
      new Map((await progress.snapshot("/root")).map((a) => [a.record.path, a.usage.totalTokens]));
    expect(await totals()).toEqual(
      new Map([
        ["/root/self", 35],
        ["/root/other", 0],
      ]),
    );
    expect(await treeSpend(progress)).toMatchObject({ total_tokens: 35, cost: 0.035 });
    // Once events.jsonl holds as much, or more, it is counted once, not added to the own count.
    await appendEvents("/root/self", "0001-spawn", {
      type: "assistant_text",
      ts: 2_000,
      text: "",
      usage: usage(35, 0.035),
    });
    expect((await totals()).get("/root/self")).toBe(35);
    await appendEvents("/root/self", "0001-spawn", {
      type: "assistant_text",
      ts: 3_000,
      text: "",
      usage: usage(10, 0.01),
    });
    expect((await totals()).get("/root/self")).toBe(45);
    // An ended turn's usage is the record's: the own count is not added to it.
    await tree.writeRecord(
      agentRecord({
        path: "/root/self",
        nickname: "N0",
        spawnSeq: 1,
        status: "completed",
        runs: ["0001-spawn"],
        usage: usage(45, 0.045),
      }),
    );
    expect((await totals()).get("/root/self")).toBe(45);
  });
});
