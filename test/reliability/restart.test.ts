/**
 * Area 7 — restart. A parent restarted while its children run restores truthful statuses
 * (a finished turn keeps its outcome, a turn still finishing is waited for, a turn that left
 * nothing is `interrupted`, never `running` forever) and gives each notice once.
 */
import { spawn } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ResultV1 } from "../../src/contracts/result.js";
import type { AgentStatus } from "../../src/contracts/tree.js";
import { emptyUsage } from "../../src/contracts/usage.js";
import { restore } from "../../src/extension/turns/restore.js";
import { TreeRuntime } from "../../src/extension/turns/runtime.js";
import { writeResultAtomic } from "../../src/wrapper/artifacts.js";
import { REPO_ROOT } from "../support/pi-home.js";
import { killAll } from "../support/processes.js";
import { killLeftovers, type RuntimeCase, runtimeCase, settleLeftovers } from "./support.js";

afterEach(async () => {
  await killAll();
  await killLeftovers();
});

const LIMITS = { maxActiveChildTurns: 3, maxDepth: 3, maxSpawns: 64, turnTimeoutMs: 60_000 };

/** The statuses of an agent with no turn running or queued. */
const FINISHED_STATUSES: readonly AgentStatus[] = ["completed", "errored", "aborted", "interrupted", "shutdown"];

/** A new process's runtime over the same tree directory, restored as on session_start. */
async function restarted(rc: RuntimeCase): Promise<TreeRuntime> {
  const runtime = rc.track(
    new TreeRuntime({ self: "/root", isRoot: true, treeDir: rc.tree.root }, rc.tree, LIMITS, rc.dir),
  );
  await restore(runtime, []);
  return runtime;
}

function result(status: ResultV1["status"], finalText: string): ResultV1 {
  const now = new Date().toISOString();
  return {
    version: 1,
    runId: "r",
    status,
    exitCode: status === "completed" ? 0 : 1,
    finalText,
    usage: emptyUsage(),
    turns: 1,
    toolCalls: 0,
    startedAt: now,
    endedAt: now,
    durationMs: 1,
    childExitCode: 0,
    childSignal: null,
    forcedExit: false,
  };
}

/** Writes `name` as the previous process left it: running its first turn. */
async function leftRunning(rc: RuntimeCase, name: string, outcome?: ResultV1): Promise<void> {
  const { record } = rc.child(name);
  record.status = "running";
  record.runs = ["0001-spawn"];
  record.runningParts = record.inbox;
  record.inbox = [];
  const runDir = path.join(rc.tree.agentDir(record.path), "runs", "0001-spawn");
  await mkdir(runDir, { recursive: true });
  // Its wrapper started (it read this): a run folder without one never started, and is started again.
  await writeFile(path.join(runDir, "meta.json"), "{}\n");
  if (outcome) await writeResultAtomic(path.join(runDir, "result.json"), outcome);
  await rc.tree.writeRecord(record);
}

