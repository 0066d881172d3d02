/**
 * Area 7b — exactly once, without windows. A root process (the extension's real runtime from
 * dist/ in a node process, real wrappers over the fake pi) is SIGKILLed by its own fault hook
 * (PI_SUBAGENTS_TEST_KILL_AT) at a step of a turn's start or of a notice's hand-over; the
 * next root on the tree directory must run the turn once (one run folder, one pi start) and
 * give its notice once (the "session" a root writes holds it once).
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { restore } from "../../src/extension/turns/restore.js";
import { TreeRuntime } from "../../src/extension/turns/runtime.js";
import { REPO_ROOT } from "../support/pi-home.js";
import { killAll } from "../support/processes.js";
import { killLeftovers, type RuntimeCase, runtimeCase, settleLeftovers } from "./support.js";

afterEach(async () => {
  await killAll();
  await killLeftovers();
});

const LIMITS = { maxActiveChildTurns: 3, maxDepth: 3, maxSpawns: 64, turnTimeoutMs: 60_000 };

/**
 * A root's process: restores the tree (starting the queued turn), then reads its mailbox as
 * wait_agent does — the notices go into its session (a JSON Lines file, written as pi writes
 * a tool result), and only then are they recorded as held. Killed by its fault hook at `step`.
 */
function rootScript(treeDir: string, cwd: string, sessionFile: string): string {
  const js = (file: string) => JSON.stringify(path.join(REPO_ROOT, "dist", "extension", file));
  return `
    import fs from "node:fs";
    const { TreeDir } = await import(${js("tree/tree-dir.js")});
    const { TreeRuntime } = await import(${js("turns/runtime.js")});
    const { restore } = await import(${js("turns/restore.js")});
    const { killAtStep } = await import(${js("ui/durable-exit.js")});
    const sessionFile = ${JSON.stringify(sessionFile)};
    const entries = () => fs.existsSync(sessionFile) ? fs.readFileSync(sessionFile, "utf8").split("\\n").filter(Boolean).map((l) => JSON.parse(l)) : [];
    const tree = new TreeDir(${JSON.stringify(treeDir)});
    const rt = new TreeRuntime({ self: "/root", isRoot: true, treeDir: tree.root }, tree, ${JSON.stringify(LIMITS)}, ${JSON.stringify(cwd)}, { fault: killAtStep(), hooks: { problem: () => undefined } });
    await restore(rt, entries());
    setInterval(async () => {
      const notices = rt.mailbox.take(10);
      if (notices.length === 0) return;
      const keys = rt.deliveryKeysOf(notices);
      // Killed with the notices handed out, before pi could write them anywhere.
      if (process.env.KILL_BEFORE_SESSION) process.kill(process.pid, "SIGKILL");
      fs.appendFileSync(sessionFile, JSON.stringify({ type: "message", message: { role: "toolResult", toolName: "wait_agent", details: { notices, delivery_keys: keys } } }) + "\\n");
      await rt.noticesHeld(keys);
    }, 50);
  `;
}

