/**
 * Area 1 — bad input. Malformed meta.json never starts a child: exit 2, one clear line, and
 * a `failed` result.json whenever its path is known. Garbage on the child's stdout never
 * stops a run from completing correctly.
 */
import { execFileSync } from "node:child_process";
import { lstat, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MAX_META_BYTES } from "../../src/wrapper/load-meta.js";
import { killAll } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, fakePiRecord, wrapperCase } from "../support/wrapper-harness.js";
import { bytesPi, killLeftovers, messageEnd, settleLeftovers } from "./support.js";

afterEach(async () => {
  await killAll();
  await killLeftovers();
  await cleanupWrapperCases();
});

const ECHO = { steps: [{ echoTask: true }] };
const json = (value: unknown) => JSON.stringify(value);
const meta = (overrides: Record<string, unknown>) => json(defaultMeta(overrides));
const withBytes = (text: string, marker: string, bytes: number[]) => {
  const [head, tail] = text.split(marker) as [string, string];
  return Buffer.concat([Buffer.from(head), Buffer.from(bytes), Buffer.from(tail)]);
};

/** [name, meta.json content, expected message, whether a failed result.json is expected]. */
const MALFORMED: Array<[string, string | Buffer, RegExp, boolean]> = [
  ["an empty file", "", /is not valid JSON/, false],
  ["white space only", " \n\t\n", /is not valid JSON/, false],
  ["truncated JSON", meta({}).slice(0, 40), /^subagent-wrapper: meta file .*meta\.json is not valid JSON: /, false],
  ["100 000 nested arrays", "[".repeat(100_000), /is not valid JSON|must hold a JSON object/, false],
  ["a JSON array", json([defaultMeta()]), /meta\.json must hold a JSON object, not an array$/, false],
  ["JSON null", "null", /must hold a JSON object, not null/, false],
  ["a JSON string", json("run it"), /must hold a JSON object/, false],
  ["a JSON number", "42", /must hold a JSON object/, false],
  [
    "a missing resultPath",
    json({ runId: "r", task: "t", cwd: ".", eventsPath: "e.jsonl" }),
    /meta\.json is missing required field "resultPath"$/,
    false,
  ],
  ["a numeric runId", meta({ runId: 7 }), /"runId" must be a string/, true],
  ["a task that is an object", meta({ task: { text: "hi" } }), /"task" must be a string, not an object$/, true],
  [
    "tools as a string",
    meta({ tools: "read,bash" }),
    /meta\.json field "tools" must be an array of non-empty strings/,
    true,
  ],
  ["an env value that is a number", meta({ env: { A: 1 } }), /"env.A" must be a string/, true],
  ["an env value holding NUL", meta({ env: { A: "x\u0000y" } }), /environment cannot hold/, true],
  [
    "a timeoutMs of 1e400 (Infinity)",
    meta({}).replace(/}$/, ',"timeoutMs":1e400}'),
    /"timeoutMs" must be a positive number/,
    true,
  ],
  ["a negative timeoutMs", meta({ timeoutMs: -1 }), /"timeoutMs" must be a positive number/, true],
  ["a negative graceMs", meta({ graceMs: -1 }), /"graceMs" must be a positive number/, true],
  ["a graceMs that is not a number", meta({ graceMs: "soon" }), /"graceMs" must be a positive number/, true],
  ["an unknown thinking level", meta({ thinking: "maximum" }), /"thinking" must be one of/, true],
  ["version 2", meta({ version: 2 }), /version 2 is not supported/, true],
  ["a cwd that does not exist", meta({ cwd: "no/such/dir" }), /cwd .* does not exist/, true],
  ["a cwd that is a file", meta({ cwd: "meta.json" }), /cwd .* is not a directory/, true],
  [
    "a systemPromptPath that does not exist",
    meta({ systemPromptPath: "gone.md" }),
    /systemPromptPath .* does not exist/,
    true,
  ],
  [
    "a local extension that does not exist",
    meta({ extensions: ["./missing-ext.ts"] }),
    /extension .*missing-ext\.ts does not exist/,
    true,
  ],
  [
    "a resultPath below a file",
    meta({ resultPath: "meta.json/result.json" }),
    /^subagent-wrapper: meta\.json resultPath .*result\.json cannot be written: /,
    false,
  ],
  [
    "resultPath and eventsPath naming one file",
    meta({ eventsPath: "out/result.json" }),
    /eventsPath and resultPath name the same file/,
    true,
  ],
  [
    "a resultPath that is the folder of the events",
    json({ runId: "r", task: "t", cwd: ".", resultPath: "out", eventsPath: "out/events.jsonl" }),
    /eventsPath and resultPath overlap/,
    false,
  ],
  ["invalid UTF-8 in the task", withBytes(meta({ task: "@@" }), "@@", [0xc3, 0x28, 0xff]), /is not valid UTF-8/, false],
  [
    "a 17 MiB task (over the 16 MiB meta limit)",
    meta({ task: "x".repeat(MAX_META_BYTES + 1024 * 1024) }),
    /is too large/,
    false,
  ],
];

