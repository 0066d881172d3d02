// The extension's tree directory on a small tmpfs that fills while children finish.
import fs from "node:fs";
import path from "node:path";
import { fillDisk, mountTmpfs } from "../full-disk.mjs";
import { agentRecord, dist, TREE_LIMITS } from "./extension-support.mjs";
import { DEBUG, FAKE_PI, killLeftovers, log, scratch, settleLeftovers, sleep, TAG, TAG_ENV } from "./support.mjs";

/**
 * The extension's runtime (from dist/) with real wrappers running the fake pi, its tree
 * directory on a small tmpfs that is filled at a moment spread over the children's turns:
 * every turn must still give exactly one notice, nothing may reject unhandled or hang, and
 * every slot must be free again.
 */
export async function diskFullTrials(trials) {
  const disk = mountTmpfs("32m");
  if ("skip" in disk) return { skipped: disk.skip };
  const mountDir = disk.dir;
  const { TreeDir } = await dist("tree/tree-dir.js");
  const { TreeRuntime } = await dist("turns/runtime.js");
  const { childState } = await dist("turns/child-state.js");
  const unhandled = [];
  const onUnhandled = (reason) => unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  const saved = { ...process.env };
  Object.assign(process.env, {
    [TAG_ENV]: TAG,
    PI_SUBAGENTS_PI_BIN: FAKE_PI,
    TMPDIR: scratch,
    FAKE_PI_SCRIPT: JSON.stringify({ steps: [{ sleep: 300 }, { assistant: { text: "done", stopReason: "stop" } }] }),
  });
  const tally = { trials, turns: 0, notices: 0, errored: 0, completed: 0, other: 0, hung: 0, slotsLeft: 0, lines: 0 };
  try {
    for (let trial = 0; trial < trials; trial++) {
      const root = path.join(mountDir, `tree-${trial}`);
      const tree = new TreeDir(root);
      await tree.init("session");
      const lines = [];
      const rt = new TreeRuntime({ self: "/root", isRoot: true, treeDir: root }, tree, TREE_LIMITS, scratch, {
        hooks: { problem: (line) => lines.push(line) },
      });
      for (let i = 1; i <= 3; i++) {
        const state = childState(agentRecord(`child${i}`, i));
        rt.children.set(state.record.path, state);
        await rt.requestTurn(state, "spawn");
        tally.turns++;
      }
      await sleep(Math.round((trial / Math.max(1, trials - 1)) * 2500));
      fillDisk(mountDir);
      const deadline = Date.now() + 30_000;
      while (rt.mailbox.pending < 3 && Date.now() < deadline) await sleep(50);
      const notices = rt.mailbox.take(10);
      if (notices.length < 3) tally.hung++;
      tally.notices += notices.length;
      for (const notice of notices) {
        if (notice.type === "errored") tally.errored++;
        else if (notice.type === "completed") tally.completed++;
        else tally.other++;
      }
      tally.slotsLeft += rt.slots.activeCount;
      tally.lines += lines.length;
      if (DEBUG) log(`disk full trial ${trial}: ${notices.map((n) => `${n.type} ${n.reason ?? ""}`).join(" | ")}`);
      await rt.shutdown();
      fs.rmSync(path.join(mountDir, "filler"), { force: true });
      fs.rmSync(root, { recursive: true, force: true });
    }
  } finally {
    process.off("unhandledRejection", onUnhandled);
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
  }
  tally.unhandled = unhandled.length;
  tally.left = (await settleLeftovers()).length;
  killLeftovers();
  disk.unmount();
  return tally;
}
