import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { processesWithEnv } from "../../src/lib/process.js";
import { killAll } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, wrapperCase } from "../support/wrapper-harness.js";

// The warm standby (src/wrapper/standby.ts) against the fake pi: a Node script, so the gate
// holds it as it holds pi (the fake has no module graph to warm: the gate only waits).

afterEach(async () => {
  await killAll();
  await cleanupWrapperCases();
});

const usage = { input: 10, output: 5, cost: { input: 0.001, output: 0.001 } };

/** A fake pi that works `delayMs`, then ends with a provider error. */
const failing = (errorMessage: string, delayMs = 0): object => ({
  steps: [
    { agentStart: true },
    { turnStart: true },
    ...(delayMs ? [{ sleep: delayMs }] : []),
    { assistant: { stopReason: "error", errorMessage, usage } },
    { turnEnd: true },
    { agentEnd: true },
    { exit: 0 },
  ],
});

const answering = (text: string, delayMs = 0): object => ({
  steps: [
    { agentStart: true },
    { turnStart: true },
    ...(delayMs ? [{ sleep: delayMs }] : []),
    { assistant: { text, stopReason: "stop", usage } },
    { turnEnd: true },
    { agentEnd: true },
    { exit: 0 },
  ],
});

interface Start {
  argv: string[];
  task: string;
  env: Record<string, string>;
  pid: number;
  startedAt: number;
}

async function starts(dir: string): Promise<Start[]> {
  const text = await readFile(path.join(dir, "starts.jsonl"), "utf8").catch(() => "");
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Start);
}

/** A case whose processes carry a mark of their own in their environment. */
async function markedCase(scripts: Record<string, object>, meta: Record<string, unknown>) {
  const mark = `STANDBY_TEST_MARK=${randomBytes(6).toString("hex")}`;
  const c = await wrapperCase({ meta: defaultMeta(meta) });
  const env = {
    FAKE_PI_MODEL_SCRIPTS: JSON.stringify(scripts),
    FAKE_PI_RECORDS: path.join(c.dir, "starts.jsonl"),
    FAKE_PI_RECORD_ENV: "NODE_OPTIONS",
    [mark.split("=")[0] as string]: mark.split("=")[1],
  };
  return { c, env, mark };
}

/** The case's standby processes: its mark, and the gate in the environment they were started with. */
async function standbys(mark: string): Promise<number[]> {
  const pids = await processesWithEnv(mark);
  const held: number[] = [];
  for (const pid of pids) {
    const environ = await readFile(`/proc/${pid}/environ`, "utf8").catch(() => "");
    if (environ.includes("standby-gate.js")) held.push(pid);
  }
  return held;
}

/** Every process of the case left (the wrapper's and its children's mark). */
const leftOver = (mark: string) => processesWithEnv(mark);

const switchTimes = (events: Array<{ type: string; ts?: number }>) =>
  events.filter((e) => e.type === "model_switch").map((e) => e.ts as number);