describe("area 7: the parent restarts while children run", () => {
  it("4 children left in 4 states: completed / errored from their result.json, interrupted without one, closed kept; 2 notices once, 0 on a second restart", async () => {
    const rc = await runtimeCase({ steps: [] });
    try {
      await leftRunning(rc, "done", result("completed", "all good"));
      await leftRunning(rc, "broke", { ...result("failed", ""), errorMessage: "pi crashed" });
      await leftRunning(rc, "lost");
      const { record: closed } = rc.child("closed");
      Object.assign(closed, { status: "shutdown", lastTurnStatus: "completed" });
      await rc.tree.writeRecord(closed);

      const first = await restarted(rc);
      const status = (name: string) => first.children.get(`/root/${name}`)!.record;
      expect(status("done")).toMatchObject({ status: "completed", notifiedRun: "0001-spawn" });
      expect(status("broke")).toMatchObject({ status: "errored", health: "unhealthy", lastReason: "pi crashed" });
      expect(status("lost")).toMatchObject({
        status: "interrupted",
        lastReason: "the parent went away and the turn's wrapper left no result.json",
      });
      // Its prompt never reached a session: it goes first with the next turn.
      expect(status("lost").undelivered.map((p) => p.text)).toEqual(["task for lost"]);
      expect(status("closed").status).toBe("shutdown");
      const notices = first.mailbox.take(10);
      expect(notices.map((n) => [n.agent_name, n.type])).toEqual([
        ["/root/done", "completed"],
        ["/root/broke", "errored"],
      ]);
      await first.noticesHeld(first.deliveryKeysOf(notices));
      for (const { record } of first.children.values()) expect(FINISHED_STATUSES).toContain(record.status);

      const second = await restarted(rc);
      expect(second.mailbox.pending).toBe(0);
      expect(second.children.get("/root/done")!.record.status).toBe("completed");
    } finally {
      await rc.dispose();
    }
  });

  it("a wrapper still at work when the parent is killed is re-attached at once (never waited for): running, then its real outcome, its notice once", async () => {
    // The child answers at once, then lingers; its wrapper has decided `completed` and waits
    // out the grace period when the parent dies. Guessing `interrupted` would be a lie, and
    // waiting for it would keep the restarted root from its first prompt.
    const rc = await runtimeCase({
      steps: [{ assistant: { text: "finished before the crash", stopReason: "stop" } }, { linger: null }],
    });
    try {
      const template = rc.child("slowpoke").record;
      rc.runtime.children.clear();
      const script = `
        const { TreeDir } = await import(${JSON.stringify(path.join(REPO_ROOT, "dist/extension/tree/tree-dir.js"))});
        const { TreeRuntime } = await import(${JSON.stringify(path.join(REPO_ROOT, "dist/extension/turns/runtime.js"))});
        const tree = new TreeDir(${JSON.stringify(rc.tree.root)});
        const rt = new TreeRuntime({ self: "/root", isRoot: true, treeDir: tree.root }, tree, ${JSON.stringify(LIMITS)}, ${JSON.stringify(rc.dir)});
        const state = { record: JSON.parse(process.env.TEMPLATE_RECORD), phase: { name: "idle" } };
        rt.children.set(state.record.path, state);
        await rt.requestTurn(state, "spawn");
        console.log("started");
        setInterval(() => {}, 1000);
      `;
      const parent = spawn(process.execPath, ["--input-type=module", "-e", script], {
        stdio: ["ignore", "pipe", "inherit"],
        env: { ...process.env, TEMPLATE_RECORD: JSON.stringify(template) },
      });
      await new Promise<void>((resolve, reject) => {
        parent.stdout.on("data", (d: Buffer) => d.toString().includes("started") && resolve());
        parent.once("exit", (code) => reject(new Error(`parent exited early (${code})`)));
      });
      const runDir = path.join(rc.tree.agentDir("/root/slowpoke"), "runs", "0001-spawn");
      await vi.waitFor(
        async () => expect(await readFile(path.join(runDir, "events.jsonl"), "utf8")).toContain("assistant_text"),
        { timeout: 15_000 },
      );
      parent.kill("SIGKILL");
      await new Promise((r) => parent.once("exit", r));

      const started = Date.now();
      const runtime = await restarted(rc);
      const restoreMs = Date.now() - started;
      console.log(`[reliability] restore took ${restoreMs} ms with a detached wrapper at work`);
      expect(restoreMs).toBeLessThan(1000);
      expect(runtime.children.get("/root/slowpoke")!.phase.name).toBe("running");
      await vi.waitFor(() => expect(runtime.mailbox.pending).toBe(1), { timeout: 20_000 });
      expect(runtime.children.get("/root/slowpoke")!.record).toMatchObject({ status: "completed" });
      const taken = runtime.mailbox.take(5);
      expect(taken).toMatchObject([
        { agent_name: "/root/slowpoke", type: "completed", report: "finished before the crash" },
      ]);
      await runtime.noticesHeld(runtime.deliveryKeysOf(taken));
      expect((await restarted(rc)).mailbox.pending).toBe(0);
      expect(await settleLeftovers()).toEqual([]);
    } finally {
      await rc.dispose();
    }
  });

  it("a process ending (session_shutdown) keeps finished children's statuses", async () => {
    const rc = await runtimeCase({ steps: [{ assistant: { text: "done", stopReason: "stop" } }] });
    try {
      const state = rc.child("finisher");
      await rc.runtime.requestTurn(state, "spawn");
      await vi.waitFor(() => expect(rc.runtime.mailbox.pending).toBe(1), { timeout: 20_000 });
      await rc.runtime.shutdown();
      expect((await rc.tree.readRecord("/root/finisher"))!.status).toBe("completed");
      const runtime = await restarted(rc);
      expect(runtime.children.get("/root/finisher")!.record.status).toBe("completed");
      // The notice nobody read comes back once (deliveries.ts); once read, never again.
      const taken = runtime.mailbox.take(5);
      expect(taken.map((n) => n.agent_name)).toEqual(["/root/finisher"]);
      await runtime.noticesHeld(runtime.deliveryKeysOf(taken));
      expect((await restarted(rc)).mailbox.pending).toBe(0);
    } finally {
      await rc.dispose();
    }
  });
});
