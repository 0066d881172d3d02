/**
 * What a root leaves on disk, with the real pi: a session that never delegates makes no tree
 * directory (it is made at the first spawn), and a `--no-session` root — whose tree lives in
 * the temp folder and can never be resumed — removes it when it ends.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { reply } from "../support/scripted-llm.js";
import { expectCleanExit, expectNoSurvivors, useTrees } from "../support/tree-harness-extra.js";

const tree = useTrees();
const SCENARIO_MS = 90_000;

/** Every file and folder below `dir`, relative to it (none when it does not exist). */
function contents(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true }).map(String).sort();
}

describe("what a root leaves behind", () => {
  it(
    "a print-mode session that never spawns leaves no tree directory, beside its session or in PI_SUBAGENTS_DIR",
    async () => {
      const h = await tree({ scripts: { "/root": [reply.text("no delegation needed")] } });
      const saved = await h.runRoot("answer yourself", { env: { PI_SUBAGENTS_DIR: "" } });
      expectCleanExit(saved);
      expect(h.requestsOf("/root")).toHaveLength(1);
      // The session was saved (so its tree would go beside it, in subagents/), and no tree was made.
      const home = contents(h.home.root);
      expect(home.some((entry) => entry.endsWith(".jsonl") && !entry.includes("subagents"))).toBe(true);
      expect(home.filter((entry) => path.basename(entry) === "subagents")).toEqual([]);

      h.tree.add("/root", reply.text("still none"));
      expectCleanExit(await h.runRoot("answer yourself again"));
      expect(contents(h.baseDir)).toEqual([]);
    },
    SCENARIO_MS,
  );

  it(
    "a --no-session root that delegates leaves nothing in its temp base once it ends",
    async () => {
      const h = await tree({
        scripts: {
          "/root": [
            reply.toolCall("spawn_agent", { task_name: "worker", fork_turns: "none", message: "Say done." }),
            reply.toolCall("wait_agent", { timeout_ms: 30_000 }),
            reply.text("ROOT DONE"),
          ],
          "/root/worker": [reply.text("done")],
        },
      });
      const tempBase = path.join(h.home.env.TMPDIR!, "pi-subagents");
      const run = await h.runRoot("delegate once", { args: ["--no-session"], env: { PI_SUBAGENTS_DIR: "" } });
      expectCleanExit(run);
      // The child ran in a tree below the temp base: its notice came back to the root.
      expect(JSON.stringify(h.requestsOf("/root")[2])).toContain("done");
      expect(h.requestsOf("/root/worker")).toHaveLength(1);
      expect(contents(tempBase)).toEqual([]);
      await expectNoSurvivors(h);
    },
    SCENARIO_MS,
  );
});
