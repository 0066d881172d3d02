/**
 * A child run with meta.json `dialogs`, on the REAL pi of the line under test against the
 * scripted LLM: pi runs in RPC mode, pi's own examples/extensions/permission-gate.ts (loaded
 * unmodified) asks before `rm -rf`, and the ask reaches the run's `dialogs/` folder. The test
 * plays the answerer by writing the answer file; the wrapper hands it to pi. Also: the wrapper
 * ends pi (stdin closed) only once its work is over, a retried provider error included.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { dialogAnswerFileName, dialogAskFileName } from "../../src/contracts/dialogs.js";
import { skipOrFail } from "../support/needs.js";
import { makePiHome, PI_LINE } from "../support/pi-home.js";
import { killAll } from "../support/processes.js";
import { reply, startScriptedLlm, userTexts } from "../support/scripted-llm.js";
import { cleanupWrapperCases, defaultMeta, wrapperCase } from "../support/wrapper-harness.js";

let cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  await killAll();
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
  await cleanupWrapperCases();
});

/** The folder holding this line's pi package (its examples ship beside dist/). */
function piPackageDir(): string {
  for (let dir = path.dirname(PI_LINE.piCli); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, "package.json"))) return dir;
  }
  throw new Error(`no package.json above ${PI_LINE.piCli}`);
}

const bwrapMissing = (): string | undefined => {
  try {
    execFileSync("bwrap", ["--ro-bind", "/", "/", "true"], { stdio: "ignore" });
    return undefined;
  } catch {
    return "bwrap (Debian package bubblewrap) is missing or cannot make a namespace here";
  }
};

const PERMISSION_GATE = path.join(piPackageDir(), "examples", "extensions", "permission-gate.ts");
const DANGEROUS = "rm -rf victim && echo REMOVED";

