/**
 * subagent-wrapper with a live-message inbox (meta.json `inboxPath`), against the fake pi
 * running the wrapper's real task extension: the extension hands each message to pi as a
 * steering message, the fake pi plays what pi does with it (queue_update, the user message
 * before the next request, or nothing when the run ends first), and the wrapper confirms
 * deliveries from that stream alone.
 */
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { killAll } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, type WrapperRunOutput, wrapperCase } from "../support/wrapper-harness.js";

afterEach(async () => {
  await killAll();
  await cleanupWrapperCases();
});

const LOAD = { FAKE_PI_LOAD_EXTENSIONS: "task-extension.js" };
const OLDER = { ...LOAD, PI_SUBAGENTS_PI_VERSION: "0.73.1" };
const SETTLING = { ...LOAD, PI_SUBAGENTS_PI_VERSION: "1.6.0" };

const start = [{ agentStart: true }, { turnStart: true }, { user: true }];
const answer = (text: string) => ({ assistant: { text, stopReason: "stop" } });
const bashCall = {
  assistant: { toolCalls: [{ id: "c1", name: "bash", arguments: { command: "sleep 1" } }], stopReason: "toolUse" },
};
const message = (id: string, text: string) => JSON.stringify({ id, text });

/** A case whose meta names `inbox/` (made, and given `files`, before the run). */
async function inboxCase(scenario: object, files: Record<string, string> = {}, meta: Record<string, unknown> = {}) {
  const wrapper = await wrapperCase({ scenario, meta: defaultMeta({ inboxPath: "inbox", ...meta }) });
  const inbox = path.join(wrapper.dir, "inbox");
  await mkdir(inbox);
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(inbox, name), text);
  return { wrapper, inbox };
}

const types = (run: WrapperRunOutput) => run.events.map((e) => e.type);
const listing = async (dir: string) => (await readdir(dir).catch(() => [])).sort();

