/**
 * How long the orphan guard waits between its SIGTERM and its SIGKILL once its wrapper is
 * gone: only until what the SIGTERM reached is gone, and at most GUARD_KILL_AFTER_S by the
 * clock. Told by the guard's own `sleep` calls (a `sleep` on its PATH that logs each one) and
 * by the time to the SIGKILL: a child that obeys SIGTERM costs the guard one short sleep, one
 * that ignores it the whole second, and then the SIGKILL — a second however long each sleep
 * takes (a loaded machine), not ten sleeps.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ENV } from "../../src/contracts/env.js";
import { procStatFields } from "../../src/lib/process.js";
import { guardCommand } from "../../src/wrapper/orphan-guard.js";
import { GUARD_KILL_AFTER_S, GUARD_POLLS_PER_S } from "../../src/wrapper/orphan-guard-script.js";
import { pidAlive, waitForPidExit } from "../support/processes.js";

const dirs: string[] = [];
const started: ChildProcess[] = [];
afterEach(() => {
  for (const child of started.splice(0)) if (child.pid && pidAlive(child.pid)) process.kill(child.pid, "SIGKILL");
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * A folder with a `sleep` that appends its argument to `sleeps.log`, then sleeps that long, or
 * `actual` seconds when given (a sleep that overruns, as on a loaded machine).
 */
function loggingSleep(actual?: string): { dir: string; log: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "psa-guard-wait-"));
  dirs.push(dir);
  const log = path.join(dir, "sleeps.log");
  const real = ["/bin/sleep", "/usr/bin/sleep"].find((file) => fs.existsSync(file));
  if (!real) throw new Error("no sleep binary");
  const args = actual === undefined ? '"$@"' : actual;
  fs.writeFileSync(path.join(dir, "sleep"), `#!/bin/sh\necho "$1" >> ${JSON.stringify(log)}\nexec ${real} ${args}\n`, {
    mode: 0o755,
  });
  return { dir, log };
}

/** A Node process in a group of its own, carrying the run's token; resolves once it is listening for signals. */
async function tokenChild(token: string, ignoresTerm: boolean): Promise<ChildProcess> {
  const code = `${ignoresTerm ? "process.on('SIGTERM', () => {});" : ""} setInterval(() => {}, 1000); console.log('ready');`;
  const child = spawn(process.execPath, ["-e", code], {
    detached: true,
    stdio: ["ignore", "pipe", "ignore"],
    env: { ...process.env, [ENV.runToken]: token },
  });
  started.push(child);
  await new Promise<void>((resolve) => child.stdout!.once("data", () => resolve()));
  return child;
}

/**
 * A Node process carrying the run's token, in a session of its own, whose parent never reaps
 * it (a `sleep` it was started from by `exec`): once ended it stays a zombie, as a child whose
 * parent died with the wrapper may until init reaps it. Resolves with the two pids.
 */
async function unreapedTokenChild(token: string): Promise<{ child: number; parent: ChildProcess }> {
  const node = `${JSON.stringify(process.execPath)} -e "console.log(process.pid); setInterval(() => {}, 1000)"`;
  const parent = spawn("/bin/sh", ["-c", `${ENV.runToken}=${token} setsid ${node} & exec sleep 30`], {
    detached: true,
    stdio: ["ignore", "pipe", "ignore"],
  });
  started.push(parent);
  const pid = await new Promise<number>((resolve) =>
    parent.stdout!.once("data", (data: Buffer) => resolve(Number(String(data).trim()))),
  );
  return { child: pid, parent };
}