describe("subagent-wrapper: the warm standby of a run with fallback models", () => {
  it("a switch lets the waiting standby through (started before the switch), and the next one waits for the model after", async () => {
    const { c, env, mark } = await markedCase(
      {
        "fake/a": failing("503 Service Unavailable", 800),
        "fake/b": failing("429 Too Many Requests", 800),
        "fake/c": answering("done on c"),
      },
      { requestedModel: "fake/a", fallbackModels: ["fake/b", "fake/c"], sessionPath: "out/session.jsonl" },
    );
    const run = await c.run({ env });
    expect(run.result).toMatchObject({ status: "completed", finalText: "done on c", resolvedModel: "fake/c" });
    expect(run.result?.attempts?.map((a) => [a.model, a.error_class])).toEqual([
      ["fake/a", "overloaded"],
      ["fake/b", "rate_limit"],
    ]);
    const pis = await starts(c.dir);
    expect(pis.map((pi) => pi.argv[pi.argv.indexOf("--model") + 1])).toEqual(["fake/a", "fake/b", "fake/c"]);
    // Each fallback's pi is a process that was already there when its switch came: the standby.
    const [toB, toC] = switchTimes(run.events);
    expect(pis[1]?.startedAt).toBeLessThan(toB as number);
    expect(pis[2]?.startedAt).toBeLessThan(toC as number);
    // ...started after the switch before it (the standby for c once b ran), on the same session, told to continue.
    expect(pis[2]?.startedAt).toBeGreaterThanOrEqual(toB as number);
    const session = path.join(c.dir, "out", "session.jsonl");
    for (const pi of pis) expect(pi.argv[pi.argv.indexOf("--session") + 1]).toBe(session);
    expect(pis[1]?.task).toMatch(/fake\/a failed with a provider error \(overloaded\).*now runs on fake\/b/);
    expect(pis[2]?.task).toMatch(/fake\/b failed with a provider error \(rate_limit\).*now runs on fake\/c/);
    // The gate took itself out of NODE_OPTIONS: what pi starts does not load it.
    for (const pi of pis) expect(pi.env.NODE_OPTIONS ?? "").not.toContain("standby-gate");
    expect(run.events.filter((e) => e.type === "run_start")).toHaveLength(3);
    expect(await leftOver(mark)).toEqual([]);
  });

  it("a standby not needed is ended: the turn completed on its first model, or failed without a switch", async () => {
    for (const [script, status] of [
      [answering("done on a", 600), "completed"],
      [failing("400 Invalid request: bad tool schema", 600), "failed"],
    ] as const) {
      const { c, env, mark } = await markedCase(
        { "fake/a": script, "fake/b": answering("never") },
        { requestedModel: "fake/a", fallbackModels: ["fake/b"] },
      );
      const wrapper = c.start({ env });
      // The standby is there while the first model works...
      await vi.waitFor(async () => expect(await standbys(mark)).toHaveLength(1), { timeout: 10_000, interval: 25 });
      const run = await c.collect(await wrapper.done);
      expect(run.result?.status).toBe(status);
      // ...and never ran: one pi started, and nothing of the run is left once the wrapper exited.
      expect(await starts(c.dir)).toHaveLength(1);
      expect(await leftOver(mark)).toEqual([]);
    }
  });

  it("the standby ends with the turn when it is stopped: the time limit, SIGTERM, or SIGKILL (the orphan guard)", async () => {
    for (const stop of ["timeoutMs", "SIGTERM", "SIGKILL"] as const) {
      const { c, env, mark } = await markedCase(
        { "fake/a": answering("never", 20_000), "fake/b": answering("never") },
        { requestedModel: "fake/a", fallbackModels: ["fake/b"], ...(stop === "timeoutMs" && { timeoutMs: 3000 }) },
      );
      const wrapper = c.start({ env });
      await vi.waitFor(async () => expect(await standbys(mark)).toHaveLength(1), { timeout: 10_000, interval: 25 });
      await vi.waitFor(async () => expect(await starts(c.dir)).toHaveLength(1), { timeout: 10_000, interval: 25 });
      if (stop !== "timeoutMs") process.kill(wrapper.pid, stop);
      const run = await c.collect(await wrapper.done);
      if (stop === "SIGKILL") {
        // The guard ends what carries the run's token, the standby included, within its second.
        await vi.waitFor(async () => expect(await leftOver(mark)).toEqual([]), { timeout: 5_000, interval: 50 });
      } else {
        expect(run.result?.status).toBe(stop === "SIGTERM" ? "interrupted" : "timed_out");
        expect(await leftOver(mark)).toEqual([]);
      }
      expect(await starts(c.dir)).toHaveLength(1);
    }
  });

  it("a standby that died is not used: the switch starts pi cold, and the turn finishes as without one", async () => {
    const { c, env, mark } = await markedCase(
      { "fake/a": failing("503 Service Unavailable", 1500), "fake/b": answering("done on b") },
      { requestedModel: "fake/a", fallbackModels: ["fake/b"] },
    );
    const wrapper = c.start({ env });
    let standby: number[] = [];
    await vi.waitFor(
      async () => {
        standby = await standbys(mark);
        expect(standby).toHaveLength(1);
      },
      { timeout: 10_000, interval: 25 },
    );
    process.kill(standby[0] as number, "SIGKILL");
    const run = await c.collect(await wrapper.done);
    expect(run.result).toMatchObject({ status: "completed", finalText: "done on b", resolvedModel: "fake/b" });
    const pis = await starts(c.dir);
    expect(pis).toHaveLength(2);
    expect(pis[1]?.pid).not.toBe(standby[0]);
    expect(pis[1]?.startedAt).toBeGreaterThanOrEqual(switchTimes(run.events)[0] as number);
    expect(await leftOver(mark)).toEqual([]);
  });
});
