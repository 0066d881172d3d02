/**
 * A turn's run folder and its record, as the launcher makes them: a folder that exists is
 * never reused, and the record names the run before anything a wrapper reads is written.
 */
import fs from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { claimRunDir, runStarted, startTurn } from "../../../../src/extension/turns/wrapper/launcher.js";
import { agentRecord } from "../../../support/records.js";

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function agentDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "launcher-runs-"));
  dirs.push(dir);
  return dir;
}

describe("run folders", () => {
  it("claims the next number, and skips a folder that exists (one a killed parent made) instead of reusing it", async () => {
    const dir = await agentDir();
    expect(path.basename(await claimRunDir(dir, 1, "spawn"))).toBe("0001-spawn");
    await mkdir(path.join(dir, "runs", "0002-followup"));
    await writeFile(path.join(dir, "runs", "0002-followup", "events.jsonl"), "the first run's events\n");
    expect(path.basename(await claimRunDir(dir, 2, "followup"))).toBe("0003-followup");
    expect(fs.readFileSync(path.join(dir, "runs", "0002-followup", "events.jsonl"), "utf8")).toBe(
      "the first run's events\n",
    );
  });

  it("a run may have started once its folder holds meta.json or anything a wrapper writes; without them it never could have", async () => {
    const dir = await agentDir();
    const runDir = await claimRunDir(dir, 1, "spawn");
    // What the launcher writes before meta.json is no trace of a wrapper.
    await writeFile(path.join(runDir, "instructions.md"), "…");
    await writeFile(path.join(runDir, "wrapper.log"), "");
    expect(await runStarted(runDir)).toBe(false);
    expect(await runStarted(path.join(dir, "runs", "0009-spawn"))).toBe(false);
    for (const trace of ["meta.json", "wrapper.pid", "events.jsonl", "result.json"]) {
      const run = await claimRunDir(dir, 1, "spawn");
      await writeFile(path.join(run, trace), "");
      expect(await runStarted(run), trace).toBe(true);
    }
  });

  it("the record names the run before meta.json is written; a record that cannot be written starts nothing", async () => {
    const dir = await agentDir();
    const seen: Array<{ runName: string; metaThere: boolean }> = [];
    const start = startTurn({
      record: agentRecord({ runs: ["0001-spawn"] }),
      agentDir: dir,
      treeDir: dir,
      prompt: "the task",
      kind: "followup",
      cwd: dir,
      instructions: "",
      limits: {},
      recordRun: async (runName) => {
        seen.push({ runName, metaThere: fs.existsSync(path.join(dir, "runs", runName, "meta.json")) });
        throw new Error("ENOSPC: no space left on device");
      },
    });
    await expect(start).rejects.toThrow("ENOSPC");
    expect(seen).toEqual([{ runName: "0002-followup", metaThere: false }]);
    expect(fs.readdirSync(path.join(dir, "runs", "0002-followup"))).toEqual([]);
  });
});
