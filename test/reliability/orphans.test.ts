/**
 * Area 3b — no orphans, the wrapper's own guarantee: however the wrapper ends, SIGKILL
 * included, nothing it started is alive 2 s later, whatever the child is — a bash script, one
 * that ignores SIGTERM, the fake pi without the task extension (so without pi's own orphan
 * check), a child whose tool leaves its process group with `setsid`. The orphan guard
 * (src/wrapper/orphan-guard.ts) does it; processes are counted from /proc by the suite's tag,
 * and files by what is left in the wrapper's temp folder (its TMPDIR, one per case): the run's
 * own folder there (its task file, the limits' private inbox, a sandbox's private copies) goes
 * with it.
 * scripts/reliability.mjs runs the same kinds many more times.
 */
import { execFileSync } from "node:child_process";
import { chmod, mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { procStatFields } from "../../src/lib/process.js";
import { skipOrFail } from "../support/needs.js";
import { killAll, pidAlive } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, type WrapperCase, wrapperCase } from "../support/wrapper-harness.js";
import { killLeftovers, leftoverProcesses, messageEnd, settleLeftovers } from "./support.js";

afterEach(async () => {
  await killAll();
  await killLeftovers();
  await cleanupWrapperCases();
});

/** The promise: nothing left this long after the wrapper is gone. */
const GONE_WITHIN_MS = 2000;
const TRIALS = 2;

/** `setsid` a sleep and wait until it is in its own session (its pid file is written from there). */
const SETSID_SLEEP =
  "setsid sh -c 'echo $$ > setsid.pid; exec sleep 60' &\nwhile [ ! -s setsid.pid ]; do sleep 0.01; done\n";

/** Children that are not a cooperating pi. Each writes `ready` once all its processes exist. */
const SCRIPTS: Array<[string, string]> = [
  ["a bash script (a sleep in the background and one in front)", "sleep 60 &\necho > ready\nsleep 61\n"],
  ["a script that ignores SIGTERM (its sleeps inherit that)", "trap '' TERM\nsleep 60 &\necho > ready\nsleep 61\n"],
  ["a script whose tool leaves the process group (setsid sleep 60)", `${SETSID_SLEEP}sleep 61 &\necho > ready\nwait\n`],
];

/** A case whose `pi` is a bash script with `body`. */
async function scriptCase(body: string): Promise<{ c: WrapperCase; env: NodeJS.ProcessEnv }> {
  const c = await wrapperCase({ meta: defaultMeta() });
  const bin = path.join(c.dir, "child.sh");
  await writeFile(bin, `#!/bin/bash\n${body}`);
  await chmod(bin, 0o755);
  return { c, env: { PI_SUBAGENTS_PI_BIN: bin } };
}

/** What is left in the case's temp folder (the wrapper's TMPDIR) once it holds `keep` entries or fewer, or after `ms`. */
async function settleTempFiles(c: WrapperCase, ms = GONE_WITHIN_MS, keep = 0): Promise<string[]> {
  const tmp = path.join(c.dir, "tmp");
  const deadline = Date.now() + ms;
  let left = await readdir(tmp, { recursive: true });
  while (left.length > keep && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    left = await readdir(tmp, { recursive: true });
  }
  return left;
}

const bwrapMissing = (): string | undefined => {
  try {
    execFileSync("bwrap", ["--ro-bind", "/", "/", "true"], { stdio: "ignore" });
    return undefined;
  } catch {
    return "bwrap (Debian package bubblewrap) is missing or cannot make a namespace here";
  }
};

const exists = async (file: string) => (await stat(file).catch(() => undefined)) !== undefined;
const waitForFile = (file: string) =>
  vi.waitFor(async () => expect(await exists(file)).toBe(true), { timeout: 15_000, interval: 20 });

/** The session id of a live process (field 6 of /proc/<pid>/stat). */
function sessionOf(pid: number): number {
  const fields = procStatFields(pid);
  if (!fields) throw new Error(`process ${pid} is gone`);
  return Number(fields[3]);
}

