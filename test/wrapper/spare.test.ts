import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { spareRunToken } from "../../src/cli/spare-command.js";
import type { EventRecord } from "../../src/contracts/events.js";
import type { ResultV1 } from "../../src/contracts/result.js";
import { SPARE_FILES } from "../../src/contracts/spare.js";
import { killSpare } from "../../src/extension/turns/wrapper/spare-launch.js";
import { processAlive, processRunning } from "../../src/lib/process.js";
import { killAll, spawnProcess } from "../support/processes.js";
import { defaultMeta, FAKE_PI_DIR, WRAPPER_BIN } from "../support/wrapper-harness.js";

// A spare wrapper (`subagent-wrapper spare <spare.json>`) against the fake pi, which loads the
// real task extension and, like pi, loads it again on `switch_session`.

const dirs: string[] = [];
afterEach(async () => {
  await killAll();
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

const answering = {
  steps: [
    { agentStart: true },
    { turnStart: true },
    { assistant: { text: "ANSWER", stopReason: "stop" } },
    { turnEnd: true },
    { agentEnd: true },
  ],
};

/** A child's meta.json for agent `name` in `root/name`: its instructions, session and tree path. */
async function childMeta(root: string, name: string, change: Record<string, unknown> = {}): Promise<string> {
  const dir = path.join(root, name);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, "instructions.md"), `You are the agent /root/${name}.`);
  const meta = {
    ...defaultMeta({ cwd: root, task: `the task of ${name}` }),
    resultPath: path.join(dir, "out/result.json"),
    eventsPath: path.join(dir, "out/events.jsonl"),
    stdoutPath: path.join(dir, "out/stdout.log"),
    stderrPath: path.join(dir, "out/stderr.log"),
    transcriptPath: path.join(dir, "out/transcript.md"),
    systemPromptPath: path.join(dir, "instructions.md"),
    sessionPath: path.join(dir, "session.jsonl"),
    env: { PI_SUBAGENTS_TREE_DIR: root, PI_SUBAGENTS_AGENT_PATH: `/root/${name}` },
    ...change,
  };
  const file = path.join(dir, "meta.json");
  await writeFile(file, JSON.stringify(meta));
  return file;
}

/** A spare wrapper for a template child, once its pi has started (the fake's record is there). */
async function startSpare(turnChange: Record<string, unknown> = {}, env: Record<string, string> = {}) {
  const root = await mkdtemp(path.join(os.tmpdir(), "psa-spare-test-"));
  dirs.push(root);
  await mkdir(path.join(root, "tmp"));
  // As the root's launcher does: a copy of an earlier turn's meta.json, in the spare's own folder.
  const spareDir = path.join(root, "spare");
  await mkdir(spareDir);
  const template = path.join(spareDir, SPARE_FILES.template);
  await writeFile(template, await readFile(await childMeta(root, "first"), "utf8"));
  const turn = await childMeta(root, "taker", turnChange);
  const record = path.join(root, "fake-pi-record.json");
  const starts = path.join(root, "fake-pi-starts.jsonl");
  const wrapper = spawnProcess(process.execPath, [WRAPPER_BIN, "spare", template], {
    cwd: root,
    env: {
      ...process.env,
      PATH: `${FAKE_PI_DIR}${path.delimiter}${process.env.PATH ?? ""}`,
      TMPDIR: path.join(root, "tmp"),
      FAKE_PI_RECORD: record,
      // Every pi's start, one line each (a spare pi and the pi a turn starts on its own).
      FAKE_PI_RECORDS: starts,
      FAKE_PI_SCRIPT: JSON.stringify(answering),
      FAKE_PI_LOAD_EXTENSIONS: "task-extension.js",
      ...env,
    },
    stdio: ["pipe", "pipe", "pipe"],
    timeoutMs: 20_000,
  });
  while (
    !(await readFile(record).then(
      () => true,
      () => false,
    ))
  )
    await new Promise((resolve) => setTimeout(resolve, 20));
  return { root, wrapper, turn, template, record, starts };
}

/** A spare wrapper for a template child; `input` is written to its stdin once its pi has started, then stdin is closed. */
async function spare(
  input: (turnMeta: string) => string,
  turnChange: Record<string, unknown> = {},
  env: Record<string, string> = {},
) {
  const { wrapper, turn, template, record, starts } = await startSpare(turnChange, env);
  wrapper.stdin?.end(input(turn));
  const run = await wrapper.done;
  const takerDir = path.dirname(turn);
  const read = (file: string) => readFile(path.join(takerDir, file), "utf8").catch(() => undefined);
  const result = await read("out/result.json");
  const events = ((await read("out/events.jsonl")) ?? "")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as EventRecord);
  return {
    run,
    turn,
    spareDir: path.dirname(template),
    result: result === undefined ? undefined : (JSON.parse(result) as ResultV1),
    events,
    stderr: run.stderr,
    record: JSON.parse(await readFile(record, "utf8").catch(() => `{"stderr": ${JSON.stringify(run.stderr)}}`)) as {
      pid: number;
      task: string;
      argv: string[];
      sessionPath?: string;
      env: Record<string, string>;
    },
    wrapperLog: (await read("wrapper.log")) ?? "",
    starts: (await readFile(starts, "utf8").catch(() => ""))
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { argv: string[]; env: Record<string, string> }),
  };
}

