/**
 * The shared ssh connection's bookkeeping (src/wrapper/remote/ssh-master.ts) with a scripted ssh:
 * the first run starts the master, later runs join it, the last one closes it (dead users
 * pruned), a stale socket is cleared, a live lock holder is waited for and a dead one passed
 * over, and a definition with its own sharing options is left alone. The real ssh side is in
 * test/e2e/tree-ssh.test.ts.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SshRunner } from "../../../src/contracts/runners.js";
import type { ProcessIdentity } from "../../../src/lib/process.js";
import { LOCK_WAIT_MS, type SshMasterOperations, useSshMaster } from "../../../src/wrapper/remote/ssh-master.js";
import { FakeClock } from "../../support/fake-clock.js";

const DEFINITION: SshRunner = { kind: "ssh", host: "me@far", capacity: 4 };
const HASH = "0123456789abcdef0123456789abcdef01234567";

interface Machine {
  calls: string[][];
  answering: boolean;
  alive: Set<number>;
  clock: FakeClock;
}

let tmp = "";
let machine: Machine;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "pst-master-unit-"));
  machine = { calls: [], answering: false, alive: new Set([101, 102, 103]), clock: new FakeClock() };
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

const place = () => ({ tmpDir: tmp, uid: process.getuid?.() ?? 0 });
const socketDir = () => path.join(tmp, `pst-ssh-${process.getuid?.() ?? 0}`);
const socket = () => path.join(socketDir(), HASH);

/** The machine as one wrapper process (pid) sees it. */
function opsOf(pid: number): SshMasterOperations {
  return {
    ssh: async (args) => {
      machine.calls.push([String(pid), ...args]);
      if (args[0] === "-G") return { code: 0, stdout: `user me\ncontrolpath ${socket()}\nport 22\n`, stderr: "" };
      if (args[0] === "-N") {
        machine.answering = true;
        fs.writeFileSync(socket(), "");
        return { code: 0, stdout: "", stderr: "" };
      }
      if (args.includes("-O")) {
        machine.answering = false;
        fs.rmSync(socket(), { force: true });
      }
      return { code: 0, stdout: "", stderr: "" };
    },
    socketAnswers: async () => machine.answering,
    self: (): ProcessIdentity => ({ pid, startTicks: String(pid * 10) }),
    alive: (identity) => machine.alive.has(identity.pid),
    clock: machine.clock,
  };
}

const kinds = () =>
  machine.calls.map(
    ([pid, first, ...rest]) =>
      `${pid} ${first === "-N" || first === "-G" ? first : rest.includes("-O") ? "-O exit" : first}`,
  );

describe("the shared ssh connection's users", () => {
  it("the first run starts the master, the next joins it, the last one to leave closes it", async () => {
    const first = await useSshMaster(DEFINITION, place(), opsOf(101));
    const second = await useSshMaster(DEFINITION, place(), opsOf(102));
    expect(first.connection).toEqual({ controlPath: `${socketDir()}/%C`, master: "no" });
    expect(kinds()).toEqual(["101 -G", "101 -N", "102 -G"]);
    const started = machine.calls[1]!;
    expect(started).toContain("ControlMaster=auto");
    expect(started.at(-1)).toBe("me@far");
    expect(fs.readdirSync(`${socket()}.users`).sort()).toEqual(["101.1010", "102.1020"]);
    await first.release();
    expect(kinds()).not.toContain("101 -O exit");
    await second.release();
    expect(kinds().at(-1)).toBe("102 -O exit");
    expect(fs.readdirSync(socketDir())).toEqual([]);
  });

  it("a user that died without leaving is pruned: the last live one closes the master", async () => {
    await useSshMaster(DEFINITION, place(), opsOf(101));
    const live = await useSshMaster(DEFINITION, place(), opsOf(102));
    machine.alive.delete(101);
    await live.release();
    expect(kinds().at(-1)).toBe("102 -O exit");
  });

  it("a socket nothing answers on (a master that died) is removed and a new master started", async () => {
    fs.mkdirSync(socketDir(), { recursive: true, mode: 0o700 });
    fs.writeFileSync(socket(), "");
    machine.answering = false;
    let sawStale = true;
    const ops = opsOf(101);
    const ssh = ops.ssh;
    ops.ssh = async (args, timeoutMs, env) => {
      if (args[0] === "-N") sawStale = fs.existsSync(socket());
      return ssh(args, timeoutMs, env);
    };
    await useSshMaster(DEFINITION, place(), ops);
    expect(sawStale).toBe(false);
    expect(kinds()).toEqual(["101 -G", "101 -N"]);
  });

  it("waits for a live lock holder; takes the lock over from a dead one", async () => {
    fs.mkdirSync(socketDir(), { recursive: true, mode: 0o700 });
    fs.writeFileSync(`${socket()}.lock.1`, JSON.stringify({ pid: 103, startTicks: "1030" }));
    let done = false;
    const joining = useSshMaster(DEFINITION, place(), opsOf(101)).then((use) => {
      done = true;
      return use;
    });
    await machine.clock.advance(200);
    expect(done).toBe(false);
    machine.alive.delete(103);
    await machine.clock.advance(100);
    const use = await joining;
    expect(use.connection.master).toBe("no");
    expect(kinds()).toEqual(["101 -G", "101 -N"]);
    // The dead holder's lock went with the new one's release.
    expect(fs.readdirSync(socketDir()).filter((name) => name.includes(".lock."))).toEqual([]);
  });

  it("goes on without the master when the lock stays held (plain ControlMaster=auto)", async () => {
    fs.mkdirSync(socketDir(), { recursive: true, mode: 0o700 });
    fs.writeFileSync(`${socket()}.lock.4`, JSON.stringify({ pid: 103, startTicks: "1030" }));
    const joining = useSshMaster(DEFINITION, place(), opsOf(101));
    // Step by step: the wait starts only once the socket was asked for.
    for (let waited = 0; waited <= LOCK_WAIT_MS; waited += 1_000) await machine.clock.advance(1_000);
    const use = await joining;
    expect(use.connection).toEqual({ controlPath: `${socketDir()}/%C` });
    expect(kinds()).toEqual(["101 -G"]);
  });

  it("leaves a definition that chooses its own sharing alone", async () => {
    for (const options of [["-o", "ControlPath=/x/%C"], ["-oControlMaster=no"], ["-S", "/x/s"]]) {
      const use = await useSshMaster({ ...DEFINITION, ssh_options: options }, place(), opsOf(101));
      expect(use.connection.master).toBeUndefined();
      await use.release();
    }
    expect(machine.calls).toEqual([]);
  });
});
