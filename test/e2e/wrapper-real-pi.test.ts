/**
 * The wrapper running the REAL pi CLI of the line under test (pi 1.x or 0.73.1) against the
 * scripted LLM on 127.0.0.1: what a script sees in result.json and events.jsonl, and what the
 * model was actually sent.
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { makePiHome, PI_LINE, PI_LINE_SETTLES, type PiHomeOptions, REPO_ROOT } from "../support/pi-home.js";
import { killAll, waitForPidExit } from "../support/processes.js";
import { reply, startScriptedLlm, userTexts } from "../support/scripted-llm.js";
import { cleanupWrapperCases, defaultMeta, wrapperCase } from "../support/wrapper-harness.js";

let cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  await killAll();
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
  await cleanupWrapperCases();
});

async function setup(meta: Record<string, unknown> = {}, homeOptions: Omit<PiHomeOptions, "llmUrl"> = {}) {
  const llm = await startScriptedLlm();
  cleanups.push(() => llm.close());
  const home = await makePiHome({ llmUrl: llm.url, ...homeOptions });
  cleanups.push(() => home.cleanup());
  // A grace no test waits out when pi exits by itself: on a loaded machine pi can take over a
  // second from its last line to its exit (pi 1.x writes Node's compile cache then).
  const wrapper = await wrapperCase({ meta: defaultMeta({ graceMs: 5000, ...meta }) });
  const run = () => wrapper.run({ env: home.env });
  return { llm, home, wrapper, run };
}

const runStartPid = async (dir: string): Promise<number> => {
  const first = (await readFile(path.join(dir, "out/events.jsonl"), "utf8").catch(() => "")).split("\n")[0];
  return first ? (JSON.parse(first) as { pid: number }).pid : 0;
};

describe("subagent-wrapper with the real pi", () => {
  it("a tool call then a final answer: completed, with the tool recorded and its result sent back", async () => {
    const { llm, run } = await setup();
    llm.script([
      reply.toolCall("bash", { command: "echo wrapped-hi" }, { id: "call_1", text: "Let me check." }),
      reply.text("All done: wrapped-hi"),
    ]);
    const out = await run();
    expect(out.code).toBe(0);
    expect(out.result).toMatchObject({
      status: "completed",
      exitCode: 0,
      stopReason: "stop",
      finalText: "All done: wrapped-hi",
      turns: 2,
      toolCalls: 1,
      resolvedModel: "fake/fast",
      childExitCode: 0,
    });
    expect(out.result!.usage.input).toBe(20);
    const settled = PI_LINE_SETTLES ? ["settled"] : [];
    expect(out.events.map((e) => e.type)).toEqual([
      "run_start",
      "assistant_text",
      "tool_call",
      "tool_result",
      "assistant_text",
      ...settled,
      "run_end",
    ]);
    expect(out.events[1]).toMatchObject({ stopReason: "toolUse", text: "Let me check." });
    expect(out.events[2]).toMatchObject({
      toolCallId: "call_1",
      toolName: "bash",
      args: { command: "echo wrapped-hi" },
    });
    expect(out.events[3]).toMatchObject({ toolCallId: "call_1", isError: false });
    const toolMessage = llm.requests[1]!.messages.find((m) => m.role === "tool");
    expect(String(toolMessage?.content)).toContain("wrapped-hi");
  });

  it("an [ABORT] line ends the run as aborted with its reason", async () => {
    const { llm, run } = await setup();
    llm.script([reply.text("Checked the project settings.\n[ABORT] API is not enabled for this project")]);
    const out = await run();
    expect(out.code).toBe(1);
    expect(out.result).toMatchObject({
      status: "aborted",
      abortSource: "marker",
      abortReason: "API is not enabled for this project",
    });
  });

  it("an [ABORT] beside a tool call stops pi before the tool finishes", async () => {
    const { llm, run } = await setup();
    llm.script([reply.toolCall("bash", { command: "sleep 60" }, { text: "[ABORT] no credentials for the deploy" })]);
    const out = await run();
    expect(out.result).toMatchObject({
      status: "aborted",
      abortReason: "no credentials for the deploy",
      forcedExit: true,
    });
    // The tool never finished: no result of it was recorded, and the run ended well before its 60 s
    // (a bound loose enough for a loaded machine: this is not a speed check).
    expect(out.events.some((e) => e.type === "tool_result")).toBe(false);
    expect(out.durationMs).toBeLessThan(45_000);
    expect(llm.requests).toHaveLength(1);
  });

  it("a provider error with retries disabled is failed with pi's message", async () => {
    const { llm, run } = await setup();
    llm.script([reply.error(500, "upstream exploded")]);
    const out = await run();
    expect(out.code).toBe(1);
    expect(out.result).toMatchObject({ status: "failed", stopReason: "error", childExitCode: 0, turns: 1 });
    expect(out.result!.errorMessage).toContain("upstream exploded");
  });

  it("a provider error that pi retries is settled by the retried answer", async () => {
    const { llm, run } = await setup({}, { retry: true });
    llm.script([reply.error(500, "flaky"), reply.text("second time lucky")]);
    const out = await run();
    expect(out.code).toBe(0);
    expect(out.result).toMatchObject({ status: "completed", finalText: "second time lucky", turns: 2 });
    expect(out.events.filter((e) => e.type === "retry").map((e) => (e as { phase: string }).phase)).toEqual([
      "start",
      "end",
    ]);
  });

  it.each([
    ["starts with - and spans lines", "-x is not a flag\n@notes.txt is not a file\n  keep this indentation  \n"],
    ["starts with @", "@README.md\nsecond line"],
    ["is over pi's 128 KiB argument limit", `  ${"y".repeat(300_000)}\n`],
  ])("a task that %s arrives verbatim in the LLM request", async (_name, task) => {
    const { llm, run } = await setup({ task });
    llm.script([reply.text("ok")]);
    const out = await run();
    expect(out.result?.status).toBe("completed");
    expect(userTexts(llm.requests[0]!)).toEqual([task]);
  });

  it("timeoutMs stops a stalled provider call and leaves no pi behind", async () => {
    const { llm, wrapper, run } = await setup({ timeoutMs: 1500 });
    llm.script([reply.hang()]);
    const out = await run();
    expect(out.result).toMatchObject({ status: "timed_out", forcedExit: true });
    expect(await waitForPidExit(await runStartPid(wrapper.dir), 1000)).toBe(true);
  });

  it("pi stops itself when its wrapper is killed with SIGKILL", async () => {
    const { llm, home, wrapper } = await setup();
    llm.script([reply.hang()]);
    const started = wrapper.start({ env: home.env });
    await llm.waitForRequests(1, 15_000);
    const piPid = await runStartPid(wrapper.dir);
    expect(piPid).toBeGreaterThan(0);
    process.kill(started.pid, "SIGKILL");
    await started.done;
    expect(await waitForPidExit(piPid, 5000)).toBe(true);
    // The wrapper never got to clean up: its orphan guard removed the run's temp folder (pi had read the task file already).
    await vi.waitFor(
      async () =>
        expect((await readdir(home.env.TMPDIR!)).filter((name) => name.startsWith("pi-subagent-run-"))).toEqual([]),
      { timeout: 5000 },
    );
  });
});

/** A child extension that steers the running turn once (test/support/extensions/steer-once.mjs). */
const STEER_ONCE = path.join(REPO_ROOT, "test", "support", "extensions", "steer-once.mjs");