describe("subagent-wrapper spare", () => {
  it("hands its pi to the turn: the turn's session, task, instructions and identity; its own files go", async () => {
    const { run, turn, spareDir, result, events, record, wrapperLog } = await spare((meta) => `take ${meta}\n`);
    expect(run.code, `${run.stderr}${JSON.stringify(result)}${wrapperLog}`).toBe(0);
    expect(result).toMatchObject({ status: "completed", finalText: "ANSWER" });
    expect(events[0]).toMatchObject({ type: "run_start", spare: true });
    expect(record.argv).toContain("rpc");
    expect(record.sessionPath).toBe(path.join(path.dirname(turn), "session.jsonl"));
    expect(record.task).toBe("the task of taker");
    // The task extension set the turn's environment and took the hand-over's own name out of it.
    expect(record.env.PI_SUBAGENTS_AGENT_PATH).toBe("/root/taker");
    expect(record.env.PI_SUBAGENT_SPARE_HANDOVER).toBeUndefined();
    expect(record.pid).toBeGreaterThan(0);
    expect(processAlive(record.pid)).toBe(false);
    expect(await readdir(spareDir).catch(() => "gone")).toBe("gone");
  });

  it("its stdin ending before a turn ends its pi and removes its files", async () => {
    const { run, spareDir, record, result, wrapperLog } = await spare(() => "");
    expect(run.code, `${run.stderr}${JSON.stringify(result)}${wrapperLog}`).toBe(0);
    expect(processAlive(record.pid)).toBe(false);
    expect(await readdir(spareDir).catch(() => "gone")).toBe("gone");
  });

  it("an unused spare's pi is killed, not asked to end: one that ignores SIGTERM is gone with its wrapper", async () => {
    const signals = path.join(await mkdtemp(path.join(os.tmpdir(), "psa-spare-signals-")), "signals.jsonl");
    dirs.push(path.dirname(signals));
    const { run, spareDir, record, result, wrapperLog } = await spare(
      () => "",
      {},
      {
        FAKE_PI_SCRIPT: JSON.stringify({ ...answering, ignoreSigterm: true }),
        FAKE_PI_SIGNALS: signals,
      },
    );
    expect(run.code, `${run.stderr}${JSON.stringify(result)}${wrapperLog}`).toBe(0);
    expect(processAlive(record.pid)).toBe(false);
    // Asked with SIGTERM, a pi niced while it waited runs its exit seconds later on a loaded machine.
    expect(await readFile(signals, "utf8").catch(() => "")).not.toContain("SIGTERM");
    expect(await readdir(spareDir).catch(() => "gone")).toBe("gone");
  });

  it("killSpare (the root's bound) kills the wrapper and its pi, which has a group of its own, by the token the root chose, and removes the folder", async () => {
    const signals = path.join(await mkdtemp(path.join(os.tmpdir(), "psa-spare-signals-")), "signals.jsonl");
    dirs.push(path.dirname(signals));
    const token = randomBytes(16).toString("hex");
    const {
      wrapper,
      template,
      record: recordFile,
    } = await startSpare(
      {},
      // A pi slow to end: neither SIGTERM nor its stdin's end (the dead wrapper's pipe) stops it soon.
      {
        FAKE_PI_SCRIPT: JSON.stringify({ ...answering, ignoreSigterm: true, exitDelayMs: 5000 }),
        FAKE_PI_SIGNALS: signals,
        PI_SUBAGENTS_SPARE_RUN_TOKEN: token,
      },
    );
    const record = JSON.parse(await readFile(recordFile, "utf8")) as { pid: number; env: Record<string, string> };
    expect(record.env.PI_SUBAGENT_RUN_TOKEN).toBe(token);
    const spareDir = path.dirname(template);
    killSpare(wrapper.pid, token, spareDir);
    const run = await wrapper.done;
    expect(run.signal).toBe("SIGKILL");
    // SIGKILL is final but not instant: the pi is gone within a moment, before any of its code runs again.
    // (A zombie counts as gone: the wrapper that would reap it is dead, and init may reap it late.)
    for (let tries = 0; tries < 100 && processRunning(record.pid); tries += 1)
      await new Promise((r) => setTimeout(r, 10));
    expect(processRunning(record.pid)).toBe(false);
    // Killed by the root, not ended later by the dead wrapper's orphan guard (SIGTERM, then SIGKILL a second on).
    expect(await readFile(signals, "utf8").catch(() => "")).not.toContain("SIGTERM");
    expect(await readdir(spareDir).catch(() => "gone")).toBe("gone");
  });

  it("takes the root's token for its pi only when it is one (32 hex digits), else makes its own", () => {
    const token = "0123456789abcdef0123456789abcdef";
    expect(spareRunToken({ PI_SUBAGENTS_SPARE_RUN_TOKEN: token })).toBe(token);
    for (const bad of [undefined, "", "x", `${token}0`, "0123456789ABCDEF0123456789ABCDEF"]) {
      const made = spareRunToken({ PI_SUBAGENTS_SPARE_RUN_TOKEN: bad });
      expect(made).toMatch(/^[0-9a-f]{32}$/);
      expect(made).not.toBe(bad);
    }
  });

  it("a turn its pi does not fit starts its own pi, and the run's log says why", async () => {
    const { run, result, events, starts, wrapperLog } = await spare((meta) => `take ${meta}\n`, {
      resolvedModel: "fake/deep",
    });
    expect(run.code, `${run.stderr}${JSON.stringify(result)}${wrapperLog}`).toBe(0);
    expect(result).toMatchObject({ status: "completed", finalText: "ANSWER" });
    expect(events[0]).toMatchObject({ type: "run_start" });
    expect(events[0]).not.toHaveProperty("spare");
    const own = starts.find((start) => start.argv.includes("json"));
    expect(own?.env.PI_SUBAGENTS_AGENT_PATH).toBe("/root/taker");
    expect(own?.argv).toContain("fake/deep");
    expect(wrapperLog).toContain("the spare pi was not used (another model)");
  });
});