/** Starts the guard for `child`, tells it the group, then closes its pipe as a dying wrapper does; resolves when the guard has exited. */
async function guardAfterWrapperDied(
  token: string,
  child: { pid?: number | undefined },
  sleepDir: string,
): Promise<void> {
  const [file, args] = guardCommand(token, path.join(sleepDir, ".result.json.1.reserve"));
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${sleepDir}:${process.env.PATH ?? ""}` };
  delete env[ENV.runToken];
  const guard = spawn(file, args, { stdio: ["pipe", "ignore", "ignore"], detached: true, env });
  started.push(guard);
  const exited = new Promise<void>((resolve) => guard.once("exit", () => resolve()));
  guard.stdin!.end(`pgid ${child.pid}\n`);
  await exited;
}

const sleeps = (log: string) => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").split("\n").filter(Boolean) : []);

describe("the orphan guard's wait between SIGTERM and SIGKILL", () => {
  it("ends as soon as a child that obeys SIGTERM is gone: fewer sleeps than the whole wait", async () => {
    const { dir, log } = loggingSleep();
    const token = randomBytes(16).toString("hex");
    const child = await tokenChild(token, false);
    await guardAfterWrapperDied(token, child, dir);
    expect(await waitForPidExit(child.pid!)).toBe(true);
    const taken = sleeps(log);
    expect(taken.length).toBeGreaterThanOrEqual(1);
    expect(taken.length).toBeLessThan(GUARD_KILL_AFTER_S * GUARD_POLLS_PER_S);
    expect(new Set(taken)).toEqual(new Set(["0.1"]));
  });

  it("counts a zombie as gone: a child whose parent does not reap it does not hold the guard for the whole wait", async () => {
    const { dir, log } = loggingSleep();
    const token = randomBytes(16).toString("hex");
    const { child, parent } = await unreapedTokenChild(token);
    await guardAfterWrapperDied(token, { pid: child }, dir);
    expect(procStatFields(child)?.[0]).toBe("Z");
    expect(sleeps(log).length).toBeLessThan(GUARD_KILL_AFTER_S * GUARD_POLLS_PER_S);
    process.kill(parent.pid!, "SIGKILL");
  });

  /** Starts the guard for a child that ignores SIGTERM; resolves with the signal that ended it and the ms until then. */
  async function guardForStubbornChild(sleepDir: string): Promise<{ signal: NodeJS.Signals | null; ms: number }> {
    const token = randomBytes(16).toString("hex");
    const child = await tokenChild(token, true);
    const from = performance.now();
    const killed = new Promise<{ signal: NodeJS.Signals | null; ms: number }>((resolve) =>
      child.once("exit", (_code, signal) => resolve({ signal, ms: performance.now() - from })),
    );
    await guardAfterWrapperDied(token, child, sleepDir);
    return killed;
  }
  // /proc/uptime counts hundredths: the deadline may come up to one of them early.
  const WHOLE_WAIT_MS = GUARD_KILL_AFTER_S * 1000 - 10;

  it("waits the whole GUARD_KILL_AFTER_S for a child that ignores SIGTERM, in sleeps of 0.1 s, then SIGKILLs it", async () => {
    const { dir, log } = loggingSleep();
    const { signal, ms } = await guardForStubbornChild(dir);
    expect(signal).toBe("SIGKILL");
    expect(ms).toBeGreaterThanOrEqual(WHOLE_WAIT_MS);
    const taken = sleeps(log);
    expect(taken.length).toBeGreaterThanOrEqual(1);
    expect(taken.length).toBeLessThanOrEqual(GUARD_KILL_AFTER_S * GUARD_POLLS_PER_S);
    expect(new Set(taken)).toEqual(new Set(["0.1"]));
  });

  it("the wait is a deadline, not a count of sleeps: when each sleep takes 0.3 s, the SIGKILL comes after GUARD_KILL_AFTER_S, not ten sleeps", async () => {
    const { dir, log } = loggingSleep("0.3");
    const { signal, ms } = await guardForStubbornChild(dir);
    expect(signal).toBe("SIGKILL");
    expect(ms).toBeGreaterThanOrEqual(WHOLE_WAIT_MS);
    // One sleep past the deadline at most: ⌈1 s / 0.3 s⌉ + 1. Counting would take all ten (3 s).
    expect(sleeps(log).length).toBeLessThanOrEqual(Math.ceil((GUARD_KILL_AFTER_S * 1000) / 300) + 1);
  });
});