describe(`area 1: ${MALFORMED.length} malformed meta.json variants → exit 2, one line, no child`, () => {
  it.each(MALFORMED)("%s", async (_name, text, message, resultExpected) => {
    const c = await wrapperCase({ scenario: ECHO });
    await writeFile(c.metaPath, text);
    const run = await c.run();
    expect(run.code).toBe(2);
    const lines = run.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^subagent-wrapper: /);
    expect(lines[0]).toMatch(message);
    expect(run.stderr).not.toMatch(/\bat .*\.js:\d+/);
    await expect(fakePiRecord(run.dir)).rejects.toThrow();
    if (resultExpected) {
      expect(run.result).toMatchObject({
        version: 1,
        status: "failed",
        exitCode: 2,
        turns: 0,
        toolCalls: 0,
        childExitCode: null,
      });
      // result.json says what stderr said, under the runId meta.json named (if it named one).
      expect(run.result!.errorMessage).toMatch(message);
      expect(lines[0]).toBe(`subagent-wrapper: ${run.result!.errorMessage}`);
      const written = JSON.parse(String(text)) as { runId?: unknown };
      expect(run.result!.runId).toBe(typeof written.runId === "string" ? written.runId : "");
    } else expect(run.result).toBeUndefined();
  });
});

describe("area 1: 5 more meta.json edge cases", () => {
  it.each([
    ["a valid meta", {}, 1],
    ["an invalid meta (whose failed result.json would go there)", { thinking: "lots" }, 2],
  ])(
    "%s whose resultPath is a named pipe: exit 2, a line per problem, and the pipe is not replaced",
    async (_name, overrides, problems) => {
      const c = await wrapperCase({ meta: defaultMeta({ resultPath: "pipe", ...overrides }), scenario: ECHO });
      execFileSync("mkfifo", [path.join(c.dir, "pipe")]);
      const run = await c.run();
      expect(run.code).toBe(2);
      const lines = run.stderr.trim().split("\n");
      expect(lines).toHaveLength(problems);
      expect(lines.at(-1)).toBe(
        `subagent-wrapper: meta.json resultPath ${path.join(c.dir, "pipe")} exists and is not a regular file`,
      );
      expect((await lstat(path.join(c.dir, "pipe"))).isFIFO()).toBe(true);
      await expect(fakePiRecord(run.dir)).rejects.toThrow();
    },
  );

  it("a missing meta file and a directory given as meta file: exit 2, one line naming it", async () => {
    const c = await wrapperCase({ scenario: ECHO });
    for (const [target, why] of [
      [path.join(c.dir, "absent.json"), "no such file"],
      [c.dir, "it is a directory"],
    ] as const) {
      const run = await c.run({ args: [target] });
      expect(run.code).toBe(2);
      expect(run.stderr).toBe(`subagent-wrapper: cannot read meta file ${target}: ${why}\n`);
    }
    await expect(fakePiRecord(c.dir)).rejects.toThrow();
  });

  it("a timeoutMs beyond setTimeout's range (1e10 ms) is honoured, not fired at once", async () => {
    const run = await (
      await wrapperCase({
        meta: defaultMeta({ timeoutMs: 1e10 }),
        scenario: { steps: [{ sleep: 300 }, { echoTask: true }] },
      })
    ).run();
    expect(run.result).toMatchObject({ status: "completed", finalText: "inspect auth" });
  });

  it("a UTF-8 byte order mark before the JSON is accepted", async () => {
    const c = await wrapperCase({ scenario: ECHO });
    await writeFile(c.metaPath, `\uFEFF${meta({})}`);
    expect((await c.run()).result).toMatchObject({ status: "completed" });
  });
});

