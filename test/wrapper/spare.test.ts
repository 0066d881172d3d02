import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { EventRecord } from "../../src/contracts/events.js";
import type { ResultV1 } from "../../src/contracts/result.js";
import { SPARE_FILES } from "../../src/contracts/spare.js";
import { processAlive } from "../../src/lib/process.js";
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

/**
 * A spare wrapper for a template child; `input` is written to its stdin once its pi has
 * started (the fake's record is there), then stdin is closed.
 */
async function spare(input: (turnMeta: string) => string, turnChange: Record<string, unknown> = {}) {
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
