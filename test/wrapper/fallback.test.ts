import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { killAll } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, wrapperCase } from "../support/wrapper-harness.js";

afterEach(async () => {
  await killAll();
  await cleanupWrapperCases();
});

const usage = { input: 10, output: 5, cost: { input: 0.001, output: 0.001 } };

/** A fake pi run that ends with a provider error (stopReason error, pi's errorMessage). */
function failing(errorMessage: string, before: object[] = []): object {
  return {
    steps: [
      { agentStart: true },
      { turnStart: true },
      ...before,
      { assistant: { stopReason: "error", errorMessage, usage } },
      { turnEnd: true },
      { agentEnd: true },
      { exit: 0 },
    ],
  };
}

const answering = (text: string): object => ({
  steps: [
    { agentStart: true },
    { turnStart: true },
    { assistant: { text, stopReason: "stop", usage } },
    { turnEnd: true },
    { agentEnd: true },
    { exit: 0 },
  ],
});

/** Each start of the fake pi, in order (FAKE_PI_RECORDS). */
async function starts(dir: string): Promise<Array<{ argv: string[]; task: string }>> {
  const text = await readFile(path.join(dir, "starts.jsonl"), "utf8");
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

async function runWith(scripts: Record<string, object>, meta: Record<string, unknown>) {
  const c = await wrapperCase({ meta: defaultMeta(meta), scenario: answering("unused") });
  const run = await c.run({
    env: { FAKE_PI_MODEL_SCRIPTS: JSON.stringify(scripts), FAKE_PI_RECORDS: path.join(c.dir, "starts.jsonl") },
  });
  return { run, starts: await starts(c.dir) };
}

describe("subagent-wrapper: fallback models", () => {
  it("a 429 after pi's retries moves the turn to the next model in the same session, told to continue", async () => {
    const { run, starts: pis } = await runWith(
      {
        "fake/a": failing("429 Rate limit reached. Please try again in 20s.", [
          {
            assistant: {
              text: "reading",
              toolCalls: [{ id: "t1", name: "read", arguments: {} }],
              stopReason: "toolUse",
              usage,
            },
          },
          { tool: { id: "t1", name: "read" } },
        ]),
        "fake/b": answering("done on b"),
      },
      { requestedModel: "fake/a", fallbackModels: ["fake/b", "fake/c"], sessionPath: "out/session.jsonl" },
    );
    expect(run.code).toBe(0);
    expect(run.result).toMatchObject({ status: "completed", finalText: "done on b", resolvedModel: "fake/b" });
    expect(run.result?.attempts).toEqual([
      {
        model: "fake/a",
        error_class: "rate_limit",
        message: "429 Rate limit reached. Please try again in 20s.",
        at: expect.any(String),
        retry_after_ms: 20_000,
      },
    ]);
    // Both pi processes counted: two assistant messages and a tool call on a, one on b.
    expect(run.result).toMatchObject({ turns: 3, toolCalls: 1 });
    expect(run.result?.usage.input).toBe(30);
    expect(pis).toHaveLength(2);
    const session = path.join(run.dir, "out", "session.jsonl");
    for (const pi of pis)
      expect(pi.argv.slice(pi.argv.indexOf("--session"), pi.argv.indexOf("--session") + 2)).toEqual([
        "--session",
        session,
      ]);
    expect(pis[1]?.argv[pis[1].argv.indexOf("--model") + 1]).toBe("fake/b");
    expect(pis[1]?.task).toMatch(/fake\/a failed with a provider error \(rate_limit\).*now runs on fake\/b.*continue/);
    const types = run.events.map((e) => e.type);
    expect(types.filter((t) => t === "run_start")).toHaveLength(2);
    expect(run.events.find((e) => e.type === "model_switch")).toMatchObject({
      from: "fake/a",
      to: "fake/b",
      errorClass: "rate_limit",
    });
    expect(await run.read("out/transcript.md")).toContain("going on with fake/b");
  });

  it("pi's own retries come first: a retry that succeeds switches nothing; one that fails switches once", async () => {
    const error = (n: number) => [
      { agentStart: true },
      { turnStart: true },
      { assistant: { stopReason: "error", errorMessage: "503 Service Unavailable", usage } },
      { turnEnd: true },
      { agentEnd: true },
      { retryStart: { attempt: n, maxAttempts: 1, delayMs: 10, errorMessage: "503 Service Unavailable" } },
      { sleep: 10 },
    ];
    const retried = await runWith(
      {
        "fake/a": {
          steps: [
            ...error(1),
            { agentStart: true },
            { turnStart: true },
            { assistant: { text: "recovered on a", stopReason: "stop", usage } },
            { retryEnd: { attempt: 1, success: true } },
            { turnEnd: true },
            { agentEnd: true },
            { exit: 0 },
          ],
        },
        "fake/b": answering("never"),
      },
      { requestedModel: "fake/a", fallbackModels: ["fake/b"] },
    );
    expect(retried.run.result).toMatchObject({ status: "completed", finalText: "recovered on a" });
    expect(retried.run.result?.attempts).toBeUndefined();
    expect(retried.starts).toHaveLength(1);

    const exhausted = await runWith(
      {
        "fake/a": {
          steps: [
            ...error(1),
            { agentStart: true },
            { turnStart: true },
            { assistant: { stopReason: "error", errorMessage: "503 Service Unavailable", usage } },
            { retryEnd: { attempt: 1, success: false, finalError: "503 Service Unavailable" } },
            { turnEnd: true },
            { agentEnd: true },
            { exit: 0 },
          ],
        },
        "fake/b": answering("done on b"),
      },
      { requestedModel: "fake/a", fallbackModels: ["fake/b"] },
    );
    expect(exhausted.run.result).toMatchObject({ status: "completed", finalText: "done on b" });
    expect(exhausted.run.result?.attempts?.map((a) => a.model)).toEqual(["fake/a"]);
    expect(exhausted.starts).toHaveLength(2);
  });

  it("walks the list: 503 then 500 then an answer on the third model", async () => {
    const { run, starts: pis } = await runWith(
      {
        "fake/a": failing("503 Service Unavailable"),
        "fake/b": failing('500: {"message":"boom"}'),
        "fake/c": answering("done on c"),
      },
      { requestedModel: "fake/a", fallbackModels: ["fake/b", "fake/c"] },
    );
    expect(run.result).toMatchObject({ status: "completed", finalText: "done on c", resolvedModel: "fake/c" });
    expect(run.result?.attempts?.map((a) => [a.model, a.error_class])).toEqual([
      ["fake/a", "overloaded"],
      ["fake/b", "server_error"],
    ]);
    // No session of its own: the wrapper gave the run one beside result.json, shared by the three.
    const sessions = pis.map((pi) => pi.argv[pi.argv.indexOf("--session") + 1]);
    expect(sessions).toEqual(Array(3).fill(path.join(run.dir, "out", "fallback-session.jsonl")));
  });

  it("all models failing: the turn fails with every attempt listed", async () => {
    const { run } = await runWith(
      { "fake/a": failing("Connection error."), "fake/b": failing("401 Incorrect API key provided") },
      { requestedModel: "fake/a", fallbackModels: ["fake/b"] },
    );
    expect(run.code).toBe(1);
    expect(run.result).toMatchObject({ status: "failed", stopReason: "error" });
    expect(run.result?.attempts?.map((a) => [a.model, a.error_class])).toEqual([
      ["fake/a", "connection"],
      ["fake/b", "auth"],
    ]);
  });

  it("a pi that cannot start for a missing key moves on; one that cannot start for another reason does not", async () => {
    const noKey = { steps: [{ stderr: 'No API key found for "fake".' }, { exit: 1 }] };
    const moved = await runWith(
      { "fake/a": noKey, "fake/b": answering("done on b") },
      { requestedModel: "fake/a", fallbackModels: ["fake/b"] },
    );
    expect(moved.run.result).toMatchObject({ status: "completed", finalText: "done on b" });
    expect(moved.run.result?.attempts?.map((a) => [a.model, a.error_class])).toEqual([["fake/a", "auth"]]);

    const crash = { steps: [{ stderr: "TypeError: boom" }, { exit: 1 }] };
    const stayed = await runWith(
      { "fake/a": crash, "fake/b": answering("never") },
      { requestedModel: "fake/a", fallbackModels: ["fake/b"] },
    );
    expect(stayed.run.result?.status).toBe("failed");
    expect(stayed.starts).toHaveLength(1);
  });

  it("a 400 or a context overflow never switches: the turn fails on its own model", async () => {
    for (const message of [
      "400 Invalid request: bad tool schema",
      "400 This model's maximum context length is 8192 tokens",
    ]) {
      const { run, starts: pis } = await runWith(
        { "fake/a": failing(message), "fake/b": answering("never") },
        { requestedModel: "fake/a", fallbackModels: ["fake/b"] },
      );
      expect(run.result).toMatchObject({ status: "failed", stopReason: "error" });
      expect(pis).toHaveLength(1);
      expect(run.result?.attempts).toHaveLength(1);
      expect(run.events.some((e) => e.type === "model_switch")).toBe(false);
    }
  });

  it("an interrupt while the model is failing never switches: the turn is interrupted", async () => {
    const c = await wrapperCase({ meta: defaultMeta({ requestedModel: "fake/a", fallbackModels: ["fake/b"] }) });
    const records = path.join(c.dir, "starts.jsonl");
    const wrapper = c.start({
      env: {
        FAKE_PI_RECORDS: records,
        FAKE_PI_MODEL_SCRIPTS: JSON.stringify({
          "fake/a": { steps: [{ agentStart: true }, { turnStart: true, delayMs: 20_000 }] },
          "fake/b": answering("never"),
        }),
      },
    });
    // Its start written whole (the file may exist a moment before its line does).
    await vi.waitFor(
      async () => {
        if (!(await readFile(records, "utf8")).includes("\n")) throw new Error("pi has not started yet");
      },
      { timeout: 10_000, interval: 25 },
    );
    process.kill(wrapper.pid, "SIGTERM");
    const run = await c.collect(await wrapper.done);
    expect(run.result?.status).toBe("interrupted");
    expect(run.result?.attempts).toBeUndefined();
    expect(await starts(c.dir)).toHaveLength(1);
  });

  it("a tool's error never switches: it is the model's to handle", async () => {
    const { run, starts: pis } = await runWith(
      {
        "fake/a": {
          steps: [
            { agentStart: true },
            {
              assistant: {
                text: "",
                toolCalls: [{ id: "t1", name: "bash", arguments: {} }],
                stopReason: "toolUse",
                usage,
              },
            },
            { tool: { id: "t1", name: "bash", isError: true, output: "503 Service Unavailable" } },
            { assistant: { text: "the tool failed; done anyway", stopReason: "stop", usage } },
            { agentEnd: true },
            { exit: 0 },
          ],
        },
        "fake/b": answering("never"),
      },
      { requestedModel: "fake/a", fallbackModels: ["fake/b"] },
    );
    expect(run.result).toMatchObject({ status: "completed", finalText: "the tool failed; done anyway" });
    expect(run.result?.attempts).toBeUndefined();
    expect(pis).toHaveLength(1);
  });

  it("a turn ended by [ABORT] never switches", async () => {
    const { run, starts: pis } = await runWith(
      {
        "fake/a": {
          steps: [
            { agentStart: true },
            { assistant: { text: "[ABORT] cannot do this", stopReason: "stop", usage } },
            { agentEnd: true },
            { exit: 0 },
          ],
        },
        "fake/b": answering("never"),
      },
      { requestedModel: "fake/a", fallbackModels: ["fake/b"] },
    );
    expect(run.result?.status).toBe("aborted");
    expect(run.result?.attempts).toBeUndefined();
    expect(pis).toHaveLength(1);
  });

  it("without fallbacks a provider error is still recorded as the attempt that failed", async () => {
    const { run } = await runWith({ "fake/a": failing("429 status code (no body)") }, { requestedModel: "fake/a" });
    expect(run.result).toMatchObject({ status: "failed" });
    expect(run.result?.attempts).toEqual([
      { model: "fake/a", error_class: "rate_limit", message: "429 status code (no body)", at: expect.any(String) },
    ]);
  });
});
