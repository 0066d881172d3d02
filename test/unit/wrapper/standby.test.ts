import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import type { MetaV1 } from "../../../src/contracts/meta.js";
import { emptyUsage } from "../../../src/contracts/usage.js";
import { buildChildArgs, type ChildHandle, type SpawnOptions } from "../../../src/wrapper/child.js";
import { FallbackChain, switchedMeta } from "../../../src/wrapper/fallback.js";
import {
  gateNodeOptions,
  runsOnNode,
  STANDBY_EXIT_WAIT_MS,
  Standby,
  type StandbyProcess,
} from "../../../src/wrapper/standby.js";
import { FakeClock, settle } from "../../support/fake-clock.js";
import { BASE_META } from "../../support/meta-examples.js";

const options: SpawnOptions = { cwd: "/w", env: {}, taskFile: "/tmp/task", runToken: "t" };

/** A standby held at its gate, that records what the run did with it. */
class FakeStandby implements StandbyProcess {
  readonly pid: number;
  gone = false;
  wentThrough = false;
  ended = 0;
  unniced = 0;
  /** Whether end() resolves (false: a process that does not go away). */
  exits = true;

  constructor(
    readonly args: string[],
    pid: number,
  ) {
    this.pid = pid;
  }

  waiting(): boolean {
    return !this.gone && !this.wentThrough;
  }

  go(): ChildHandle | undefined {
    if (this.gone) return undefined;
    this.wentThrough = true;
    return { pid: this.pid, stdout: new PassThrough(), stderr: new PassThrough(), once: () => undefined };
  }

  unnice(): void {
    this.unniced += 1;
  }

  end(): Promise<void> {
    this.ended += 1;
    if (!this.exits) return new Promise(() => undefined);
    this.gone = true;
    return Promise.resolve();
  }
}

function launcher() {
  const launched: FakeStandby[] = [];
  const launch = (_bin: string, args: string[]) => {
    const standby = new FakeStandby(args, 1000 + launched.length);
    launched.push(standby);
    return standby;
  };
  return { launched, launch };
}

const argsB = ["--model", "fake/b"];
const argsC = ["--model", "fake/c"];

describe("Standby: the warm standby's bookkeeping", () => {
  it("take with the standby's arguments lets it through and hands its pi over; the run no longer ends it", async () => {
    const { launched, launch } = launcher();
    const standby = new Standby(launch);
    standby.prepare("pi", argsB, options);
    const handle = standby.take([...argsB]);
    expect(handle?.pid).toBe(1000);
    expect(launched[0]?.wentThrough).toBe(true);
    await standby.end();
    expect(launched[0]?.ended).toBe(0);
    expect(standby.counts).toEqual({ started: 1, used: 1, ended: 0 });
    // Nothing waits any more: the next switch starts pi cold.
    expect(standby.take(argsB)).toBeUndefined();
  });

  it("runningStarted sets the waiting standby's priority back once (the running pi is past its start-up)", () => {
    const { launched, launch } = launcher();
    const standby = new Standby(launch);
    standby.runningStarted();
    standby.prepare("pi", argsB, options);
    expect(launched[0]?.unniced).toBe(0);
    standby.runningStarted();
    standby.runningStarted();
    expect(launched[0]?.unniced).toBe(1);
  });

  it("take with other arguments ends the standby and says start cold", () => {
    const { launched, launch } = launcher();
    const standby = new Standby(launch);
    standby.prepare("pi", argsB, options);
    expect(standby.take(argsC)).toBeUndefined();
    expect(launched[0]).toMatchObject({ wentThrough: false, ended: 1 });
  });

  it("a standby that died is not let through: start cold", () => {
    const { launched, launch } = launcher();
    const standby = new Standby(launch);
    standby.prepare("pi", argsB, options);
    (launched[0] as FakeStandby).gone = true;
    expect(standby.take(argsB)).toBeUndefined();
    expect(standby.counts.used).toBe(0);
  });

  it("prepare for other arguments replaces the standby; for the same ones, keeps the one waiting", () => {
    const { launched, launch } = launcher();
    const standby = new Standby(launch);
    standby.prepare("pi", argsB, options);
    standby.prepare("pi", argsB, options);
    expect(launched).toHaveLength(1);
    standby.prepare("pi", argsC, options);
    expect(launched).toHaveLength(2);
    expect(launched[0]?.ended).toBe(1);
    expect(standby.take(argsC)?.pid).toBe(1001);
  });

  it("end ends the waiting standby; a standby that does not go away is waited for STANDBY_EXIT_WAIT_MS, not forever", async () => {
    const { launched, launch } = launcher();
    const clock = new FakeClock();
    const standby = new Standby(launch, clock);
    standby.prepare("pi", argsB, options);
    (launched[0] as FakeStandby).exits = false;
    let ended = false;
    void standby.end().then(() => (ended = true));
    await settle();
    expect(launched[0]?.ended).toBe(1);
    expect(ended).toBe(false);
    await clock.advance(STANDBY_EXIT_WAIT_MS);
    await settle();
    expect(ended).toBe(true);
  });

  it("without a launcher (or one that throws) there is no standby: every switch starts cold", () => {
    const none = new Standby(undefined);
    none.prepare("pi", argsB, options);
    expect(none.take(argsB)).toBeUndefined();
    const throwing = new Standby(() => {
      throw new Error("no gate");
    });
    throwing.prepare("pi", argsB, options);
    expect(throwing.take(argsB)).toBeUndefined();
    expect(throwing.counts.started).toBe(0);
  });
});

