/**
 * subagent-wrapper against the fake pi playing both pi lines: a pi that emits agent_settled
 * (told by PI_SUBAGENTS_PI_VERSION, or read from a pi package.json above the binary) and one
 * that does not. Times are compared between what the wrapper recorded (events.jsonl) and the
 * signals the fake pi logged, never against the wall clock of the test.
 */
import { chmod, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { killAll } from "../support/processes.js";
import {
  cleanupWrapperCases,
  defaultMeta,
  FAKE_PI_DIR,
  fakePiSignals,
  wrapperCase,
} from "../support/wrapper-harness.js";

afterEach(async () => {
  await killAll();
  await cleanupWrapperCases();
});

const SETTLING = { PI_SUBAGENTS_PI_VERSION: "1.6.0" };
const OLDER = { PI_SUBAGENTS_PI_VERSION: "0.73.1" };

const answer = (text: string) => ({ assistant: { text, stopReason: "stop" } });
const start = [{ agentStart: true }, { turnStart: true }, { user: true }];

describe("subagent-wrapper with a pi that emits agent_settled", () => {
  it("a retry after the first stop message, later than graceMs, ends with the retry's answer", async () => {
    const scenario = {
      steps: [
        ...start,
        answer("first answer"),
        { turnEnd: true },
        { agentEnd: true, willRetry: true },
        { retryStart: { attempt: 1, maxAttempts: 1, delayMs: 600, errorMessage: "context overflow" } },
        { sleep: 600 },
        { agentStart: true },
        { turnStart: true },
        answer("the retry's answer"),
        { turnEnd: true },
        { agentEnd: true, willRetry: false },
        { settled: {} },
      ],
    };
    const run = await (await wrapperCase({ scenario, meta: defaultMeta({ graceMs: 200 }) })).run({ env: SETTLING });
    expect(run.code).toBe(0);
    expect(run.result).toMatchObject({
      status: "completed",
      finalText: "the retry's answer",
      turns: 2,
      forcedExit: false,
      childExitCode: 0,
    });
    expect(run.events.map((e) => e.type)).toEqual([
      "run_start",
      "assistant_text",
      "retry",
      "assistant_text",
      "settled",
      "run_end",
    ]);
    expect(run.events.find((e) => e.type === "settled")).toEqual(expect.objectContaining({ aborted: false }));
  });

  it("graceMs counts from agent_settled: a child that lingers after it is stopped graceMs later, and stays completed", async () => {
    // agent_settled comes 1 s after the answer: a grace counted from the answer would stop the child before it.
    const scenario = {
      steps: [
        ...start,
        answer("done"),
        { turnEnd: true },
        { sleep: 1000 },
        { agentEnd: true, willRetry: false },
        { settled: {} },
        { linger: null },
      ],
    };
    const wrapper = await wrapperCase({ scenario, meta: defaultMeta({ graceMs: 300 }) });
    const run = await wrapper.run({ env: SETTLING });
    expect(run.result).toMatchObject({ status: "completed", finalText: "done", forcedExit: true, childExitCode: 143 });
    expect(run.events.map((e) => e.type)).toEqual(["run_start", "assistant_text", "settled", "run_end"]);
    const settled = run.events.find((e) => e.type === "settled")!.ts;
    const [sigterm] = await fakePiSignals(run.dir);
    expect(sigterm?.signal).toBe("SIGTERM");
    // Timers may fire a few ms early against Date.now (libuv's loop time); never a grace early.
    expect(sigterm!.ts - settled).toBeGreaterThanOrEqual(250);
  });

  it("pi's own abort reported by agent_settled is recorded and the run is aborted", async () => {
    const scenario = {
      steps: [
        ...start,
        { assistant: { stopReason: "aborted", errorMessage: "This operation was aborted" } },
        { agentEnd: true },
        { settled: { aborted: true } },
      ],
    };
    const run = await (await wrapperCase({ scenario })).run({ env: SETTLING });
    expect(run.code).toBe(1);
    expect(run.result).toMatchObject({
      status: "aborted",
      abortSource: "child",
      abortReason: "This operation was aborted",
    });
    expect(run.events.find((e) => e.type === "settled")).toMatchObject({ aborted: true });
    expect(await run.read("out/transcript.md")).toContain("# pi settled (aborted)\n");
  });

  it("is told apart by the package.json above the binary: a pi 1.x package holding the fake waits for agent_settled", async () => {
    const wrapper = await wrapperCase({
      scenario: {
        steps: [
          ...start,
          answer("first"),
          { turnEnd: true },
          { sleep: 600 },
          answer("after the watermark moved"),
          { agentEnd: true },
          { settled: {} },
        ],
      },
      meta: defaultMeta({ graceMs: 200 }),
    });
    const pkg = path.join(wrapper.dir, "pi-package");
    await mkdir(pkg);
    await writeFile(
      path.join(pkg, "package.json"),
      JSON.stringify({
        name: "@earendil-works/pi-coding-agent",
        version: "1.6.0",
        type: "module",
        bin: { pi: "cli.js" },
      }),
    );
    const cli = path.join(pkg, "cli.js");
    await writeFile(
      cli,
      `#!/usr/bin/env node\nimport ${JSON.stringify(pathToFileURL(path.join(FAKE_PI_DIR, "pi")).href)};\n`,
    );
    await chmod(cli, 0o755);
    const run = await wrapper.run({ env: { PI_SUBAGENTS_PI_BIN: cli } });
    expect(run.result).toMatchObject({
      status: "completed",
      finalText: "after the watermark moved",
      forcedExit: false,
    });
  });
});

describe("subagent-wrapper with a pi without agent_settled", () => {
  it("a stop message followed by queue_update, turn_start and a final answer ends with the final answer", async () => {
    const scenario = {
      steps: [
        ...start,
        { queue: { steering: ["STEER-1"] } },
        answer("first answer"),
        { turnEnd: true },
        { sleep: 600 },
        { turnStart: true },
        { queue: {} },
        { user: "STEER-1" },
        answer("continuation answer"),
        { turnEnd: true },
        { agentEnd: true },
      ],
    };
    const run = await (await wrapperCase({ scenario, meta: defaultMeta({ graceMs: 200 }) })).run({ env: OLDER });
    expect(run.code).toBe(0);
    expect(run.result).toMatchObject({
      status: "completed",
      finalText: "continuation answer",
      turns: 2,
      forcedExit: false,
    });
  });

  it("without a queued message, the first stop message decides and grace counts from it (a later answer is too late)", async () => {
    const scenario = {
      steps: [...start, answer("first answer"), { turnEnd: true }, { sleep: 2000 }, answer("never seen")],
    };
    const run = await (await wrapperCase({ scenario, meta: defaultMeta({ graceMs: 200 }) })).run({ env: OLDER });
    expect(run.result).toMatchObject({ status: "completed", finalText: "first answer", forcedExit: true });
  });
});