/** Resolves once `file` exists (polled: the test waits for a condition, never a duration). */
async function fileAppears(file: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(file)) {
    if (Date.now() > deadline) throw new Error(`${file} did not appear`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The model asks for the dangerous bash call, then answers with what the tool said. */
async function gatedRun(timeoutMs: number) {
  const llm = await startScriptedLlm();
  cleanups.push(() => llm.close());
  const home = await makePiHome({ llmUrl: llm.url });
  cleanups.push(() => home.cleanup());
  llm.onRequest((_req, index) =>
    index === 0 ? reply.toolCall("bash", { command: DANGEROUS }, { id: "call_1" }) : reply.text("finished"),
  );
  const wrapper = await wrapperCase({
    meta: defaultMeta({ graceMs: 5000, extensions: [PERMISSION_GATE], dialogs: { timeoutMs } }),
  });
  await mkdir(path.join(wrapper.dir, "victim"));
  await writeFile(path.join(wrapper.dir, "victim", "file.txt"), "keep me");
  const dialogs = path.join(wrapper.dir, "out", "dialogs");
  const running = wrapper.start({ env: home.env, timeoutMs: 90_000 });
  return { llm, wrapper, dialogs, running };
}

/** Writes an answer as an answerer must: whole, through a temp name starting with `.`. */
async function answer(dialogs: string, fields: Record<string, unknown>): Promise<void> {
  const ask = JSON.parse(await readFile(path.join(dialogs, dialogAskFileName(1)), "utf8"));
  const temp = path.join(dialogs, ".answer.tmp");
  await writeFile(
    temp,
    JSON.stringify({ version: 1, id: ask.id, answeredBy: "person", answeredAt: new Date().toISOString(), ...fields }),
  );
  await rename(temp, path.join(dialogs, dialogAnswerFileName(1)));
}

describe("a child's dialogs with the real pi (meta.json dialogs)", () => {
  it('permission-gate asks through the dialogs folder; "Yes" runs the rm', async () => {
    const { llm, wrapper, dialogs, running } = await gatedRun(60_000);
    await fileAppears(path.join(dialogs, dialogAskFileName(1)));
    const ask = JSON.parse(await readFile(path.join(dialogs, dialogAskFileName(1)), "utf8"));
    expect(ask).toMatchObject({ version: 1, seq: 1, method: "select", options: ["Yes", "No"] });
    expect(ask.title).toContain(DANGEROUS);
    await answer(dialogs, { value: "Yes" });
    const run = await wrapper.collect(await running.done);
    expect(run.result).toMatchObject({
      status: "completed",
      finalText: "finished",
      childExitCode: 0,
      forcedExit: false,
    });
    expect(existsSync(path.join(wrapper.dir, "victim"))).toBe(false);
    expect(JSON.stringify(llm.requests[1])).toContain("REMOVED");
    const dialogRecords = run.events.filter((e) => e.type === "dialog");
    expect(dialogRecords).toEqual([
      expect.objectContaining({ phase: "asked", dialogSeq: 1, method: "select", id: ask.id }),
      expect.objectContaining({ phase: "answered", dialogSeq: 1, answeredBy: "person", id: ask.id }),
    ]);
  });

  it('"No" blocks the rm, and the child goes on to its answer', async () => {
    const { llm, wrapper, dialogs, running } = await gatedRun(60_000);
    await fileAppears(path.join(dialogs, dialogAskFileName(1)));
    await answer(dialogs, { value: "No" });
    const run = await wrapper.collect(await running.done);
    expect(run.result).toMatchObject({ status: "completed", finalText: "finished", childExitCode: 0 });
    expect(existsSync(path.join(wrapper.dir, "victim", "file.txt"))).toBe(true);
    expect(JSON.stringify(llm.requests[1])).toContain("Blocked by user");
  });

  it("unanswered, the wrapper cancels it at the time-out (answered_by timeout) and the gate blocks", async () => {
    const { llm, wrapper, dialogs, running } = await gatedRun(500);
    const run = await wrapper.collect(await running.done);
    expect(run.result).toMatchObject({ status: "completed", finalText: "finished", childExitCode: 0 });
    expect(existsSync(path.join(wrapper.dir, "victim", "file.txt"))).toBe(true);
    expect(JSON.stringify(llm.requests[1])).toContain("Blocked by user");
    const written = JSON.parse(await readFile(path.join(dialogs, dialogAnswerFileName(1)), "utf8"));
    expect(written).toMatchObject({ version: 1, cancelled: true, answeredBy: "timeout" });
    expect(run.events.filter((e) => e.type === "dialog").at(-1)).toMatchObject({
      phase: "answered",
      answeredBy: "timeout",
      cancelled: true,
    });
  });
});

describe("the end of a child's work in RPC mode, with the real pi", () => {
  it("a retried provider error: pi is not ended at the failed attempt, and the retry's answer is the result", async () => {
    const llm = await startScriptedLlm();
    cleanups.push(() => llm.close());
    const home = await makePiHome({ llmUrl: llm.url, retry: true });
    cleanups.push(() => home.cleanup());
    llm.onRequest((_req, index) => (index === 0 ? reply.error(503, "Service Unavailable") : reply.text("recovered")));
    const wrapper = await wrapperCase({
      meta: defaultMeta({ graceMs: 5000, task: "say it", dialogs: { timeoutMs: 1000 } }),
    });
    const run = await wrapper.run({ env: home.env, timeoutMs: 90_000 });
    expect(run.result).toMatchObject({
      status: "completed",
      finalText: "recovered",
      childExitCode: 0,
      forcedExit: false,
    });
    expect(llm.requests).toHaveLength(2);
    expect(userTexts(llm.requests[0]!)[0]).toBe("say it");
    expect(run.events.map((e) => e.type)).toContain("retry");
    expect(run.events.find((e) => e.type === "run_start")).toMatchObject({
      argv: expect.arrayContaining(["--mode", "rpc"]),
    });
  });

  it("a final answer: pi ends by itself once stdin is closed (no forced exit), the task verbatim", async () => {
    const llm = await startScriptedLlm();
    cleanups.push(() => llm.close());
    const home = await makePiHome({ llmUrl: llm.url });
    cleanups.push(() => home.cleanup());
    llm.onRequest(() => reply.text("all done"));
    const task = "-x /skill:not-a-command @file\n  keep the spaces  ";
    const wrapper = await wrapperCase({ meta: defaultMeta({ graceMs: 5000, task, dialogs: { timeoutMs: 1000 } }) });
    const run = await wrapper.run({ env: home.env, timeoutMs: 90_000 });
    expect(run.result).toMatchObject({
      status: "completed",
      finalText: "all done",
      childExitCode: 0,
      forcedExit: false,
    });
    expect(userTexts(llm.requests[0]!)[0]).toBe(task);
  });

  it("a live message that arrives while a tool runs is steered in, and the continuation's answer is the result", async () => {
    const llm = await startScriptedLlm();
    cleanups.push(() => llm.close());
    const home = await makePiHome({ llmUrl: llm.url });
    cleanups.push(() => home.cleanup());
    const wrapper = await wrapperCase({
      meta: defaultMeta({ graceMs: 5000, task: "work", inboxPath: "inbox", dialogs: { timeoutMs: 1000 } }),
    });
    const inbox = path.join(wrapper.dir, "inbox");
    llm.onRequest((_req, index) => {
      if (index > 0) return reply.text(index === 1 ? "answer after the steer" : "unexpected");
      // The message lands while the model's tool call is on its way: pi must take it before its next request.
      mkdirSync(inbox, { recursive: true });
      writeFileSync(path.join(inbox, ".m.tmp"), JSON.stringify({ id: "m1", text: "ALSO CHECK THE LOGS" }));
      renameSync(path.join(inbox, ".m.tmp"), path.join(inbox, "0001-m1.json"));
      return reply.toolCall("bash", { command: "sleep 1; echo worked" });
    });
    const run = await wrapper.run({ env: home.env, timeoutMs: 90_000 });
    expect(run.result).toMatchObject({ status: "completed", finalText: "answer after the steer", forcedExit: false });
    expect(userTexts(llm.requests[1]!)).toContain("ALSO CHECK THE LOGS");
    expect(run.events.filter((e) => e.type === "message_delivered")).toEqual([
      expect.objectContaining({ id: "m1", text: "ALSO CHECK THE LOGS" }),
    ]);
  });

  it("in a sandbox (serve on the far side): the far pi's gate asks here, and Yes runs the rm there", async (ctx) => {
    skipOrFail(ctx, bwrapMissing());
    const llm = await startScriptedLlm();
    cleanups.push(() => llm.close());
    const home = await makePiHome({ llmUrl: llm.url });
    cleanups.push(() => home.cleanup());
    llm.onRequest((_req, index) =>
      index === 0 ? reply.toolCall("bash", { command: DANGEROUS }, { id: "call_1" }) : reply.text("finished"),
    );
    const wrapper = await wrapperCase({
      meta: defaultMeta({
        cwd: "repo",
        graceMs: 5000,
        extensions: [PERMISSION_GATE],
        dialogs: { timeoutMs: 60_000 },
        runner: { name: "box", kind: "sandbox" },
      }),
    });
    const repo = path.join(wrapper.dir, "repo");
    mkdirSync(path.join(repo, "victim"), { recursive: true });
    writeFileSync(path.join(repo, "victim", "file.txt"), "keep me");
    const git = (...args: string[]) =>
      execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: repo, stdio: "ignore" });
    git("init", "-q", "-b", "main");
    git("add", "-A");
    git("commit", "-q", "-m", "initial");
    const running = wrapper.start({ env: home.env, timeoutMs: 90_000 });
    const dialogs = path.join(wrapper.dir, "out", "dialogs");
    await fileAppears(path.join(dialogs, dialogAskFileName(1)));
    await answer(dialogs, { value: "Yes" });
    const run = await wrapper.collect(await running.done);
    expect(run.result, run.stderr).toMatchObject({
      status: "completed",
      finalText: "finished",
      runner: { name: "box" },
    });
    expect(JSON.stringify(llm.requests[1])).toContain("REMOVED");
  });
});
