/**
 * Artifact paths a run can be given by mistake or by someone else: under /proc, under a
 * regular file, on a read-only mount, a FIFO, a symlink, two names for one file, a full disk.
 * The wrapper never hangs on one (each run here is bounded by the harness's 25 s limit and
 * must end long before), never writes through a link, and whenever it started a child leaves
 * a result.json. Mounts need root: without it those cases are skipped, saying why.
 */
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { WRAPPER_EXIT } from "../../src/contracts/result.js";
import { killAll } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, fakePiRecord, wrapperCase } from "../support/wrapper-harness.js";

afterEach(async () => {
  await killAll();
  await cleanupWrapperCases();
});

const ECHO = { steps: [{ echoTask: true }] };
const linux = process.platform === "linux";

describe("a path the wrapper must not hang on: the artifact is reported, the run goes on", () => {
  // /proc and /sys are Linux's: elsewhere these paths are no pseudo-filesystem.
  it.skipIf(!linux).each([
    ["eventsPath", "events", "/proc/no-such-pid/run/events.jsonl", "it is on the proc pseudo-filesystem (/proc)"],
    ["stdoutPath", "stdout log", "/proc/self/fd/stdout.log", "it is on the proc pseudo-filesystem (/proc/self/fd)"],
    ["transcriptPath", "transcript", "/sys/kernel/transcript.md", "it is on the sysfs pseudo-filesystem (/sys/kernel)"],
  ])("%s under a pseudo-filesystem (%s)", async (field, label, target, why) => {
    const run = await (await wrapperCase({ meta: defaultMeta({ [field]: target }), scenario: ECHO })).run();
    expect(run.timedOut).toBe(false);
    expect(run.code).toBe(0);
    expect(run.result).toMatchObject({
      status: "completed",
      finalText: "inspect auth",
      errorMessage: `${label} ${target} could not be written: ${why}`,
    });
    expect(run.stderr).toContain(`subagent-wrapper: warning: ${label} ${target} could not be written: ${why}\n`);
  });

  it.each([
    ["eventsPath", "events"],
    ["stdoutPath", "stdout log"],
    ["transcriptPath", "transcript"],
  ])("a FIFO as %s is never opened (an open would wait for a reader)", async (field, label) => {
    const c = await wrapperCase({ meta: defaultMeta({ [field]: "pipe" }), scenario: ECHO });
    execFileSync("mkfifo", [path.join(c.dir, "pipe")]);
    const run = await c.run();
    expect(run.timedOut).toBe(false);
    expect(run.result).toMatchObject({
      status: "completed",
      errorMessage: `${label} ${path.join(c.dir, "pipe")} could not be written: it exists and is not a regular file`,
    });
  });

  it("an eventsPath under a regular file: reported, and result.json written", async () => {
    const run = await (
      await wrapperCase({ meta: defaultMeta({ eventsPath: "meta.json/deep/events.jsonl" }), scenario: ECHO })
    ).run();
    expect(run.result).toMatchObject({ status: "completed" });
    expect(run.result!.errorMessage).toBe(
      `events ${path.join(run.dir, "meta.json/deep/events.jsonl")} could not be written: ${path.join(run.dir, "meta.json")} is not a folder`,
    );
  });

  it.skipIf(!linux)("a resultPath under /proc keeps the resultPath promise: exit 2, one line, no child", async () => {
    const run = await (
      await wrapperCase({ meta: defaultMeta({ resultPath: "/proc/no-such-pid/x/result.json" }), scenario: ECHO })
    ).run();
    expect(run.timedOut).toBe(false);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      "subagent-wrapper: meta.json resultPath /proc/no-such-pid/x/result.json cannot be written: it is on the proc pseudo-filesystem (/proc)\n",
    );
    await expect(fakePiRecord(run.dir)).rejects.toThrow();
  });
});

describe("links: an artifact is never written through one, and two names for one file are one file", () => {
  it("a symlinked eventsPath is refused and its target left as it was", async () => {
    const c = await wrapperCase({ scenario: ECHO });
    await mkdir(path.join(c.dir, "out"));
    await writeFile(path.join(c.dir, "precious.txt"), "do not overwrite");
    await symlink(path.join(c.dir, "precious.txt"), path.join(c.dir, "out/events.jsonl"));
    expect((await c.start().done).code).toBe(0);
    const result = JSON.parse(await readFile(path.join(c.dir, "out/result.json"), "utf8"));
    expect(result).toMatchObject({ status: "completed" });
    expect(result.errorMessage).toBe(
      `events ${path.join(c.dir, "out/events.jsonl")} could not be written: it is a symbolic link (an artifact is never written through one)`,
    );
    expect(await readFile(path.join(c.dir, "precious.txt"), "utf8")).toBe("do not overwrite");
  });

  it("events and stdout.log in one file through a symlinked folder: exit 2 before any child", async () => {
    const c = await wrapperCase({
      scenario: ECHO,
      meta: defaultMeta({ eventsPath: "real/run.log", stdoutPath: "link/run.log" }),
    });
    await mkdir(path.join(c.dir, "real"));
    await symlink(path.join(c.dir, "real"), path.join(c.dir, "link"));
    const run = await c.run();
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      `subagent-wrapper: meta.json eventsPath and stdoutPath name the same file through a link: ${path.join(c.dir, "real/run.log")}, ${path.join(c.dir, "link/run.log")}\n`,
    );
    await expect(fakePiRecord(run.dir)).rejects.toThrow();
  });

  it("a result whose rename would replace the run's events (a symlinked folder): exit 2 before any child", async () => {
    const c = await wrapperCase({
      scenario: ECHO,
      meta: defaultMeta({ eventsPath: "real/events.jsonl", resultPath: "link/events.jsonl" }),
    });
    await mkdir(path.join(c.dir, "real"));
    await symlink(path.join(c.dir, "real"), path.join(c.dir, "link"));
    const run = await c.run();
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      `subagent-wrapper: meta.json eventsPath and resultPath name the same file through a link: ${path.join(c.dir, "real/events.jsonl")}, ${path.join(c.dir, "link/events.jsonl")}\n`,
    );
    await expect(fakePiRecord(run.dir)).rejects.toThrow();
  });
});

