/** Which turns a spare pi fits (what pi fixed at its start), and the hand-over of the environment. */
import { describe, expect, it } from "vitest";
import type { MetaV1 } from "../../../src/contracts/meta.js";
import { parseSubagentSettings } from "../../../src/contracts/settings.js";
import { spareHandover, spareRefusal } from "../../../src/contracts/spare.js";

const spare: MetaV1 = {
  runId: "a-0001-spawn",
  task: "task of a",
  cwd: "/work",
  resultPath: "/tree/a/runs/0001/result.json",
  eventsPath: "/tree/a/runs/0001/events.jsonl",
  resolvedModel: "fake/fast",
  thinking: "low",
  tools: ["read", "bash"],
  extensions: ["/pkg/dist/extension/index.js"],
  noExtensions: true,
  systemPromptPath: "/tree/a/runs/0001/instructions.md",
  sessionPath: "/tree/a/session.jsonl",
  env: { PI_SUBAGENTS_TREE_DIR: "/tree", PI_SUBAGENTS_AGENT_PATH: "/root/a" },
};
const turn: MetaV1 = {
  ...spare,
  runId: "b-0001-spawn",
  task: "task of b",
  resultPath: "/tree/b/runs/0001/result.json",
  systemPromptPath: "/tree/b/runs/0001/instructions.md",
  sessionPath: "/tree/b/session.jsonl",
  env: { PI_SUBAGENTS_TREE_DIR: "/tree", PI_SUBAGENTS_AGENT_PATH: "/root/b", PI_SUBAGENTS_BUDGET_LEFT_TOKENS: "100" },
};

describe("spareRefusal", () => {
  it("takes a turn that differs only in what the hand-over carries: task, run files, session, its own variables", () => {
    expect(spareRefusal(spare, turn)).toBeUndefined();
  });

  it.each<[string, Partial<MetaV1>, string]>([
    ["another cwd", { cwd: "/elsewhere" }, "another cwd"],
    ["another model", { resolvedModel: "fake/deep" }, "another model"],
    ["another thinking level", { thinking: "high" }, "another thinking level"],
    ["other tools", { tools: ["read"] }, "other tools"],
    ["other extensions", { extensions: [] }, "other extensions"],
    ["pi's own extensions", { noExtensions: false }, "other extensions"],
    ["context files", { noContextFiles: true }, "other context files"],
    ["a /skill: task", { task: "/skill:review now" }, "other skills"],
    ["no instructions", { systemPromptPath: undefined }, "another system prompt"],
    ["a checkout being written", { cwdReadyPath: "/tree/b/ready" }, "its checkout is still being written"],
    ["no session", { sessionPath: undefined }, "it has no session file"],
    [
      "a variable pi reads",
      { env: { ...turn.env, TRACEPARENT: "00-1-2-01" } },
      "other environment pi reads at its start",
    ],
    [
      "a runner",
      { runner: { name: "box", kind: "sandbox" } as unknown as MetaV1["runner"] },
      "it runs on another runner",
    ],
  ])("refuses %s", (_name, change, reason) => {
    expect(spareRefusal(spare, { ...turn, ...change })).toBe(reason);
  });
});

describe("spareHandover", () => {
  it("sets the package's own variables of the turn and removes those it does not have; pi's are left alone", () => {
    const started = {
      PATH: "/bin",
      PI_SUBAGENTS_AGENT_PATH: "/root/a",
      PI_SUBAGENT_SPARE_HANDOVER: "/s/h.json",
      PI_SUBAGENT_TASK_FILE: "/s/no-task",
    };
    const wanted = {
      PATH: "/bin",
      PI_SUBAGENTS_AGENT_PATH: "/root/b",
      PI_SUBAGENT_TASK_FILE: "/tmp/run/task",
      OTHER: "x",
    };
    expect(spareHandover(started, wanted)).toEqual({
      version: 1,
      env: { PI_SUBAGENTS_AGENT_PATH: "/root/b", PI_SUBAGENT_TASK_FILE: "/tmp/run/task" },
      unset: ["PI_SUBAGENT_SPARE_HANDOVER"],
    });
  });
});

describe("the `spare` setting", () => {
  it("is true or false; anything else is named, and the default holds", () => {
    expect(parseSubagentSettings({ spare: false }, "project")).toEqual({ settings: { spare: false }, problems: [] });
    expect(parseSubagentSettings({ spare: "no" }, "global")).toEqual({
      settings: {},
      problems: ["settings: subagents.spare must be true or false"],
    });
  });
});
