import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  killProcessesWithEnvSync,
  processAlive,
  processesWithEnv,
  processesWithEnvSync,
  processIdentity,
  processRunning,
  processState,
  readIdentityFile,
  readIdentityFileSync,
  sameProcessAlive,
} from "../../../src/lib/process.js";
import { parseProcessIdentity } from "../../../src/lib/process-identity.js";
import { watchParent } from "../../../src/wrapper/interrupts.js";
import { FakeClock } from "../../support/fake-clock.js";

const started: ChildProcess[] = [];
afterEach(async () => {
  for (const child of started.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await once(child, "exit");
    }
  }
});

function start(command: string, env: NodeJS.ProcessEnv = process.env): ChildProcess {
  const child = spawn("/bin/sh", ["-c", command], { stdio: ["ignore", "pipe", "ignore"], env });
  started.push(child);
  return child;
}

/**
 * A zombie: `sh` starts a child, then becomes `sleep`, which never reaps it. The child ends
 * after the exec, so the shell cannot reap it first.
 */
async function zombie(env: NodeJS.ProcessEnv = process.env): Promise<{ pid: number; parent: ChildProcess }> {
  const parent = start("sleep 0.3 & echo $!; exec sleep 30", env);
  const [line] = (await once(parent.stdout!, "data")) as [Buffer];
  const pid = Number(line.toString().trim());
  await vi.waitFor(() => expect(processState(pid)).toBe("Z"), { timeout: 5_000, interval: 10 });
  return { pid, parent };
}

describe("processAlive", () => {
  it("is true for a running process, false once it has exited and been reaped", async () => {
    expect(processAlive(process.pid)).toBe(true);
    const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
    const pid = child.pid!;
    await new Promise((resolve) => child.once("exit", resolve));
    expect(processAlive(pid)).toBe(false);
  });

  it("is true for a process of another user (EPERM)", () => {
    // pid 1 always exists; unless this runs as root, signalling it is refused with EPERM.
    expect(processAlive(1)).toBe(true);
  });
});

describe("processState and processRunning", () => {
  it("read a live process as running and a reaped one as gone", async () => {
    expect(processState(process.pid)).toMatch(/^[RS]$/);
    expect(processRunning(process.pid)).toBe(true);
    const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
    const pid = child.pid!;
    await once(child, "exit");
    expect(processState(pid)).toBeUndefined();
    expect(processRunning(pid)).toBe(false);
  });

  it("count a zombie as ended although its pid still answers signal 0", async () => {
    const { pid } = await zombie();
    expect(processAlive(pid)).toBe(true);
    expect(processRunning(pid)).toBe(false);
  });
});

describe("processesWithEnv", () => {
  it("finds the running processes whose environment holds the whole entry, zombies excluded", async () => {
    const tag = `PSA_TEST_TAG=${randomUUID()}`;
    const [name, value] = tag.split("=") as [string, string];
    const tagged = start("exec sleep 30", { ...process.env, [name]: value });
    start("exec sleep 30", { ...process.env, [name]: `${value}-other`, [`X${name}`]: value });
    await vi.waitFor(async () => expect(await processesWithEnv(tag)).toEqual([tagged.pid]), { timeout: 5_000 });
    expect(processesWithEnvSync(tag)).toEqual([tagged.pid]);

    tagged.kill("SIGKILL");
    await once(tagged, "exit");
    expect(await processesWithEnv(tag)).toEqual([]);
    expect(processesWithEnvSync(tag)).toEqual([]);
  });

  it("leaves out a zombie that carries the entry", async () => {
    const tag = `PSA_TEST_TAG=${randomUUID()}`;
    const [name, value] = tag.split("=") as [string, string];
    const { parent } = await zombie({ ...process.env, [name]: value });
    expect(processesWithEnvSync(tag)).toEqual([parent.pid]);
    expect(await processesWithEnv(tag)).toEqual([parent.pid]);
  });
});

describe("processesWithEnvSync with several entries, and killProcessesWithEnvSync", () => {
  it("finds a process holding any of the entries in one look, and kills each it finds", async () => {
    const [a, b] = [`PSA_TEST_A=${randomUUID()}`, `PSA_TEST_B=${randomUUID()}`];
    const env = (entry: string) => ({ ...process.env, [entry.split("=")[0]!]: entry.split("=")[1]! });
    const first = start("exec sleep 30", env(a));
    const second = start("exec sleep 30", env(b));
    const other = start("exec sleep 30", process.env);
    await vi.waitFor(() => expect(processesWithEnvSync(a, b).sort()).toEqual([first.pid, second.pid].sort()), {
      timeout: 5_000,
    });
    killProcessesWithEnvSync(a, b);
    await Promise.all([once(first, "exit"), once(second, "exit")]);
    expect(first.signalCode).toBe("SIGKILL");
    expect(second.signalCode).toBe("SIGKILL");
    expect(other.exitCode === null && other.signalCode === null).toBe(true);
  });
});

describe("sameProcessAlive: the one rule for a process a file names", () => {
  const me = processIdentity(process.pid);

  it("holds for this process's own identity, read back from its file", async () => {
    expect(me.startTicks).toMatch(/^\d+$/);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "psa-identity-"));
    try {
      const file = path.join(dir, "wrapper.pid");
      fs.writeFileSync(file, `${JSON.stringify(me)}\n`);
      expect(await readIdentityFile(file)).toEqual({ identity: me });
      expect(readIdentityFileSync(file)).toEqual({ identity: me });
      expect(sameProcessAlive(me)).toBe(true);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("does not hold for a live pid recorded without its start time (an older file's bare pid proves nothing)", () => {
    expect(parseProcessIdentity(`${process.pid}\n`)).toEqual({ pid: process.pid });
    expect(sameProcessAlive({ pid: process.pid })).toBe(false);
  });

  it("does not hold for a live pid started at another tick, or on another boot (the pid was reused)", () => {
    expect(sameProcessAlive({ ...me, startTicks: String(Number(me.startTicks) + 1) })).toBe(false);
    expect(sameProcessAlive({ ...me, bootId: "00000000-0000-0000-0000-000000000000" })).toBe(false);
  });

  it("does not hold for a zombie with its recorded identity (it has exited)", async () => {
    const { pid } = await zombie();
    const identity = processIdentity(pid);
    expect(identity.startTicks).toBeDefined();
    expect(sameProcessAlive(identity)).toBe(false);
  });

  it("reads garbage, a pid of 1 and a folder as no identity, with why", async () => {
    expect(parseProcessIdentity("{{")).toBeUndefined();
    expect(parseProcessIdentity('{"pid":1}')).toBeUndefined();
    expect(parseProcessIdentity('{"released":true}')).toBeUndefined();
    expect(await readIdentityFile(os.tmpdir())).toEqual({
      problem: expect.stringMatching(/not a file|cannot be read/),
    });
    expect(readIdentityFileSync(path.join(os.tmpdir(), `missing-${randomUUID()}`))).toEqual({ problem: "is gone" });
  });
});

describe("the wrapper's parent watch", () => {
  it("takes a parent that is a zombie for gone (its pid still answers signal 0)", async () => {
    const { pid } = await zombie();
    const clock = new FakeClock();
    const reasons: string[] = [];
    const stop = watchParent(
      { PI_SUBAGENTS_PARENT_PID: String(pid) },
      clock,
      { identify: processIdentity, stillRuns: sameProcessAlive },
      (reason) => reasons.push(reason),
    );
    await clock.advance(1000);
    stop?.();
    expect(reasons).toEqual([`parent process ${pid} is gone`]);
  });
});