/** Starts a root process; resolves with how it ended once it has (its fault hook killed it). */
function rootUntilKilled(rc: RuntimeCase, sessionFile: string, step: string): Promise<NodeJS.Signals | null> {
  const env = step === "handed" ? { KILL_BEFORE_SESSION: "1" } : { PI_SUBAGENTS_TEST_KILL_AT: step };
  const child = spawn(process.execPath, ["--input-type=module", "-e", rootScript(rc.tree.root, rc.dir, sessionFile)], {
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, ...env },
  });
  return new Promise((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
}

/** The next root, in this process: restored from the tree directory and the session the killed one wrote. */
async function nextRoot(rc: RuntimeCase, sessionFile: string): Promise<TreeRuntime> {
  const runtime = rc.track(
    new TreeRuntime({ self: "/root", isRoot: true, treeDir: rc.tree.root }, rc.tree, LIMITS, rc.dir, {
      hooks: { problem: () => undefined },
    }),
  );
  await restore(runtime, sessionEntries(sessionFile));
  return runtime;
}

function sessionEntries(sessionFile: string): unknown[] {
  if (!fs.existsSync(sessionFile)) return [];
  return fs
    .readFileSync(sessionFile, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as unknown);
}

/** How many notices of `agent` the session holds (each tool result's). */
function heldInSession(sessionFile: string, agent: string): number {
  let count = 0;
  for (const entry of sessionEntries(sessionFile) as Array<{
    message?: { details?: { notices?: Array<{ agent_name: string }> } };
  }>)
    count += (entry.message?.details?.notices ?? []).filter((notice) => notice.agent_name === agent).length;
  return count;
}

async function piStarts(file: string): Promise<number> {
  const text = await readFile(file, "utf8").catch(() => "");
  return text.split("\n").filter(Boolean).length;
}

describe("area 7b: exactly once — the root killed while a turn starts", () => {
  it.each(["wrapper_spawned", "run_recorded"])(
    "killed at %s: the next root runs the turn once (one run folder, one pi start) and gives its notice once",
    async (step) => {
      const rc = await runtimeCase({ steps: [{ sleep: 1500 }, { echoTask: true }] });
      const records = path.join(rc.dir, "pi-starts.jsonl");
      process.env.FAKE_PI_RECORDS = records;
      const sessionFile = path.join(rc.dir, "root-session.jsonl");
      try {
        const state = rc.child("worker", "count me once");
        await rc.tree.writeRecord(state.record);
        // Its queued turn starts at the root's restore; the fault hook kills the root at `step`.
        expect(await rootUntilKilled(rc, sessionFile, step)).toBe("SIGKILL");

        const runtime = await nextRoot(rc, sessionFile);
        await vi.waitFor(() => expect(runtime.mailbox.pending).toBe(1), { timeout: 30_000 });
        const notices = runtime.mailbox.take(5);
        expect(notices).toMatchObject([
          { agent_name: "/root/worker", type: "completed", report: expect.stringContaining("count me once") },
        ]);
        await runtime.noticesHeld(runtime.deliveryKeysOf(notices));
        expect(await settleLeftovers()).toEqual([]);

        const runs = fs.readdirSync(path.join(rc.tree.agentDir("/root/worker"), "runs"));
        const record = await rc.tree.readRecord("/root/worker");
        // A run folder the killed root made before its wrapper could start is kept, never reused.
        expect(record?.runs).toHaveLength(1);
        expect(
          runs.filter((run) => fs.existsSync(path.join(rc.tree.agentDir("/root/worker"), "runs", run, "result.json"))),
        ).toEqual(record?.runs);
        expect(await piStarts(records)).toBe(1);
        console.log(`[reliability] killed at ${step}: ${runs.length} run folder(s), 1 pi start, 1 notice`);
        expect((await nextRoot(rc, sessionFile)).mailbox.pending).toBe(0);
      } finally {
        delete process.env.FAKE_PI_RECORDS;
        await rc.dispose();
      }
    },
    60_000,
  );
});

describe("area 7b: exactly once — the root killed while it hands a notice to pi", () => {
  it.each([
    ["handed", "handed out, not yet in the session: offered again"],
    ["taking", "in the session, not yet recorded taken: the session's copy counts"],
    ["taken", "in the session and recorded taken"],
  ])(
    "killed %s (%s): the session holds the notice once, none is left to give",
    async (step) => {
      const rc = await runtimeCase({ steps: [{ echoTask: true }] });
      const sessionFile = path.join(rc.dir, "root-session.jsonl");
      try {
        const state = rc.child("worker", "read me once");
        await rc.tree.writeRecord(state.record);
        expect(await rootUntilKilled(rc, sessionFile, step)).toBe("SIGKILL");
        expect(heldInSession(sessionFile, "/root/worker")).toBe(step === "handed" ? 0 : 1);

        const runtime = await nextRoot(rc, sessionFile);
        const again = runtime.mailbox.take(5);
        expect(again.map((notice) => notice.agent_name)).toEqual(step === "handed" ? ["/root/worker"] : []);
        if (again.length > 0) {
          // As the root script does: into the session, then held.
          fs.appendFileSync(
            sessionFile,
            `${JSON.stringify({ type: "message", message: { role: "toolResult", details: { notices: again, delivery_keys: runtime.deliveryKeysOf(again) } } })}\n`,
          );
          await runtime.noticesHeld(runtime.deliveryKeysOf(again));
        }
        expect(heldInSession(sessionFile, "/root/worker")).toBe(1);
        const given = JSON.parse(await readFile(path.join(rc.tree.root, "deliveries.json"), "utf8")).given;
        expect(given).toEqual([{ key: "/root/worker#0001-spawn", taken: true }]);
        expect((await nextRoot(rc, sessionFile)).mailbox.pending).toBe(0);
        console.log(`[reliability] killed ${step}: the session holds the notice 1 time, 0 given again`);
        expect(await settleLeftovers()).toEqual([]);
      } finally {
        await rc.dispose();
      }
    },
    60_000,
  );
});
