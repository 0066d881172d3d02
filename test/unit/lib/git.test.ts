import fs from "node:fs";
import path from "node:path";
import { describe, expect, it, vi } from "vitest";
import { findRepository } from "../../../src/extension/isolation/repository.js";
import { commitTurn } from "../../../src/extension/isolation/turn.js";
import {
  FALLBACK_IDENTITY,
  GitError,
  git,
  gitEnv,
  identityEnv,
  isLockError,
  retryOnLock,
} from "../../../src/lib/git.js";
import { serialized } from "../../../src/lib/serialized.js";
import { FakeClock, settle } from "../../support/fake-clock.js";
import { gone, makeRepo, sh, useSandbox, write } from "../extension/isolation/support.js";

const sandbox = useSandbox();

const lockError = (): GitError =>
  new GitError(
    "git update-ref failed",
    ["update-ref"],
    128,
    "fatal: Unable to create '/r/.git/packed-refs.lock': File exists.\n",
  );

describe("running git", () => {
  it("a failure names the command and ends with the tail of its stderr", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n" });
    const error = await git(["rev-parse", "--verify", "no-such-ref"], { cwd: repo, env: box.env }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(GitError);
    expect((error as GitError).message).toMatch(
      /^git rev-parse --verify no-such-ref failed \(exit 128\): fatal: Needed a single revision$/,
    );
    expect((error as GitError).exitCode).toBe(128);
  });

  it("quotes at most the last 600 characters of a long stderr", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n" });
    sh(box, repo, [
      "config",
      "alias.noisy",
      "!f() { i=0; while [ $i -lt 400 ]; do printf 'line %03d of noise\\n' $i >&2; i=$((i+1)); done; exit 3; }; f",
    ]);
    const error = (await git(["noisy"], { cwd: repo, env: box.env }).catch((e: unknown) => e)) as GitError;
    expect(error.message.startsWith("git noisy failed (exit 3): …")).toBe(true);
    expect(error.message.endsWith("line 399 of noise")).toBe(true);
    expect(error.message.length).toBeLessThanOrEqual("git noisy failed (exit 3): ".length + 600);
  });

  it("a command over its time limit is stopped with its whole process group, and says so", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n" });
    const pidFile = path.join(box.dir, "pid");
    // git → sh → sleep: the sleep is a grandchild, in git's process group.
    sh(box, repo, ["config", "alias.hang", `!sh -c 'echo $$ > "${pidFile}"; exec sleep 30'`]);
    const started = Date.now();
    const error = (await git(["hang"], { cwd: repo, env: box.env, timeoutMs: 400 }).catch(
      (e: unknown) => e,
    )) as GitError;
    expect(error).toBeInstanceOf(GitError);
    expect(error.timedOut).toBe(true);
    expect(error.message).toMatch(/^git hang timed out after 400 ms/);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(await gone(Number(fs.readFileSync(pidFile, "utf8")))).toBe(true);
  });

  it("a cwd that does not exist is reported as such", async () => {
    const box = sandbox();
    await expect(git(["status"], { cwd: path.join(box.dir, "missing"), env: box.env })).rejects.toThrow(
      /^git status failed: no such directory: .*missing$/,
    );
  });

  it("ignores repository-locating variables of the caller's environment", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n" });
    const env = {
      ...box.env,
      GIT_DIR: path.join(box.dir, "elsewhere"),
      GIT_INDEX_FILE: path.join(box.dir, "idx"),
      GIT_WORK_TREE: box.dir,
    };
    expect(await findRepository(repo, { env })).toEqual({ topLevel: repo, subdir: "" });
    const prepared = gitEnv(env);
    expect(prepared.GIT_DIR).toBeUndefined();
    expect(prepared.GIT_INDEX_FILE).toBeUndefined();
    expect(prepared).toMatchObject({ GIT_TERMINAL_PROMPT: "0", LC_ALL: "C", HOME: box.dir });
  });
});

describe("identity", () => {
  it("falls back to pi-subagent-tree when nothing names anyone", async () => {
    const box = sandbox();
    const repo = makeRepo(box);
    expect(await identityEnv(repo, { env: box.env })).toEqual({
      GIT_AUTHOR_NAME: FALLBACK_IDENTITY.name,
      GIT_AUTHOR_EMAIL: FALLBACK_IDENTITY.email,
      GIT_COMMITTER_NAME: FALLBACK_IDENTITY.name,
      GIT_COMMITTER_EMAIL: FALLBACK_IDENTITY.email,
    });
  });

  it("adds nothing when the repository or the environment names someone", async () => {
    const box = sandbox();
    const repo = makeRepo(box);
    sh(box, repo, ["config", "user.name", "Ada"]);
    sh(box, repo, ["config", "user.email", "ada@example.com"]);
    expect(await identityEnv(repo, { env: box.env })).toEqual({});
    const other = makeRepo(box, {}, "other");
    const env = { ...box.env, GIT_AUTHOR_NAME: "A", GIT_AUTHOR_EMAIL: "a@x", GIT_COMMITTER_NAME: "C", EMAIL: "c@x" };
    expect(await identityEnv(other, { env })).toEqual({});
  });
});