describe("mounts (root only): a read-only folder and a full disk", () => {
  const mounts: string[] = [];
  let canMount = false;
  let base: string;
  beforeAll(async () => {
    base = await mkdtemp(path.join(os.tmpdir(), "psa-mounts-"));
    try {
      const probe = path.join(base, "probe");
      await mkdir(probe);
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe], { stdio: "ignore" });
      execFileSync("umount", [probe], { stdio: "ignore" });
      canMount = true;
    } catch {
      console.log("[paths] skipping the mount cases: mounting a tmpfs is not permitted here (needs root)");
    }
  });
  afterAll(async () => {
    for (const dir of mounts.splice(0)) execFileSync("umount", [dir], { stdio: "ignore" });
    await rm(base, { recursive: true, force: true });
  });
  async function tmpfs(name: string, options: string): Promise<string> {
    const dir = path.join(base, name);
    await mkdir(dir);
    execFileSync("mount", ["-t", "tmpfs", "-o", options, "tmpfs", dir]);
    mounts.push(dir);
    return dir;
  }

  it("events on a read-only mount: reported at once, the run completes", async (ctx) => {
    if (!canMount) return ctx.skip();
    const ro = await tmpfs("ro", "size=64k,ro");
    const run = await (
      await wrapperCase({ meta: defaultMeta({ eventsPath: path.join(ro, "run/events.jsonl") }), scenario: ECHO })
    ).run();
    expect(run.timedOut).toBe(false);
    expect(run.result).toMatchObject({ status: "completed" });
    expect(run.result!.errorMessage).toMatch(
      /^events .*\/ro\/run\/events\.jsonl could not be written: EROFS: read-only file system/,
    );
  });

  it("a resultPath on a read-only mount: exit 2, one line", async (ctx) => {
    if (!canMount) return ctx.skip();
    const ro = await tmpfs("ro2", "size=64k,ro");
    const run = await (
      await wrapperCase({ meta: defaultMeta({ resultPath: path.join(ro, "result.json") }), scenario: ECHO })
    ).run();
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /^subagent-wrapper: meta\.json resultPath .*\/ro2\/result\.json cannot be written: EROFS[^\n]*\n$/,
    );
  });

  it("the disk fills up during the run (a 2 MB line into stdout.log on a 512 KiB tmpfs): result.json is still written", async (ctx) => {
    if (!canMount) return ctx.skip();
    const full = await tmpfs("full", "size=512k");
    const meta = defaultMeta({
      resultPath: path.join(full, "result.json"),
      eventsPath: path.join(full, "events.jsonl"),
      stdoutPath: path.join(full, "stdout.log"),
      stderrPath: path.join(full, "stderr.log"),
      transcriptPath: path.join(full, "transcript.md"),
    });
    const scenario = {
      steps: [
        { bigLine: { type: "garbage", bytes: 2_000_000 } },
        { tool: { id: "t1", name: "read" } },
        { echoTask: true },
      ],
    };
    const run = await (await wrapperCase({ meta, scenario })).run();
    expect(run.timedOut).toBe(false);
    expect(run.code).toBe(0);
    const result = JSON.parse(await readFile(path.join(full, "result.json"), "utf8"));
    expect(result).toMatchObject({ status: "completed", finalText: "inspect auth", exitCode: 0 });
    expect(result.errorMessage).toMatch(/stdout log .* could not be written: ENOSPC/);
    expect(result.errorMessage).toMatch(/result\.json was written into the space reserved for it \(ENOSPC/);
    expect(run.stderr).toMatch(/^subagent-wrapper: warning: result .* went into the space reserved for it/m);
    expect((await readdir(full)).filter((name) => name.endsWith(".reserve") || name.endsWith(".tmp"))).toEqual([]);
  });

  it("the disk is full before the run: no child is started, and the wrapper exits 3 saying why", async (ctx) => {
    if (!canMount) return ctx.skip();
    const full = await tmpfs("full-before", "size=64k");
    await writeFile(path.join(full, "filler"), Buffer.alloc(64 * 1024)).catch(() => undefined);
    const c = await wrapperCase({ meta: defaultMeta({ resultPath: path.join(full, "result.json") }), scenario: ECHO });
    const run = await c.run();
    expect(run.code).toBe(WRAPPER_EXIT.noResult);
    await expect(fakePiRecord(run.dir)).rejects.toThrow();
    const lines = run.stderr.trim().split("\n");
    expect(lines[0]).toMatch(/^subagent-wrapper: result .*result\.json could not be written: ENOSPC/);
    expect(lines.at(-1)).toMatch(/^subagent-wrapper: failed: cannot reserve space for result\.json beside .*: ENOSPC/);
  });
});