describe("the standby's arguments and environment", () => {
  it("are those of the switch: the standby for the upcoming model is the pi the switch starts", () => {
    const meta: MetaV1 = {
      ...BASE_META,
      version: 1,
      requestedModel: "fake/a",
      fallbackModels: ["fake/a", "fake/b", "fake/c"],
      sessionPath: "/s.jsonl",
    } as MetaV1;
    const chain = new FallbackChain("fake/a", meta.fallbackModels);
    expect(chain.upcoming).toBe("fake/b");
    const prepared = buildChildArgs(switchedMeta(meta, chain.upcoming as string));
    const next = chain.afterAttempt(
      {
        outcome: { status: "failed", finalText: "", stopReason: "error", errorMessage: "503 Service Unavailable" },
        model: "fake/a",
        exitCode: 0,
        stderrTail: "",
        at: 0,
      },
      { usage: emptyUsage(), turns: 1, toolCalls: 0 },
    );
    expect(next?.to).toBe("fake/b");
    expect(buildChildArgs(switchedMeta(meta, "fake/b", next?.prompt))).toEqual(prepared);
    expect(chain.upcoming).toBe("fake/c");
  });

  it("NODE_OPTIONS keeps what the run's environment has and adds the gate as a file URL", () => {
    expect(gateNodeOptions(undefined, "/opt/my pkg/dist/wrapper/standby-gate.js")).toBe(
      "--import=file:///opt/my%20pkg/dist/wrapper/standby-gate.js",
    );
    expect(gateNodeOptions("--max-old-space-size=512", "/d/standby-gate.js")).toBe(
      "--max-old-space-size=512 --import=file:///d/standby-gate.js",
    );
  });
});

describe("runsOnNode: only a Node script is held by the gate", () => {
  it("is true for a #!…node script (the fake pi, pi's cli.js) and false for a shell script or a missing file", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "standby-unit-"));
    try {
      const write = async (name: string, text: string) => {
        await writeFile(path.join(dir, name), text);
        return path.join(dir, name);
      };
      expect(runsOnNode(await write("env-node", "#!/usr/bin/env node\nconsole.log(1)\n"))).toBe(true);
      expect(runsOnNode(await write("abs-node", "#!/usr/local/bin/node --no-warnings\n"))).toBe(true);
      expect(runsOnNode(await write("sh", "#!/bin/sh\nexec node cli.js\n"))).toBe(false);
      expect(runsOnNode(await write("nodemon", "#!/usr/bin/env nodemon\n"))).toBe(false);
      expect(runsOnNode(await write("binary", "\x7fELF…"))).toBe(false);
      expect(runsOnNode(path.join(dir, "missing"))).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
