/**
 * Protocol 2 of `serve` (a follow-up sends only what the far side lacks), driven
 * directly: a hello that names the agent's workspace gets the commits the far side kept of it
 * (none the first time), the workspace is kept after a turn that went through and claimed by
 * the next one, which takes a bundle holding only what changed (prerequisites: the kept
 * commits); a bundle whose prerequisites the far side lacks, or one over the far side's
 * configured bound, ends the run with one clear error; a version-1 peer gets version 1.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { blobFrames, type ClientFrame, SERVE_ENV, type ServerFrame } from "../../src/contracts/serve-protocol.js";
import {
  ANSWER_STEPS,
  cleanupServeCases,
  type ServeCase,
  type ServeRun,
  scriptEnv,
  serveCase,
  startServe,
} from "../support/serve-driver.js";

afterEach(cleanupServeCases);

const git = (cwd: string, ...args: string[]): string =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, encoding: "utf8" }).trim();

/** A bundle of `commit` at a ref, leaving out what `without` reaches (its prerequisites). */
function bundleWithout(repo: string, commit: string, without: string[]): Buffer {
  git(repo, "update-ref", "refs/subagent-serve/t", commit);
  const file = path.join(repo, "..", `bundle-${commit.slice(0, 8)}-${without.length}`);
  git(repo, "bundle", "create", "-q", file, "refs/subagent-serve/t", ...without.map((c) => `^${c}`));
  git(repo, "update-ref", "-d", "refs/subagent-serve/t");
  return fs.readFileSync(file);
}

/** A v2 turn: hello naming `key`, then start and blobs once hello came back; resolves with the run's frames. */
async function keptTurn(
  c: ServeCase,
  options: { key?: string; bundle: Buffer; base: string; steps?: object[]; env?: NodeJS.ProcessEnv },
): Promise<{ run: ServeRun; hello: ServerFrame; code: number | null }> {
  const run = startServe(c, { ...scriptEnv(options.steps ?? ANSWER_STEPS), ...options.env }, 20_000);
  run.write({ t: "hello", version: 2, ...(options.key && { workspace: options.key }) });
  const hello = await run.waitFor("hello");
  const frames: ClientFrame[] = [
    {
      t: "start",
      runId: "run-1",
      args: ["--mode", "json", "task"],
      env: {},
      cwd: "",
      base: options.base,
      blobs: ["bundle", "task"],
      inbox: false,
    },
    ...blobFrames("bundle", options.bundle),
    ...blobFrames("task", Buffer.from("do it")),
  ];
  for (const frame of frames) run.write(frame);
  await Promise.race([run.waitFor("exit"), run.waitFor("error")]).catch(() => undefined);
  run.end();
  const { code, timedOut } = await run.done;
  expect(timedOut).toBe(false);
  return { run, hello, code };
}

/** The turn's commit, fetched from its bundle into `repo` (as the local side lands it). */
function fetchTurn(c: ServeCase, run: ServeRun): string {
  const commit = run.frames.find((f) => f.t === "commit") as { head?: string } | undefined;
  const chunks = run.frames.filter((f) => f.t === "blob" && f.kind === "bundle") as Array<{ data: string }>;
  const file = path.join(c.dir, `turn-${Date.now()}.bundle`);
  fs.writeFileSync(file, Buffer.concat(chunks.map((f) => Buffer.from(f.data, "base64"))));
  git(c.repo, "fetch", "-q", file, "HEAD");
  return commit!.head!;
}

const errorOf = (run: ServeRun): string | undefined =>
  (run.frames.find((f) => f.t === "error") as { message: string } | undefined)?.message;

const keptFolders = (c: ServeCase): string[] =>
  fs.readdirSync(c.tmp).filter((name) => name.startsWith("subagent-keep-"));

