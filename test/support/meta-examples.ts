/**
 * meta.json examples shared by the hand validator's tests (test/unit/contracts/meta.test.ts) and the
 * schema agreement test (test/unit/contracts/schemas.test.ts): both must accept the valid ones and
 * reject the invalid ones, so the published schema and the wrapper never disagree.
 */
export const BASE_META = {
  runId: "r1",
  task: "do it",
  cwd: ".",
  resultPath: "out/result.json",
  eventsPath: "out/events.jsonl",
};

const base = BASE_META;

/** Valid meta.json objects: [name, raw]. */
export const VALID_META: Array<[string, unknown]> = [
  ["the required fields only", base],
  ["an empty task", { ...base, task: "" }],
  ["version 1", { ...base, version: 1 }],
  ["an unknown field", { ...base, futureField: { nested: true } }],
  [
    "every optional field",
    {
      ...base,
      mode: "followup",
      agent: "scout",
      agentSource: "builtin",
      agentPath: "/root/scout_one",
      requestedModel: "fake/fast",
      resolvedModel: "fake/deep",
      thinking: "xhigh",
      tools: [],
      extensions: ["./ext.ts", "npm:pi-foo"],
      noExtensions: true,
      noContextFiles: false,
      systemPromptPath: "prompt.md",
      sessionPath: "/abs/s.jsonl",
      startedAt: "2026-01-01T00:00:00.000Z",
      stdoutPath: "out/stdout.log",
      stderrPath: "out/stderr.log",
      transcriptPath: "out/transcript.md",
      timeoutMs: 0.5,
      graceMs: 1000,
      env: { A: "1", EMPTY: "" },
    },
  ],
];

/** Invalid meta.json objects: [name, raw, the wrapper's one-line message]. */
export const INVALID_META: Array<[string, unknown, string]> = [
  ["not an object", [1, 2], "meta.json must hold a JSON object, not an array"],
  ["null", null, "meta.json must hold a JSON object, not null"],
  ["missing runId", { ...base, runId: undefined }, 'meta.json is missing required field "runId"'],
  ["missing task", { ...base, task: undefined }, 'meta.json is missing required field "task"'],
  ["missing cwd", { ...base, cwd: undefined }, 'meta.json is missing required field "cwd"'],
  ["missing eventsPath", { ...base, eventsPath: undefined }, 'meta.json is missing required field "eventsPath"'],
  ["a numeric task", { ...base, task: 5 }, 'meta.json field "task" must be a string, not a number'],
  ["an empty cwd", { ...base, cwd: "" }, 'meta.json field "cwd" must not be empty'],
  [
    "a numeric model",
    { ...base, requestedModel: 3 },
    'meta.json field "requestedModel" must be a string, not a number',
  ],
  [
    "tools as a string",
    { ...base, tools: "read,bash" },
    'meta.json field "tools" must be an array of non-empty strings',
  ],
  [
    "extensions with a number",
    { ...base, extensions: ["a", 1] },
    'meta.json field "extensions" must be an array of non-empty strings',
  ],
  [
    "noExtensions as a string",
    { ...base, noExtensions: "yes" },
    'meta.json field "noExtensions" must be a boolean, not a string',
  ],
  [
    "a zero timeout",
    { ...base, timeoutMs: 0 },
    'meta.json field "timeoutMs" must be a positive number of milliseconds, not 0',
  ],
  [
    "a negative grace",
    { ...base, graceMs: -5 },
    'meta.json field "graceMs" must be a positive number of milliseconds, not -5',
  ],
  [
    "a string timeout",
    { ...base, timeoutMs: "100" },
    'meta.json field "timeoutMs" must be a positive number of milliseconds, not "100"',
  ],
  [
    "an unknown thinking level",
    { ...base, thinking: "maximum" },
    'meta.json field "thinking" must be one of off, minimal, low, medium, high, xhigh, max, not "maximum"',
  ],
  ["env as an array", { ...base, env: ["A=1"] }, 'meta.json field "env" must be an object of strings, not an array'],
  ["a numeric env value", { ...base, env: { A: 1 } }, 'meta.json field "env.A" must be a string, not a number'],
  ["another version", { ...base, version: 2 }, "meta.json version 2 is not supported (this wrapper reads version 1)"],
  [
    "a version string",
    { ...base, version: "1" },
    'meta.json version "1" is not supported (this wrapper reads version 1)',
  ],
  ["a string", "meta", "meta.json must hold a JSON object, not a string"],
  ["an empty runId", { ...base, runId: "" }, 'meta.json field "runId" must not be empty'],
  ["an empty resultPath", { ...base, resultPath: "" }, 'meta.json field "resultPath" must not be empty'],
  ["a numeric runId", { ...base, runId: 7 }, 'meta.json field "runId" must be a string, not a number'],
  [
    "an empty tool name",
    { ...base, tools: ["read", ""] },
    'meta.json field "tools" must be an array of non-empty strings',
  ],
  [
    "noContextFiles as a number",
    { ...base, noContextFiles: 1 },
    'meta.json field "noContextFiles" must be a boolean, not a number',
  ],
  [
    "a null transcriptPath",
    { ...base, transcriptPath: null },
    'meta.json field "transcriptPath" must be a string, not null',
  ],
  ["env as a string", { ...base, env: "A=1" }, 'meta.json field "env" must be an object of strings, not a string'],
];
