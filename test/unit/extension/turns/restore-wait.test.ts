/**
 * A restore waits only for wrappers that are really still running, and for all of them at
 * once: after a reboot or once pids wrap, a recorded wrapper pid can belong to any process.
 * The waits run on an injected clock that moves only when the restore sleeps, so the time
 * a restore would take is measured exactly, without waiting it.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { RUN_FILES, TREE_FILES } from "../../../../src/contracts/layout.js";
import { restore } from "../../../../src/extension/turns/restore.js";
import { TreeRuntime } from "../../../../src/extension/turns/runtime.js";
import { ORPHAN_WRAPPER_WAIT_MS, settledRunResults } from "../../../../src/extension/turns/wrapper/run-reads.js";
import type { Clock } from "../../../../src/lib/clock.js";
import { processIdentity, sameProcessAlive } from "../../../../src/lib/process.js";
import { FakeTurns, turnResult } from "../../../support/fake-turns.js";
import { agentRecord } from "../../../support/records.js";
import { cleanupRuntimes, runtimeHarness } from "../../../support/runtime-harness.js";

afterEach(cleanupRuntimes);

/**
 * Time that passes only when someone waits on it: a timer set moves the clock to its end at
 * once and fires; `onSleep` runs at each wait first (to act mid-wait).
 */
function virtualClock(
  onSleep: (now: number) => Promise<void> | void = () => undefined,
): Clock & { elapsed(): number; sleeps: number } {
  let now = 0;
  let sleeps = 0;
  return {
    now: () => now,
    setTimeout: (fn, ms) => {
      now += ms;
      sleeps++;
      void Promise.resolve(onSleep(now)).then(fn);
      return sleeps;
    },
    clearTimeout: () => undefined,
    setInterval: () => {
      throw new Error("a restore's wait sets no repeating timer");
    },
    clearInterval: () => undefined,
    elapsed: () => now,
    get sleeps() {
      return sleeps;
    },
  };
}

const me = processIdentity(process.pid);

describe("the wrappers a restore waits for", () => {
  it("a live pid that is not the run's wrapper is not waited for (3 runs: 0 ms on the restore's clock)", async () => {
    const h = await runtimeHarness();
    const runDirs: string[] = [];
    // Three ways a recorded pid is alive but not the wrapper: this test's own process.
    const pidFiles = [
      `${process.pid}\n`, // an older file with the bare pid: the process's command line names no meta.json of this run
      `${JSON.stringify({ ...me, startTicks: "1" })}\n`, // started at another time: the pid was reused
      `${JSON.stringify({ ...me, bootId: "00000000-0000-0000-0000-000000000000" })}\n`, // recorded before a reboot
    ];
    for (const [i, text] of pidFiles.entries()) {
      const runDir = path.join(h.tree.root, `run${i}`);
      await mkdir(runDir, { recursive: true });
      await writeFile(path.join(runDir, RUN_FILES.wrapperPid), text);
      runDirs.push(runDir);
    }
    const clock = virtualClock();
    const reads = await settledRunResults(runDirs, ORPHAN_WRAPPER_WAIT_MS, clock);
    expect(clock.elapsed()).toBe(0);
    expect([...reads.values()]).toEqual([{}, {}, {}]);
  });

  it("wrappers still running are waited for together, to one deadline — not one wait per agent", async () => {
    const h = await runtimeHarness();
    const runDirs: string[] = [];
    for (let i = 0; i < 3; i++) {
      const runDir = path.join(h.tree.root, `run${i}`);
      await mkdir(runDir, { recursive: true });
      // This process's own identity: a wrapper that is running (and never ends by itself here).
      await writeFile(path.join(runDir, RUN_FILES.wrapperPid), `${JSON.stringify(me)}\n`);
      runDirs.push(runDir);
    }
    // The second wrapper writes its result 300 ms into the wait.
    const clock = virtualClock(async (now) => {
      if (now === 300)
        await writeFile(path.join(runDirs[1]!, RUN_FILES.result), JSON.stringify(turnResult({ finalText: "made it" })));
    });
    const reads = await settledRunResults(runDirs, ORPHAN_WRAPPER_WAIT_MS, clock);
    expect(clock.elapsed()).toBe(ORPHAN_WRAPPER_WAIT_MS);
    expect(reads.get(runDirs[0]!)).toEqual({});
    expect(reads.get(runDirs[1]!)?.result?.finalText).toBe("made it");
    expect(reads.get(runDirs[2]!)).toEqual({});
  });

  it("a result or a damaged result already there needs no wait", async () => {
    const h = await runtimeHarness();
    const done = path.join(h.tree.root, "done");
    const broken = path.join(h.tree.root, "broken");
    for (const dir of [done, broken]) {
      await mkdir(dir, { recursive: true });
      await writeFile(path.join(dir, RUN_FILES.wrapperPid), `${JSON.stringify(me)}\n`);
    }
    await writeFile(path.join(done, RUN_FILES.result), JSON.stringify(turnResult()));
    await writeFile(path.join(broken, RUN_FILES.result), '{"version":1,');
    const clock = virtualClock();
    const reads = await settledRunResults([done, broken], ORPHAN_WRAPPER_WAIT_MS, clock);
    expect(clock.elapsed()).toBe(0);
    expect(reads.get(done)?.result?.status).toBe("completed");
    expect(reads.get(broken)).toEqual({ damaged: "result.json is not valid JSON (truncated or overwritten)" });
  });

  it("the recorded start time tells a process from a later one with its pid", () => {
    expect(sameProcessAlive(me)).toBe(true);
    expect(sameProcessAlive({ ...me, startTicks: String(Number(me.startTicks) + 1) })).toBe(false);
    expect(sameProcessAlive({ pid: 2 ** 22 + 12345 })).toBe(false);
  });
});

describe("restore with agents whose recorded wrapper pid is a live non-wrapper", () => {
  it("settles all of them at once, without waiting: 4 agents left running end interrupted with 0 ms on the clock", async () => {
    const h = await runtimeHarness();
    for (let seq = 1; seq <= 4; seq++) {
      const record = agentRecord({
        path: `/root/a${seq}`,
        nickname: `N${seq}`,
        spawnSeq: seq,
        status: "running",
        runs: ["0001-spawn"],
      });
      const runDir = path.join(h.tree.agentDir(record.path), TREE_FILES.runs, "0001-spawn");
      await mkdir(runDir, { recursive: true });
      await writeFile(path.join(runDir, RUN_FILES.wrapperPid), `${JSON.stringify({ ...me, startTicks: "1" })}\n`);
      await h.tree.writeRecord(record);
    }
    const clock = virtualClock();
    const turns = new FakeTurns();
    const runtime = new TreeRuntime(
      { self: "/root", isRoot: true, treeDir: h.tree.root },
      h.tree,
      h.runtime.limits,
      h.tree.root,
      {
        turns: {
          start: (spec) => turns.start(spec),
          settledResults: (runDirs, waitMs) => settledRunResults(runDirs, waitMs, clock),
          postLive: (runDir, seq, message) => turns.postLive(runDir, seq, message),
          deliveredIds: (runDir) => turns.deliveredIds(runDir),
        },
      },
    );
    await restore(runtime, []);
    expect(clock.elapsed()).toBe(0);
    expect([...runtime.children.values()].map(({ record }) => [record.path, record.status])).toEqual([
      ["/root/a1", "interrupted"],
      ["/root/a2", "interrupted"],
      ["/root/a3", "interrupted"],
      ["/root/a4", "interrupted"],
    ]);
  });
});
