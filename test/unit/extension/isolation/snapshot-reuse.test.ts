import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { snapshotWorkingState } from "../../../../src/extension/isolation/repository.js";
import { SnapshotReuse } from "../../../../src/extension/isolation/snapshot-reuse.js";
import { FakeClock } from "../../../support/fake-clock.js";
import { commitAll, gitShim, makeRepo, sh, treeFiles, useSandbox, write } from "./support.js";

const sandbox = useSandbox();
const reuse = (): SnapshotReuse => new SnapshotReuse();

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

  it("is forgotten after the idle time, and for another repository: the next snapshot asks git everything", async () => {
    const box = sandbox();
    const one = makeRepo(box, { "a.txt": "a\n" }, "one");
    const two = makeRepo(box, { "b.txt": "b\n" }, "two");
    const log = path.join(box.dir, "git-calls");
    const env = gitShim(box, "-c", `echo call >> ${JSON.stringify(log)}`);
    const calls = () => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").split("\n").length - 1 : 0);
    const clock = new FakeClock();
    const kept = new SnapshotReuse(5_000, clock);
    const counted = async (repo: string): Promise<number> => {
      const before = calls();
      await snapshotWorkingState(repo, { env, reuse: kept });
      return calls() - before;
    };
    // A clean tree: HEAD itself, no commit-tree.
    expect(await counted(one)).toBe(6);
    await clock.advance(5_000);
    expect(await counted(one)).toBe(3);
    await clock.advance(5_001);
    expect(await counted(one)).toBe(6);
    expect(await counted(two)).toBe(6);
    expect(await counted(one)).toBe(6);
  });

  it("a snapshot that fails says git's error and forgets what was kept", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n" });
    const kept = new SnapshotReuse();
    const head = await snapshotWorkingState(repo, { env: box.env, reuse: kept });
    const gitDir = path.join(box.dir, "moved.git");
    // The repository is gone: git fails, and what was kept of it is forgotten.
    fs.renameSync(path.join(repo, ".git"), gitDir);
    await expect(snapshotWorkingState(repo, { env: box.env, reuse: kept })).rejects.toThrow(/git/);
    expect(kept.take([repo].join("\0"), box.env)).toBeUndefined();
    fs.renameSync(gitDir, path.join(repo, ".git"));
    expect(await snapshotWorkingState(repo, { env: box.env, reuse: kept })).toBe(head);
  });
});