describe("lock retries and per-repository order", () => {
  it("recognises git's lock failures and nothing else", () => {
    expect(isLockError(lockError())).toBe(true);
    expect(
      isLockError(new GitError("x", [], 128, "fatal: cannot lock ref 'refs/heads/a': reference already exists")),
    ).toBe(true);
    expect(isLockError(new GitError("x", [], 128, "fatal: failed to read .git/worktrees/c8/commondir: Success"))).toBe(
      true,
    );
    expect(isLockError(new GitError("x", [], 128, "fatal: a branch named 'a' already exists"))).toBe(false);
    expect(isLockError(new Error("Unable to create 'x.lock'"))).toBe(false);
  });

  it("retries while a lock is held, then succeeds", async () => {
    let calls = 0;
    const result = await retryOnLock(async (attempt) => {
      calls++;
      if (attempt < 3) throw lockError();
      return "done";
    });
    expect(result).toBe("done");
    expect(calls).toBe(4);
  });

  it("gives up after the lock wait, and never retries other errors", async () => {
    const started = Date.now();
    await expect(retryOnLock(() => Promise.reject(lockError()), 300)).rejects.toThrow("git update-ref failed");
    expect(Date.now() - started).toBeLessThan(1500);
    let calls = 0;
    await expect(
      retryOnLock(() => {
        calls++;
        return Promise.reject(new GitError("bad", [], 128, "fatal: not a valid object name"));
      }),
    ).rejects.toThrow("bad");
    expect(calls).toBe(1);
  });

  it("serialized runs tasks of one key one at a time, in order, past failures; other keys run alongside", async () => {
    const events: string[] = [];
    const task =
      (name: string, ms: number, fail = false) =>
      async () => {
        events.push(`start ${name}`);
        await new Promise((resolve) => setTimeout(resolve, ms));
        events.push(`end ${name}`);
        if (fail) throw new Error(name);
        return name;
      };
    const results = await Promise.allSettled([
      serialized("k", task("a", 30, true)),
      serialized("k", task("b", 5)),
      serialized("other", task("c", 5)),
    ]);
    expect(results.map((r) => (r.status === "fulfilled" ? r.value : "rejected"))).toEqual(["rejected", "b", "c"]);
    expect(events.indexOf("end a")).toBeLessThan(events.indexOf("start b"));
    expect(events.indexOf("start c")).toBeLessThan(events.indexOf("end a"));
  });
});

describe("lock retries on a clock", () => {
  /** The backoff before retry n (0 first): 20 ms doubling up to 500 ms, each within ±25 % jitter. */
  const withinBackoff = (delay: number, n: number): boolean => {
    const base = Math.min(500, 20 * 2 ** n);
    return delay >= base * 0.75 && delay <= base * 1.25;
  };

  it("waits on the clock it is given between attempts, and nothing happens until that clock moves", async () => {
    const clock = new FakeClock();
    let calls = 0;
    const result = retryOnLock(
      async (attempt) => {
        calls++;
        if (attempt < 2) throw lockError();
        return "done";
      },
      15_000,
      clock,
    );
    await settle();
    expect(calls).toBe(1);
    expect(clock.requested).toHaveLength(1);
    await clock.advance(clock.pending()[0]! - 1);
    expect(calls).toBe(1);
    await clock.advance(1);
    expect(calls).toBe(2);
    await clock.advance(clock.pending()[0]!);
    expect(await result).toBe("done");
    expect(calls).toBe(3);
    expect(clock.requested.every((delay, n) => withinBackoff(delay, n))).toBe(true);
  });

  it("gives up with the lock's error once the next wait would end past the lock wait", async () => {
    const clock = new FakeClock();
    const start = clock.now();
    let calls = 0;
    const outcome = retryOnLock(
      () => {
        calls++;
        return Promise.reject(lockError());
      },
      1000,
      clock,
    ).then(
      () => undefined,
      (error: unknown) => error,
    );
    let settled: unknown;
    void outcome.then((error) => (settled = error));
    while (settled === undefined) {
      await settle();
      const next = clock.pending()[0];
      if (next !== undefined) await clock.advance(next);
    }
    expect(settled).toBeInstanceOf(GitError);
    expect((settled as GitError).message).toBe("git update-ref failed");
    expect(calls).toBe(clock.requested.length + 1);
    expect(clock.requested.every((delay, n) => withinBackoff(delay, n))).toBe(true);
    // Every wait taken ended within the lock wait; the one not taken would have passed it.
    const waited = clock.requested.reduce((sum, delay) => sum + delay, 0);
    expect(clock.now() - start).toBeCloseTo(waited, 2);
    expect(waited).toBeLessThanOrEqual(1000);
    expect(waited + Math.min(500, 20 * 2 ** clock.requested.length) * 1.25).toBeGreaterThan(1000);
  });

  it("a turn's commit waits out a held index.lock on the clock its caller gives", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n" });
    write(path.join(repo, "a.txt"), "changed\n");
    const lock = path.join(repo, ".git", "index.lock");
    fs.writeFileSync(lock, "");
    const clock = new FakeClock();
    const commit = commitTurn({ worktreePath: repo, message: "turn 1", env: box.env, clock });
    await vi.waitFor(() => expect(clock.requested).toHaveLength(1));
    fs.rmSync(lock);
    await clock.advance(clock.pending()[0]!);
    const done = await commit;
    expect(done.committed).toBe(true);
    expect(sh(box, repo, ["log", "-1", "--format=%s"]).trim()).toBe("turn 1");
  });
});
