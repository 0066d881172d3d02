import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { snapshotWorkingState } from "../../../../src/extension/isolation/repository.js";
import { SnapshotReuse } from "../../../../src/extension/isolation/snapshot-reuse.js";
import { FakeClock } from "../../../support/fake-clock.js";
import { commitAll, gitShim, makeRepo, sh, treeFiles, useSandbox, write } from "./support.js";

const sandbox = useSandbox();
const reuses: SnapshotReuse[] = [];
const reuse = (idleMs?: number, clock?: FakeClock): SnapshotReuse => {
  const made = new SnapshotReuse(idleMs, clock);
  reuses.push(made);
  return made;
};
afterEach(async () => {
  for (const made of reuses.splice(0)) await made.release();
});

describe("snapshotWorkingState with a kept snapshot (SnapshotReuse)", () => {
  it("each snapshot still sees what changed since the last one: edits, new and deleted files, a new ignore rule, a commit", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n", "b.txt": "b\n" });
    const kept = reuse();
    const opts = { env: box.env, reuse: kept };
    const head = sh(box, repo, ["rev-parse", "HEAD"]).trim();
    expect(await snapshotWorkingState(repo, opts)).toBe(head);

    write(path.join(repo, "a.txt"), "a edited\n");
    write(path.join(repo, "new.log"), "new\n");
    const first = await snapshotWorkingState(repo, opts);
    expect(sh(box, repo, ["show", `${first}:a.txt`])).toBe("a edited\n");
    expect(treeFiles(box, repo, first)).toEqual(["a.txt", "b.txt", "new.log"]);

    // An untracked file the last snapshot carried is left out once an ignore rule covers it.
    write(path.join(repo, ".git/info/exclude"), "*.log\n");
    fs.rmSync(path.join(repo, "b.txt"));
    const second = await snapshotWorkingState(repo, opts);
    expect(treeFiles(box, repo, second)).toEqual(["a.txt"]);
    expect(sh(box, repo, ["rev-list", "--parents", "-n", "1", second]).trim()).toBe(`${second} ${head}`);

    const committed = commitAll(box, repo, "the parent commits");
    expect(await snapshotWorkingState(repo, opts)).toBe(committed);
    // A file force-added to the real index is carried although ignored.
    write(path.join(repo, "forced.log"), "forced\n");
    sh(box, repo, ["add", "-f", "forced.log"]);
    const third = await snapshotWorkingState(repo, opts);
    expect(treeFiles(box, repo, third)).toEqual(["a.txt", "forced.log"]);
    expect(sh(box, repo, ["rev-list", "--parents", "-n", "1", third]).trim()).toBe(`${third} ${committed}`);
  });

  it("the same working tree twice is the same commit, asked of three git processes instead of seven", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n" });
    write(path.join(repo, "dirty.txt"), "dirty\n");
    const log = path.join(box.dir, "git-calls");
    // Every call of the package's git helper carries -c options.
    const env = gitShim(box, "-c", `echo call >> ${JSON.stringify(log)}`);
    const calls = () => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").split("\n").length - 1 : 0);
    const kept = reuse();
    const first = await snapshotWorkingState(repo, { env, reuse: kept });
    expect(calls()).toBe(7);
    const second = await snapshotWorkingState(repo, { env, reuse: kept });
    expect(second).toBe(first);
    expect(calls()).toBe(7 + 3);
    // Without reuse, the same snapshot asks git everything again.
    await snapshotWorkingState(repo, { env });
    expect(calls()).toBe(7 + 3 + 7);
  });

  it("keeps one folder, removed on release or after the idle time; another repository replaces it", async () => {
    const box = sandbox();
    const one = makeRepo(box, { "a.txt": "a\n" }, "one");
    const two = makeRepo(box, { "b.txt": "b\n" }, "two");
    const clock = new FakeClock();
    const kept = reuse(5_000, clock);
    await snapshotWorkingState(one, { env: box.env, reuse: kept });
    const dir = kept.keptDir();
    expect(dir && fs.existsSync(dir)).toBe(true);
    await snapshotWorkingState(two, { env: box.env, reuse: kept });
    expect(fs.existsSync(dir!)).toBe(false);
    const other = kept.keptDir()!;
    expect(fs.existsSync(other)).toBe(true);
    await kept.release();
    expect(fs.existsSync(other)).toBe(false);
    await snapshotWorkingState(one, { env: box.env, reuse: kept });
    const idle = kept.keptDir()!;
    await clock.advance(4_999);
    expect(fs.existsSync(idle)).toBe(true);
    await clock.advance(1);
    await kept.release(); // waits for the idle release under way
    expect(kept.keptDir()).toBeUndefined();
    expect(fs.existsSync(idle)).toBe(false);
  });

  it("a snapshot that fails drops the kept folder and says git's error", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n" });
    const kept = reuse();
    await snapshotWorkingState(repo, { env: box.env, reuse: kept });
    const dir = kept.keptDir()!;
    // The repository is gone: git fails.
    fs.rmSync(path.join(repo, ".git"), { recursive: true, force: true });
    await expect(snapshotWorkingState(repo, { env: box.env, reuse: kept })).rejects.toThrow(/git/);
    expect(kept.keptDir()).toBeUndefined();
    expect(fs.existsSync(dir)).toBe(false);
  });
});