describe("subagent-wrapper with a live-message inbox", () => {
  it("a message written while the child runs a tool reaches it before its next request, is recorded where it read it, and moves to delivered/", async () => {
    const inboxFile = (dir: string) => path.join(dir, "inbox", "00000001.json");
    // The fake pi itself writes the file mid-tool (as the parent would), then waits for the steer.
    const scenario = (dir: string) => ({
      steps: [
        ...start,
        bashCall,
        { writeFile: { path: inboxFile(dir), text: message("msg-1", "skip the legacy/ folder") } },
        { awaitSteer: 5000 },
        { tool: { id: "c1", name: "bash", output: "done" } },
        { turnEnd: true },
        { turnStart: true },
        { steer: true },
        answer("skipped legacy/"),
        { turnEnd: true },
        { agentEnd: true },
      ],
    });
    // The case dir is known once the case exists: the scenario that names it goes in the run's env.
    const { wrapper, inbox } = await inboxCase(scenario("PLACEHOLDER"));
    const run = await wrapper.run({ env: { ...OLDER, FAKE_PI_SCRIPT: JSON.stringify(scenario(wrapper.dir)) } });

    expect(run.result).toMatchObject({
      status: "completed",
      finalText: "skipped legacy/",
      turns: 2,
      forcedExit: false,
    });
    expect(types(run)).toEqual([
      "run_start",
      "assistant_text",
      "tool_call",
      "tool_result",
      "message_delivered",
      "assistant_text",
      "run_end",
    ]);
    expect(run.events.find((e) => e.type === "message_delivered")).toMatchObject({
      id: "msg-1",
      text: "skip the legacy/ folder",
    });
    expect(await listing(inbox)).toEqual(["delivered"]);
    expect(await listing(path.join(inbox, "delivered"))).toEqual(["00000001.json"]);
    expect(await run.read("out/transcript.md")).toContain(
      "## message msg-1 (read by the child)\nskip the legacy/ folder\n",
    );
    // pi showed it queued (the extension handed it once) and then delivered.
    const stdout = await run.read("out/stdout.log");
    expect(stdout.match(/"queue_update","steering":\["skip the legacy\/ folder"\]/g)).toHaveLength(1);
  });

  for (const [line, env, extra] of [
    ["a pi without agent_settled", OLDER, []],
    ["a pi that emits agent_settled", SETTLING, [{ settled: {} }]],
  ] as const) {
    it(`on ${line}, a message accepted before the stop message keeps the run open past graceMs; the continuation's answer is the report`, async () => {
      const steps = [
        ...start,
        { awaitSteer: 3000 },
        answer("first answer"),
        { turnEnd: true },
        // Longer than graceMs: a run decided at the first answer would stop the child here.
        { sleep: 700 },
        { turnStart: true },
        { steer: true },
        answer("the continuation"),
        { turnEnd: true },
        { agentEnd: true },
        ...extra,
      ];
      const { wrapper, inbox } = await inboxCase(
        { steps },
        { "00000001.json": message("msg-1", "also check the tests") },
        { graceMs: 200 },
      );
      const run = await wrapper.run({ env });
      expect(run.result).toMatchObject({
        status: "completed",
        finalText: "the continuation",
        turns: 2,
        forcedExit: false,
        childExitCode: 0,
      });
      expect(run.events.filter((e) => e.type === "message_delivered")).toEqual([
        expect.objectContaining({ id: "msg-1" }),
      ]);
      expect(await listing(inbox)).toEqual(["delivered"]);
    });
  }

  it("without a message, the same child is stopped graceMs after its first answer (the hold above is the message's)", async () => {
    const steps = [
      ...start,
      { awaitSteer: 100 },
      answer("first answer"),
      { turnEnd: true },
      { sleep: 2000 },
      { agentEnd: true },
    ];
    const { wrapper } = await inboxCase({ steps }, {}, { graceMs: 200 });
    const run = await wrapper.run({ env: OLDER });
    expect(run.result).toMatchObject({ status: "completed", finalText: "first answer", forcedExit: true });
  });

  it("a message pi accepted but never delivered (the run ended first) is not marked delivered: it stays in the inbox", async () => {
    const steps = [...start, { awaitSteer: 3000 }, answer("the only answer"), { turnEnd: true }, { agentEnd: true }];
    const { wrapper, inbox } = await inboxCase(
      { steps },
      { "00000001.json": message("msg-1", "lost by pi") },
      { graceMs: 200 },
    );
    const run = await wrapper.run({ env: OLDER });
    expect(run.result).toMatchObject({ status: "completed", finalText: "the only answer", forcedExit: false });
    expect(types(run)).not.toContain("message_delivered");
    expect(await run.read("out/stdout.log")).toContain('"queue_update","steering":["lost by pi"]');
    expect(await listing(inbox)).toEqual(["00000001.json"]);
  });

  it("a message written after the run's last turn ended is never handed to pi (it would be lost), and stays undelivered", async () => {
    const scenario = (dir: string) => ({
      steps: [
        ...start,
        answer("done"),
        { turnEnd: true },
        { writeFile: { path: path.join(dir, "inbox", "00000001.json"), text: message("msg-1", "too late") } },
        // Long enough for the watch and the poll to see it.
        { sleep: 600 },
        { agentEnd: true },
      ],
    });
    const { wrapper, inbox } = await inboxCase(scenario("PLACEHOLDER"), {}, { graceMs: 2000 });
    const run = await wrapper.run({ env: { ...OLDER, FAKE_PI_SCRIPT: JSON.stringify(scenario(wrapper.dir)) } });
    expect(run.result).toMatchObject({ status: "completed", finalText: "done" });
    expect(await run.read("out/stdout.log")).not.toContain("queue_update");
    expect(types(run)).not.toContain("message_delivered");
    expect(await listing(inbox)).toEqual(["00000001.json"]);
  });

  it("messages go in send order, one steer each; a file that is not a message is passed over and left alone", async () => {
    const steps = [
      ...start,
      bashCall,
      { awaitSteer: 3000 },
      { sleep: 200 },
      { tool: { id: "c1", name: "bash" } },
      { turnEnd: true },
      { turnStart: true },
      { steer: true },
      answer("after the first"),
      { turnEnd: true },
      { turnStart: true },
      { steer: true },
      answer("after the second"),
      { turnEnd: true },
      { agentEnd: true },
    ];
    const files = {
      "00000002.json": message("msg-2", "second"),
      "00000001.json": message("msg-1", "first"),
      "00000003.json": "{ not a message",
      ".00000004.json.1.tmp": message("msg-4", "half written"),
    };
    const { wrapper, inbox } = await inboxCase({ steps }, files, { graceMs: 200 });
    const run = await wrapper.run({ env: OLDER });
    expect(run.result).toMatchObject({ status: "completed", finalText: "after the second", turns: 3 });
    expect(run.events.filter((e) => e.type === "message_delivered").map((e) => (e as { id: string }).id)).toEqual([
      "msg-1",
      "msg-2",
    ]);
    expect(await listing(inbox)).toEqual([".00000004.json.1.tmp", "00000003.json", "delivered"]);
    expect(await readFile(path.join(inbox, "delivered", "00000001.json"), "utf8")).toBe(message("msg-1", "first"));
  });

  it("an inbox that cannot be used is reported, and the run goes on without live messages", async () => {
    const wrapper = await wrapperCase({ scenario: "default", meta: defaultMeta({ inboxPath: "not-a-folder" }) });
    await writeFile(path.join(wrapper.dir, "not-a-folder"), "a file");
    const run = await wrapper.run({ env: OLDER });
    expect(run.result?.status).toBe("completed");
    expect(run.result?.errorMessage).toMatch(/^inbox .*not-a-folder cannot be used: /);
    expect(run.stderr).toMatch(/^subagent-wrapper: warning: inbox .*not-a-folder cannot be used: /m);
  });

  it("creates a missing inbox folder, one level", async () => {
    const wrapper = await wrapperCase({ scenario: "default", meta: defaultMeta({ inboxPath: "fresh-inbox" }) });
    const run = await wrapper.run({ env: OLDER });
    expect(run.result?.status).toBe("completed");
    expect(run.result).not.toHaveProperty("errorMessage");
    expect(await listing(path.join(wrapper.dir, "fresh-inbox"))).toEqual([]);
  });
});