describe("serve, protocol 2: the agent's workspace kept between turns", () => {
  it("first turn: no have; the workspace is kept; the next turn gets the head in `have` and takes a bundle of only the changes", async () => {
    const c = serveCase();
    const key = "/trees/t1/agents/worker/runner-workspace";
    const first = await keptTurn(c, {
      key,
      bundle: c.bundle,
      base: c.base,
      steps: [
        ...ANSWER_STEPS.slice(0, 3),
        { writeFile: { path: "made-by-child.txt", text: "child\n" } },
        ...ANSWER_STEPS.slice(3),
      ],
    });
    expect(first.code).toBe(0);
    expect(first.hello).toMatchObject({ t: "hello", version: 2, have: [] });
    expect((first.hello as { max_bundle?: number }).max_bundle).toBeGreaterThan(0);
    // Kept under the scratch root, and nothing else left there.
    expect(keptFolders(c)).toHaveLength(1);
    expect(fs.readdirSync(c.tmp)).toEqual(keptFolders(c));
    const head1 = fetchTurn(c, first.run);

    // The parent changes a.txt; the new base is the turn's tree with that change, sent without what head1 holds.
    git(c.repo, "read-tree", head1);
    const blob = execFileSync("git", ["hash-object", "-w", "--stdin"], { cwd: c.repo, input: "a, changed\n" });
    git(c.repo, "update-index", "--cacheinfo", `100644,${blob.toString().trim()},a.txt`);
    // As the local side makes it: the new state on top of the kept commit, which the bundle then leaves out.
    const base2 = git(c.repo, "commit-tree", git(c.repo, "write-tree"), "-p", head1, "-m", "base 2");
    const small = bundleWithout(c.repo, base2, [head1]);
    expect(small.toString("latin1")).toContain(`\n-${head1}`);

    const second = await keptTurn(c, {
      key,
      bundle: small,
      base: base2,
      steps: [
        ...ANSWER_STEPS.slice(0, 3),
        { writeFile: { path: "second.txt", text: "second\n" } },
        ...ANSWER_STEPS.slice(3),
      ],
    });
    expect(errorOf(second.run)).toBeUndefined();
    expect(second.code).toBe(0);
    expect(second.hello).toMatchObject({ t: "hello", version: 2, have: [head1] });
    const head2 = fetchTurn(c, second.run);
    // The second turn worked on the kept workspace brought to base 2: the changed file, the first turn's file, its own.
    expect(git(c.repo, "show", `${head2}:a.txt`)).toBe("a, changed");
    expect(git(c.repo, "show", `${head2}:made-by-child.txt`)).toBe("child");
    expect(git(c.repo, "show", `${head2}:second.txt`)).toBe("second");
    expect(git(c.repo, "show", `${head2}:sub/b.txt`)).toBe("b");
    expect(keptFolders(c)).toHaveLength(1);
  });

  it("a bundle whose prerequisites the far side lacks: one clear error, nothing kept", async () => {
    const c = serveCase();
    fs.writeFileSync(path.join(c.repo, "a.txt"), "a, changed\n");
    git(c.repo, "add", "-A");
    const base2 = git(c.repo, "commit-tree", git(c.repo, "write-tree"), "-p", c.base, "-m", "base 2");
    const { run, hello, code } = await keptTurn(c, {
      key: "never-seen",
      bundle: bundleWithout(c.repo, base2, [c.base]),
      base: base2,
    });
    expect(hello).toMatchObject({ have: [] });
    expect(code).toBe(1);
    expect(errorOf(run)).toMatch(new RegExp(`the bundle needs commits this side does not have \\(${c.base}\\)`));
    expect(run.frames.filter((f) => f.t === "error")).toHaveLength(1);
    expect(fs.readdirSync(c.tmp)).toEqual([]);
  });

  it("a bundle over the far side's configured bound: the bound is in its hello, and the bundle is refused naming it", async () => {
    const c = serveCase();
    const bound = 2048;
    fs.writeFileSync(path.join(c.repo, "big.bin"), randomBytes(8192));
    git(c.repo, "add", "-A");
    const base = git(c.repo, "commit-tree", git(c.repo, "write-tree"), "-m", "big");
    const bundle = bundleWithout(c.repo, base, []);
    expect(bundle.length).toBeGreaterThan(bound);
    const { run, hello, code } = await keptTurn(c, {
      key: "k",
      bundle,
      base,
      env: { [SERVE_ENV.maxBundle]: String(bound) },
    });
    expect(hello).toMatchObject({ max_bundle: bound });
    expect(code).toBe(1);
    expect(errorOf(run)).toBe(`bundle larger than its bound of ${bound} bytes`);
    expect(fs.readdirSync(c.tmp)).toEqual([]);
  });

  it("a version-1 hello gets version 1's answer (no have, no bound) and nothing is kept", async () => {
    const c = serveCase();
    const run = startServe(c, scriptEnv(ANSWER_STEPS));
    run.write({ t: "hello", version: 1 });
    const hello = await run.waitFor("hello");
    expect(hello).toEqual({ t: "hello", version: 1, server: expect.any(String) });
    run.write({
      t: "start",
      runId: "run-1",
      args: ["--mode", "json", "task"],
      env: {},
      cwd: "",
      base: c.base,
      blobs: ["bundle", "task"],
      inbox: false,
    });
    for (const frame of [...blobFrames("bundle", c.bundle), ...blobFrames("task", Buffer.from("x"))]) run.write(frame);
    await run.waitFor("exit");
    run.end();
    expect((await run.done).code).toBe(0);
    expect(fs.readdirSync(c.tmp)).toEqual([]);
  });

  it("a kept workspace no turn claimed for a day is removed by the next far side", async () => {
    const c = serveCase();
    const stale = path.join(c.tmp, "subagent-keep-0123456789abcdef0123456789abcdef01234567");
    fs.mkdirSync(path.join(stale, "work"), { recursive: true });
    const old = new Date(Date.now() - 25 * 60 * 60 * 1000);
    fs.utimesSync(stale, old, old);
    const { code } = await keptTurn(c, { bundle: c.bundle, base: c.base });
    expect(code).toBe(0);
    expect(fs.existsSync(stale)).toBe(false);
  });
});
