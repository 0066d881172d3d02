/**
 * A runner's capacity across the whole tree, end to end: the real pi for the root
 * and a local child `lead`, scripted models, and a `command` runner of capacity 1 whose prefix
 * starts `subagent-wrapper serve` on this machine (no bwrap needed). The root's child and the
 * lead's child both run on it; the lead's process has room for 3 turns of its own, yet the two
 * runner turns never run at the same time: the one slot is shared by every process of the tree.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { ResultV1 } from "../../src/contracts/result.js";
import { slotHolders } from "../../src/lib/slot-lease.js";
import { reply } from "../support/scripted-llm.js";
import { diag, ROOT_RUN } from "../support/stress-scenarios.js";
import type { TreeHarness } from "../support/tree-harness.js";
import {
  expectCleanExit,
  expectNoSurvivors,
  Program,
  spawn,
  useTrees,
  waitForAll,
} from "../support/tree-harness-extra.js";
import { committedRepository } from "../support/tree-repo.js";
import { WRAPPER_BIN } from "../support/wrapper-harness.js";

const tree = useTrees();
const SCENARIO_MS = 150_000;

const settings = {
  subagents: {
    runners: {
      near: { kind: "command", command: ["env"], remote_command: [process.execPath, WRAPPER_BIN], capacity: 1 },
    },
  },
};

function resultOf(h: TreeHarness, ...segments: string[]): ResultV1 {
  const file = path.join(h.treeDir(), "agents", ...segments, "runs", "0001-spawn", "result.json");
  return JSON.parse(fs.readFileSync(file, "utf8")) as ResultV1;
}

const busy = (name: string) => [reply.toolCall("bash", { command: "sleep 2" }), reply.text(`${name} DONE`)];

describe("a runner's capacity across the tree (real pi, a command runner)", () => {
  it(
    "the root's child and a nested child on one runner of capacity 1 never run at once",
    async () => {
      const h = await tree({
        scripts: {
          "/root": new Program([
            spawn({ task_name: "lead", message: "lead", fork_turns: "none" }),
            spawn({ task_name: "r1", message: "work", fork_turns: "none", runner: "near" }),
            waitForAll(["/root/lead", "/root/r1"], 90_000),
            reply.text("ROOT DONE"),
          ]).steps(30),
          "/root/lead": new Program([
            spawn({ task_name: "l1", message: "work", fork_turns: "none", runner: "near" }),
            waitForAll(["/root/lead/l1"], 60_000),
            reply.text("LEAD DONE"),
          ]).steps(30),
          "/root/r1": busy("R1"),
          "/root/lead/l1": busy("L1"),
        },
        extraSettings: settings,
      });
      committedRepository(h);
      expectCleanExit(await h.runRoot("go", ROOT_RUN));

      const r1 = resultOf(h, "r1");
      const l1 = resultOf(h, "lead", "l1");
      expect([r1.status, l1.status], diag(h)).toEqual(["completed", "completed"]);
      const [first, second] = [r1, l1].sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt));
      // The second turn's wrapper started only after the first one's had ended.
      expect(Date.parse(second!.startedAt), diag(h)).toBeGreaterThanOrEqual(Date.parse(first!.endedAt));
      // One slot, taken in turn by both; nobody holds it now.
      const slots = path.join(h.treeDir(), "runners", "near");
      expect(fs.readdirSync(slots).filter((name) => name.startsWith("slot."))).toEqual(["slot.1.2"]);
      expect(slotHolders(slots).size).toBe(0);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );
});
