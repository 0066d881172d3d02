/**
 * subagent-wrapper with meta.json `dialogs` against the fake pi in RPC mode (cheap: no model,
 * no real pi): a scripted dialog reaches the run's dialogs folder, the answer file reaches the
 * child, a notice is recorded, and the child's stdin ends when its work is over on both pi
 * lines (agent_settled; the get_state probe), so it exits by itself.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { dialogAnswerFileName, dialogAskFileName } from "../../src/contracts/dialogs.js";
import { ENV } from "../../src/contracts/env.js";
import { killAll } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, HERE_RUNNER, wrapperCase } from "../support/wrapper-harness.js";

afterEach(async () => {
  await killAll();
  await cleanupWrapperCases();
});

const SETTLING = { PI_SUBAGENTS_PI_VERSION: "1.6.0" };
const OLDER = { PI_SUBAGENTS_PI_VERSION: "0.73.1" };

const scenario = (settles: boolean) => ({
  steps: [
    { agentStart: true },
    { turnStart: true },
    { user: true },
    { notify: { message: "checking", notifyType: "warning" } },
    { dialog: { method: "select", title: "Allow rm?", options: ["Yes", "No"] } },
    { assistant: { text: "finished", stopReason: "stop" } },
    { turnEnd: true },
    { agentEnd: true, willRetry: false },
    ...(settles ? [{ settled: {} }] : []),
  ],
});

async function fileAppears(file: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!existsSync(file)) {
    if (Date.now() > deadline) throw new Error(`${file} did not appear`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("subagent-wrapper with dialogs, against the fake pi in RPC mode", () => {
  for (const [line, env] of [
    ["a pi with agent_settled", SETTLING],
    ["pi 0.73.1 (the get_state probe)", OLDER],
  ] as const) {
    it(`${line}: the answer file reaches the child, and the child exits by itself once its work is over`, async () => {
      const wrapper = await wrapperCase({
        scenario: scenario(env === SETTLING),
        meta: defaultMeta({ graceMs: 10_000, dialogs: { timeoutMs: 60_000 } }),
      });
      const running = wrapper.start({ env });
      const dialogs = path.join(wrapper.dir, "out", "dialogs");
      await fileAppears(path.join(dialogs, dialogAskFileName(1)));
      const ask = JSON.parse(await readFile(path.join(dialogs, dialogAskFileName(1)), "utf8"));
      expect(ask).toMatchObject({ method: "select", title: "Allow rm?", options: ["Yes", "No"] });
      const temp = path.join(dialogs, ".answer.tmp");
      await writeFile(
        temp,
        JSON.stringify({ version: 1, id: ask.id, value: "No", answeredBy: "parent", answeredAt: "x" }),
      );
      await rename(temp, path.join(dialogs, dialogAnswerFileName(1)));
      const run = await wrapper.collect(await running.done);
      expect(run.result).toMatchObject({
        status: "completed",
        finalText: "finished",
        forcedExit: false,
        childExitCode: 0,
      });
      expect(await run.read("out/stdout.log")).toContain(
        `"response":{"type":"extension_ui_response","id":"${ask.id}","value":"No"}`,
      );
      expect(run.events.filter((e) => e.type === "notify" || e.type === "dialog").map((e) => e.type)).toEqual([
        "notify",
        "dialog",
        "dialog",
      ]);
      expect(run.events.find((e) => e.type === "notify")).toMatchObject({ message: "checking", level: "warning" });
      expect(run.events.filter((e) => e.type === "dialog").at(-1)).toMatchObject({ answeredBy: "parent" });
    });
  }

  it("a task that starts with `-` and spans lines reaches the child's prompt through the task file, untouched", async () => {
    const task = "-x @file\n  two lines  ";
    const wrapper = await wrapperCase({
      scenario: { steps: [{ echoTask: true }, { agentEnd: true }, { settled: {} }] },
      meta: defaultMeta({ task, graceMs: 10_000, dialogs: { timeoutMs: 60_000 } }),
    });
    const run = await wrapper.run({ env: { ...SETTLING, FAKE_PI_LOAD_EXTENSIONS: "task-extension.js" } });
    expect(run.result).toMatchObject({ status: "completed", finalText: task.trim(), forcedExit: false });
  });

  it("a fallback model's pi (the warm standby) runs in RPC mode too: it gets the prompt, and its stdin ends at its end", async () => {
    const usage = { input: 10, output: 5, cost: { input: 0.001, output: 0.001 } };
    const turn = (assistant: object) => ({
      steps: [{ agentStart: true }, { turnStart: true }, { assistant }, { turnEnd: true }, { agentEnd: true }],
    });
    const wrapper = await wrapperCase({
      scenario: turn({ text: "unused", stopReason: "stop" }),
      meta: defaultMeta({
        requestedModel: "fake/flaky",
        fallbackModels: ["fake/fast"],
        graceMs: 10_000,
        dialogs: { timeoutMs: 60_000 },
      }),
    });
    const scripts = {
      "fake/flaky": turn({ stopReason: "error", errorMessage: "429 Rate limit reached", usage }),
      "fake/fast": turn({ text: "finished on fast", stopReason: "stop", usage }),
    };
    const run = await wrapper.run({ env: { ...OLDER, FAKE_PI_MODEL_SCRIPTS: JSON.stringify(scripts) } });
    expect(run.result).toMatchObject({
      status: "completed",
      finalText: "finished on fast",
      resolvedModel: "fake/fast",
      forcedExit: false,
      childExitCode: 0,
    });
    const starts = run.events.filter((e) => e.type === "run_start");
    expect(starts).toHaveLength(2);
    for (const start of starts) expect(start).toMatchObject({ argv: expect.arrayContaining(["--mode", "rpc"]) });
  });

  it("the child's environment carries PI_SUBAGENT_PARENT_SESSION from meta.json env", async () => {
    const wrapper = await wrapperCase({
      scenario: { steps: [{ assistant: { text: "ok", stopReason: "stop" } }, { agentEnd: true }, { settled: {} }] },
      meta: defaultMeta({ env: { [ENV.parentSession]: "/tree/root/session.jsonl" }, dialogs: { timeoutMs: 60_000 } }),
    });
    const run = await wrapper.run({ env: SETTLING });
    expect(run.result).toMatchObject({ status: "completed", finalText: "ok" });
    const record = JSON.parse(await run.read("fake-pi-record.json"));
    expect(record.env[ENV.parentSession]).toBe("/tree/root/session.jsonl");
  });

  it("an [ABORT] marker stops an RPC child at once, as in json mode", async () => {
    const wrapper = await wrapperCase({
      scenario: "abort-marker",
      meta: defaultMeta({ graceMs: 10_000, dialogs: { timeoutMs: 60_000 } }),
    });
    const run = await wrapper.run({ env: SETTLING });
    expect(run.result).toMatchObject({
      status: "aborted",
      abortSource: "marker",
      abortReason: "API is not enabled for this project",
      forcedExit: true,
    });
  });

  it("over a runner (serve on the far side): the far pi runs in RPC mode and its dialog is answered from here", async () => {
    const wrapper = await wrapperCase({
      scenario: scenario(true),
      meta: defaultMeta({
        cwd: "repo",
        graceMs: 10_000,
        dialogs: { timeoutMs: 60_000 },
        runner: HERE_RUNNER,
      }),
    });
    const repo = path.join(wrapper.dir, "repo");
    mkdirSync(repo);
    const git = (...args: string[]) =>
      execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: repo, encoding: "utf8" });
    git("init", "-q", "-b", "main");
    writeFileSync(path.join(repo, "a.txt"), "a\n");
    git("add", "-A");
    git("commit", "-q", "-m", "initial");
    const running = wrapper.start({ env: SETTLING });
    const dialogs = path.join(wrapper.dir, "out", "dialogs");
    await fileAppears(path.join(dialogs, dialogAskFileName(1)));
    const ask = JSON.parse(await readFile(path.join(dialogs, dialogAskFileName(1)), "utf8"));
    const temp = path.join(dialogs, ".answer.tmp");
    await writeFile(
      temp,
      JSON.stringify({ version: 1, id: ask.id, value: "Yes", answeredBy: "person", answeredAt: "x" }),
    );
    await rename(temp, path.join(dialogs, dialogAnswerFileName(1)));
    const run = await wrapper.collect(await running.done);
    expect(run.result).toMatchObject({ status: "completed", finalText: "finished", runner: { name: "here" } });
    expect(run.events.find((e) => e.type === "run_start")).toMatchObject({ argv: expect.arrayContaining(["rpc"]) });
    expect(await run.read("out/stdout.log")).toContain(
      `"response":{"type":"extension_ui_response","id":"${ask.id}","value":"Yes"}`,
    );
  });
});
