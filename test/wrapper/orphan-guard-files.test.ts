/**
 * What the orphan guard removes when its wrapper dies: the result.json reserve and the temp
 * file of a result.json write the wrapper was killed in (both named with the wrapper's
 * hidden-file prefix), the run's own temp folder with all it holds, and nothing else. The
 * real guard shell, real files.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { hiddenSiblingPrefix } from "../../src/lib/atomic-file.js";
import { ResultReserve } from "../../src/wrapper/artifacts.js";
import { startOrphanGuard } from "../../src/wrapper/orphan-guard.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe("the orphan guard, once its wrapper is gone", () => {
  it("removes the reserve and the wrapper's result.json temp files, and leaves everything else", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "psa-guard-files-"));
    dirs.push(dir);
    const resultPath = path.join(dir, "result.json");
    const reserve = ResultReserve.pathFor(resultPath);
    const prefix = hiddenSiblingPrefix(resultPath);
    expect(reserve).toBe(`${prefix}reserve`);
    const ours = [reserve, `${prefix}0a1b2c3d.tmp`, `${prefix}ffffffff.tmp`];
    const others = [
      path.join(dir, "result.json"),
      `${hiddenSiblingPrefix(resultPath, process.pid + 1)}0a1b2c3d.tmp`, // another process's write
      path.join(dir, ".events.jsonl.tmp"),
    ];
    for (const file of [...ours, ...others]) fs.writeFileSync(file, "x");
    // The run's own temp folder (run-temp.ts), with a task file and a private inbox in it.
    const runTemp = path.join(dir, "pi-subagent-run-1-0a1b2c3d4e5f");
    fs.mkdirSync(path.join(runTemp, "inbox"), { recursive: true });
    fs.writeFileSync(path.join(runTemp, "task.txt"), "the task's full text");
    fs.writeFileSync(path.join(runTemp, "inbox", "limit-wrap-up.json"), "{}");
    const beside = path.join(dir, "pi-subagent-run-2-ffffffffffff"); // another run's
    fs.mkdirSync(beside);
    const guard = startOrphanGuard(
      randomBytes(16).toString("hex"),
      reserve,
      (err) => {
        throw err;
      },
      runTemp,
    );
    guard.close(); // the pipe closes without "exit": what a killed wrapper's guard sees
    await vi.waitFor(() => expect([...ours, runTemp].filter((file) => fs.existsSync(file))).toEqual([]), {
      timeout: 5000,
    });
    expect([...others, beside].filter((file) => fs.existsSync(file))).toEqual([...others, beside]);
  });

  it("removes nothing when the run ended everything itself (exit)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "psa-guard-files-"));
    dirs.push(dir);
    const runTemp = path.join(dir, "pi-subagent-run-1-0a1b2c3d4e5f");
    fs.mkdirSync(runTemp);
    const guard = startOrphanGuard(randomBytes(16).toString("hex"), "", () => undefined, runTemp);
    await guard.release();
    expect(fs.existsSync(runTemp)).toBe(true);
  });
});