describe(`area 3b: SIGKILL to the wrapper, the child not a cooperating pi → 0 processes alive ${GONE_WITHIN_MS} ms later`, () => {
  it.each(SCRIPTS)(`%s (${TRIALS} trials)`, async (name, body) => {
    for (let i = 0; i < TRIALS; i++) {
      const { c, env } = await scriptCase(body);
      const wrapper = c.start({ env });
      await waitForFile(path.join(c.dir, "ready"));
      if (name.includes("setsid")) {
        // The case is what it says: the sleep really left the child's session.
        const setsidPid = Number(await readFile(path.join(c.dir, "setsid.pid"), "utf8"));
        expect(sessionOf(setsidPid)).toBe(setsidPid);
      }
      process.kill(wrapper.pid, "SIGKILL");
      await wrapper.done;
      expect(await settleLeftovers(GONE_WITHIN_MS)).toEqual([]);
      // The child never read its task: the task file (the task's full text) went with the run's folder.
      expect(await settleTempFiles(c)).toEqual([]);
    }
  });

  it("a run with limits: its task file and the limits' private inbox are in the temp folder while it runs, and 0 files are left once it is SIGKILLed", async () => {
    const c = await wrapperCase({ meta: defaultMeta({ limits: { max_turns: 5 } }) });
    const bin = path.join(c.dir, "child.sh");
    await writeFile(bin, "#!/bin/bash\necho > ready\nexec sleep 61\n");
    await chmod(bin, 0o755);
    const wrapper = c.start({ env: { PI_SUBAGENTS_PI_BIN: bin } });
    await waitForFile(path.join(c.dir, "ready"));
    const during = (await readdir(path.join(c.dir, "tmp"), { recursive: true })).sort();
    expect(during).toHaveLength(3);
    expect(during[0]).toMatch(/^pi-subagent-run-\d+-[0-9a-f]{12}$/);
    expect(during.slice(1)).toEqual([path.join(during[0]!, "inbox"), path.join(during[0]!, "task.txt")]);
    process.kill(wrapper.pid, "SIGKILL");
    await wrapper.done;
    expect(await settleLeftovers(GONE_WITHIN_MS)).toEqual([]);
    expect(await settleTempFiles(c)).toEqual([]);
  });

  it("a sandboxed run: its private copies of pi's agent dir and jiti's cache are made in the run's folder, and 0 of its files are left once it is SIGKILLed", async (ctx) => {
    skipOrFail(ctx, bwrapMissing());
    const c = await wrapperCase({ meta: {} });
    const tmp = path.join(c.dir, "tmp");
    // This machine's jiti cache (not the run's: it stays) and agent dir, which the run copies.
    await mkdir(path.join(tmp, "jiti"));
    await writeFile(path.join(tmp, "jiti", "compiled.js"), "// cached\n");
    const agentDir = path.join(c.dir, "agent");
    await mkdir(agentDir);
    await writeFile(path.join(agentDir, "settings.json"), "{}\n");
    const repo = path.join(c.dir, "repo");
    await mkdir(repo);
    execFileSync("git", ["init", "-q", "-b", "main"], { cwd: repo });
    // The run's workspace folder is the one the sandbox may write: the child says it runs there.
    const scratch = path.join(c.dir, "scratch");
    const bin = path.join(c.dir, "child.sh");
    await writeFile(bin, `#!/bin/bash\necho > ${scratch}/ready\nexec sleep 61\n`);
    await chmod(bin, 0o755);
    const meta = defaultMeta({
      cwd: "repo",
      runner: { name: "box", kind: "sandbox", hide: [] },
      runnerWorkspacePath: scratch,
    });
    await writeFile(c.metaPath, JSON.stringify(meta));
    const wrapper = c.start({ env: { PI_SUBAGENTS_PI_BIN: bin, PI_CODING_AGENT_DIR: agentDir } });
    await waitForFile(path.join(scratch, "ready"));
    const during = await readdir(tmp, { recursive: true });
    expect(during.filter((name) => /subagent-(agent-dir|jiti)-/.test(path.basename(name)))).toEqual([
      expect.stringMatching(/^pi-subagent-run-[^/]+\/subagent-(agent-dir|jiti)-\w+$/),
      expect.stringMatching(/^pi-subagent-run-[^/]+\/subagent-(agent-dir|jiti)-\w+$/),
    ]);
    process.kill(wrapper.pid, "SIGKILL");
    await wrapper.done;
    expect(await settleLeftovers(GONE_WITHIN_MS)).toEqual([]);
    expect((await settleTempFiles(c, GONE_WITHIN_MS, 2)).sort()).toEqual(["jiti", path.join("jiti", "compiled.js")]);
  });

  it(`the fake pi without the task extension, a grandchild in its group (${TRIALS} trials)`, async () => {
    const slow = {
      steps: [{ spawnGrandchild: { sleepMs: 60_000, pidFile: "gc.pid" } }, { sleep: 60_000 }, { echoTask: true }],
    };
    for (let i = 0; i < TRIALS; i++) {
      const c = await wrapperCase({ meta: defaultMeta(), scenario: slow });
      const wrapper = c.start();
      await waitForFile(path.join(c.dir, "gc.pid"));
      process.kill(wrapper.pid, "SIGKILL");
      await wrapper.done;
      expect(await settleLeftovers(GONE_WITHIN_MS)).toEqual([]);
    }
  });
});

describe("area 3b: the normal end of a run", () => {
  it("a child that answers and exits, leaving a setsid sleep (one that ignores SIGTERM, too) behind: result.json written, 0 processes once the wrapper has exited", async () => {
    const answer = messageEnd("done").replaceAll("'", "'\\''");
    const stubborn =
      "setsid sh -c 'trap \"\" TERM; echo $$ > stubborn.pid; sleep 60' > /dev/null 2>&1 &\nwhile [ ! -s stubborn.pid ]; do sleep 0.01; done\n";
    const { c, env } = await scriptCase(
      `${SETSID_SLEEP.replace("&", "> /dev/null 2>&1 &")}${stubborn}echo '${answer}'\n`,
    );
    const run = await c.collect(await c.start({ env }).done);
    expect(run.code).toBe(0);
    expect(run.result).toMatchObject({ status: "completed", finalText: "done", forcedExit: false });
    // Not "within 2 s": the wrapper ends them (SIGKILL for the one that ignores SIGTERM) and its guard before it exits.
    expect(await leftoverProcesses()).toEqual([]);
  });

  it("documented limit: a process that drops the run's token from its environment (env -i setsid …) outlives a SIGKILLed wrapper", async () => {
    const { c, env } = await scriptCase(
      "env -i setsid sh -c 'echo $$ > escaped.pid; exec sleep 60' &\nsleep 61 &\nwhile [ ! -s escaped.pid ]; do sleep 0.01; done\necho > ready\nwait\n",
    );
    const wrapper = c.start({ env });
    await waitForFile(path.join(c.dir, "ready"));
    const escaped = Number(await readFile(path.join(c.dir, "escaped.pid"), "utf8"));
    try {
      process.kill(wrapper.pid, "SIGKILL");
      await wrapper.done;
      // Everything that kept the token is gone; the one that dropped it is not.
      expect(await settleLeftovers(GONE_WITHIN_MS)).toEqual([]);
      expect(pidAlive(escaped)).toBe(true);
    } finally {
      process.kill(escaped, "SIGKILL");
    }
  });
});