const END = messageEnd("the answer");
describe("area 1: a meta.json with several problems gets all of them at once", () => {
  it("{} names all 5 missing required fields, one line each, exit 2, no child", async () => {
    const c = await wrapperCase({ metaText: "{}", scenario: ECHO });
    const run = await c.run();
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split("\n")).toEqual(
      ["runId", "task", "cwd", "resultPath", "eventsPath"].map(
        (field) => `subagent-wrapper: meta.json is missing required field "${field}"`,
      ),
    );
    await expect(fakePiRecord(run.dir)).rejects.toThrow();
  });

  it("shape and file-system problems together: every line on stderr, all of them in the failed result.json", async () => {
    const text = json({
      runId: "r9",
      task: 5,
      cwd: "no/such/dir",
      resultPath: "out/result.json",
      eventsPath: "out/result.json",
      thinking: "maximum",
      graceMs: -1,
    });
    const c = await wrapperCase({ metaText: text, scenario: ECHO });
    const run = await c.run();
    expect(run.code).toBe(2);
    const problems = [
      'meta.json field "task" must be a string, not a number',
      'meta.json field "graceMs" must be a positive number of milliseconds, not -1',
      'meta.json field "thinking" must be one of off, minimal, low, medium, high, xhigh, max, not "maximum"',
      `meta.json cwd ${path.join(c.dir, "no/such/dir")} does not exist`,
      `meta.json eventsPath and resultPath name the same file ${path.join(c.dir, "out/result.json")}`,
    ];
    expect(run.stderr.trim().split("\n")).toEqual(problems.map((line) => `subagent-wrapper: ${line}`));
    expect(run.result).toMatchObject({ runId: "r9", status: "failed", exitCode: 2, errorMessage: problems.join("; ") });
    await expect(fakePiRecord(run.dir)).rejects.toThrow();
  });

  it.each([
    ["timeoutMS", 5000, 'did you mean "timeoutMs"?'],
    ["evntsPath", "x.jsonl", 'did you mean "eventsPath"?'],
    ["stdout", "out/o.log", 'did you mean "stdoutPath"?'],
    ["futureField", { nested: true }, "ignored"],
  ])("an unknown field %s still runs, with one warning line", async (field, value, ending) => {
    const run = await (await wrapperCase({ meta: defaultMeta({ [field]: value }), scenario: ECHO })).run();
    expect(run.code).toBe(0);
    expect(run.result).toMatchObject({ status: "completed" });
    expect(run.result!.errorMessage).toBeUndefined();
    const warning = `subagent-wrapper: warning: meta.json field "${field}" is not a known field and is ignored`;
    expect(run.stderr).toBe(`${warning}${ending === "ignored" ? "" : `; ${ending}`}\n`);
  });
});

/** [name, bytes the child writes on stdout]. Each ends with the same terminal answer. */
const GARBAGE: Array<[string, Buffer]> = [
  ["non-JSON lines", Buffer.from(`hello\n{not json\n\u0000\u0001binary\n${END}\n`)],
  ["JSON that is not an event (numbers, null, arrays, strings)", Buffer.from(`42\nnull\n[1,2]\n"str"\n{}\n${END}\n`)],
  [
    "unknown event types and odd fields",
    Buffer.from(
      `${json({ type: "from_the_future", x: 1 })}\n${json({ type: "message_end", message: null })}\n${json({ type: "message_end", message: { role: "assistant", content: "not an array", usage: "lots" } })}\n${json({ type: "tool_execution_start" })}\n${END}\n`,
    ),
  ],
  [
    "a 10 MB garbage line",
    Buffer.concat([Buffer.from("garbage:"), Buffer.alloc(10 * 1024 * 1024, 0x78), Buffer.from(`\n${END}\n`)]),
  ],
  [
    "a 10 MB message_update line",
    Buffer.from(
      `${json({ type: "message_update", message: { role: "assistant", content: [{ type: "text", text: "y".repeat(10 * 1024 * 1024) }] } })}\n${END}\n`,
    ),
  ],
  [
    "invalid UTF-8 on its own line and inside a JSON string",
    Buffer.concat([
      Buffer.from([0xff, 0xfe, 0x0a]),
      withBytes(`${json({ type: "mystery", v: "@@" })}\n`, "@@", [0xc3, 0x28]),
      Buffer.from(`${END}\n`),
    ]),
  ],
  ["the terminal line without its final newline", Buffer.from(`${json({ type: "agent_start" })}\n${END}`)],
  ["a truncated last line after the answer", Buffer.from(`${END}\n{"type":"message_end","message":{"role":"assi`)],
];

describe(`area 1: ${GARBAGE.length} kinds of garbage on the child's stdout → the run still completes`, () => {
  it.each(GARBAGE)("%s", async (_name, bytes) => {
    const c = await wrapperCase({ meta: defaultMeta() });
    const run = await c.run({ env: { PI_SUBAGENTS_PI_BIN: await bytesPi(c.dir, bytes) } });
    expect(run.code).toBe(0);
    expect(run.result).toMatchObject({ status: "completed", finalText: "the answer", stopReason: "stop" });
    // events.jsonl stays one valid JSON object a line (the harness parses each), whatever came in.
    const types = run.events.map((e) => e.type);
    expect(types[0]).toBe("run_start");
    expect(types.at(-1)).toBe("run_end");
    expect(run.events.filter((e) => e.type === "assistant_text").at(-1)).toMatchObject({ text: "the answer" });
    const raw = await readFile(path.join(c.dir, "out/stdout.log"));
    expect(raw.length).toBeGreaterThan(0);
    expect(await settleLeftovers()).toEqual([]);
  });
});