describe(`a run where pi continues after its first stop message (${PI_LINE.pkg} ${PI_LINE.piVersion})`, () => {
  it.each([
    ["once the first answer is in (turn_end)", "turn_end"],
    ["while the first answer streams (message_update)", "message_update"],
  ])("a steer %s: the continuation's answer is result.json's finalText", async (_when, at) => {
    const { llm, run } = await setup({
      extensions: [STEER_ONCE],
      env: { STEER_ONCE_AT: at, STEER_ONCE_TEXT: "STEER-1: also count the tests" },
    });
    llm.script([reply.text("the first answer", { chunkDelayMs: 150 }), reply.text("the continuation's answer")]);
    const out = await run();
    expect(out.code).toBe(0);
    expect(out.result).toMatchObject({
      status: "completed",
      finalText: "the continuation's answer",
      turns: 2,
      forcedExit: false,
    });
    expect(llm.requests).toHaveLength(2);
    expect(userTexts(llm.requests[1]!).at(-1)).toBe("STEER-1: also count the tests");
    const types = out.events.map((e) => e.type);
    // pi 1.x ends its automatic work with agent_settled; pi 0.73.1 does not.
    expect(types).toEqual([
      "run_start",
      "assistant_text",
      "assistant_text",
      ...(PI_LINE_SETTLES ? ["settled"] : []),
      "run_end",
    ]);
  });
});
