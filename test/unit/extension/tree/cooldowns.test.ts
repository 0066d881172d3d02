import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TREE_FILES } from "../../../../src/contracts/layout.js";
import { readCooldowns, recordCooldowns } from "../../../../src/extension/tree/cooldowns.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});
const treeDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "psa-cooldowns-"));
  dirs.push(dir);
  return dir;
};
const T0 = Date.parse("2026-01-01T00:00:00.000Z");
const at = new Date(T0).toISOString();

describe("the tree's model cool-downs file", () => {
  it("records rate-limit and quota failures, merges later writes, and forgets what has expired", async () => {
    const dir = treeDir();
    await recordCooldowns(dir, [{ model: "a/x", error_class: "rate_limit", message: "429", at }], T0);
    await recordCooldowns(dir, [{ model: "b/y", error_class: "quota", message: "quota", at }], T0 + 1000);
    expect(Object.keys(readCooldowns(dir, T0 + 1000))).toEqual(["a/x", "b/y"]);
    // 60 s on, the rate limit is over; the quota's hour is not.
    expect(Object.keys(readCooldowns(dir, T0 + 61_000))).toEqual(["b/y"]);
    expect(JSON.parse(fs.readFileSync(path.join(dir, TREE_FILES.cooldowns), "utf8")).version).toBe(1);
  });

  it("writes nothing for errors that start no cool-down, and reads a missing or damaged file as none", async () => {
    const dir = treeDir();
    await recordCooldowns(dir, [{ model: "a/x", error_class: "server_error", message: "500", at }], T0);
    expect(fs.existsSync(path.join(dir, TREE_FILES.cooldowns))).toBe(false);
    fs.writeFileSync(path.join(dir, TREE_FILES.cooldowns), "{not json");
    expect(readCooldowns(dir, T0)).toEqual({});
    expect(readCooldowns(path.join(dir, "missing"), T0)).toEqual({});
  });

  it("reads a FIFO where the file belongs as none, at once (no reader waits for a writer); a recording says why it cannot", async () => {
    const dir = treeDir();
    execFileSync("mkfifo", [path.join(dir, TREE_FILES.cooldowns)]);
    expect(readCooldowns(dir, T0)).toEqual({});
    await expect(
      recordCooldowns(dir, [{ model: "a/x", error_class: "rate_limit", message: "429", at }], T0),
    ).rejects.toThrow(/is not a regular file/);
    expect(readCooldowns(dir, T0)).toEqual({});
  });
});
