import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readSubagentSettings } from "../../../src/contracts/settings-file.js";

let dir: string;
let agentDir: string;
let project: string;

function write(file: string, json: unknown): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, typeof json === "string" ? json : JSON.stringify(json));
}

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "settings-"));
  agentDir = path.join(dir, "agent");
  project = path.join(dir, "project");
  fs.mkdirSync(project);
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const read = () => readSubagentSettings({ agentDir, cwd: project }, {});

describe("readSubagentSettings", () => {
  it("no files: no settings, no problems", () => {
    expect(read()).toEqual({ settings: {}, problems: [] });
  });

  it("reads every key of the global settings", () => {
    write(path.join(agentDir, "settings.json"), {
      theme: "dark",
      subagents: {
        onExit: "stop",
        limits: { max_turns: 4 },
        fallback_models: ["a/b", "c/d"],
        runner: "box",
        runners: { box: { kind: "sandbox" } },
        budgets: { daily_usd: 5, monthly_usd: 60.5 },
      },
    });
    expect(read()).toEqual({
      settings: {
        onExit: "stop",
        limits: { max_turns: 4 },
        fallbackModels: ["a/b", "c/d"],
        runner: "box",
        runners: { box: { kind: "sandbox" } },
        budgets: { daily_usd: 5, monthly_usd: 60.5 },
      },
      problems: [],
    });
  });

  it("a project may set limits and fallback models, never runners, runner, onExit or budgets", () => {
    write(path.join(agentDir, "settings.json"), {
      subagents: { limits: { max_turns: 4, max_cost: 1 }, onExit: "detach", budgets: { daily_usd: 2 } },
    });
    const projectFile = path.join(project, ".pi", "settings.json");
    write(projectFile, {
      subagents: {
        limits: { max_turns: 9 },
        fallback_models: ["x/y"],
        runners: { evil: { kind: "sandbox" } },
        onExit: "stop",
        budgets: { daily_usd: 1000 },
      },
    });
    const { settings, problems } = read();
    expect(settings).toEqual({
      onExit: "detach",
      limits: { max_turns: 9, max_cost: 1 },
      fallbackModels: ["x/y"],
      budgets: { daily_usd: 2 },
      unusableRunners: {
        evil: `it is defined in ${projectFile}, and only pi's global settings (settings.json in pi's agent dir) may define runners`,
      },
    });
    const only =
      "only pi's global settings may set runners, runner, onExit, budgets, confirm_every_usd, dialogs, dialog_timeout, child_extensions";
    expect(problems).toEqual([
      `${projectFile}: subagents.runners is ignored: ${only}`,
      `${projectFile}: subagents.onExit is ignored: ${only}`,
      `${projectFile}: subagents.budgets is ignored: ${only}`,
    ]);
  });

  it("confirm_every_usd: a positive USD amount from the global settings only; a project's is named and ignored", () => {
    const file = path.join(agentDir, "settings.json");
    write(file, { subagents: { confirm_every_usd: 2.5 } });
    const projectFile = path.join(project, ".pi", "settings.json");
    write(projectFile, { subagents: { confirm_every_usd: 1000 } });
    const only =
      "only pi's global settings may set runners, runner, onExit, budgets, confirm_every_usd, dialogs, dialog_timeout, child_extensions";
    expect(read()).toEqual({
      settings: { confirmEveryUsd: 2.5 },
      problems: [`${projectFile}: subagents.confirm_every_usd is ignored: ${only}`],
    });
    fs.rmSync(projectFile);
    for (const bad of [0, -1, "5"]) {
      write(file, { subagents: { confirm_every_usd: bad } });
      expect(read()).toEqual({
        settings: {},
        problems: [`${file}: subagents.confirm_every_usd must be a positive number of USD, not ${JSON.stringify(bad)}`],
      });
    }
  });

  it("bad values: one line naming each key, defaults for them", () => {
    const known =
      "onExit, limits, fallback_models, runner, runners, budgets, confirm_every_usd, dialogs, dialog_timeout, child_extensions, verify, spare";
    const file = path.join(agentDir, "settings.json");
    write(file, { subagents: { onExit: "later", fallback_models: "a/b", runner: "gpu", extra: 1, limit: {} } });
    const { settings, problems } = read();
    expect(settings).toEqual({});
    expect(problems).toEqual([
      `${file}: subagents.onExit must be "detach" or "stop"`,
      `${file}: subagents.fallback_models must be a list of provider/id model names`,
      `${file}: subagents: unknown key "extra" (known: ${known})`,
      `${file}: subagents: unknown key "limit"; did you mean "limits"? (known: ${known})`,
      "subagents.runner: unknown runner: gpu (known: local); using local",
    ]);
  });

  it("dialogs, dialog_timeout and child_extensions: read from the global settings only, each bad one named", () => {
    const file = path.join(agentDir, "settings.json");
    write(file, {
      subagents: {
        dialogs: "parent",
        dialog_timeout: 90,
        child_extensions: { exclude: ["noisy-status", "/x/gate.ts"] },
      },
    });
    const projectFile = path.join(project, ".pi", "settings.json");
    write(projectFile, { subagents: { dialogs: "deny", dialog_timeout: 1, child_extensions: { exclude: ["gate"] } } });
    const only =
      "only pi's global settings may set runners, runner, onExit, budgets, confirm_every_usd, dialogs, dialog_timeout, child_extensions";
    expect(read()).toEqual({
      settings: { dialogs: "parent", dialogTimeout: 90, childExtensions: { exclude: ["noisy-status", "/x/gate.ts"] } },
      problems: [
        `${projectFile}: subagents.dialogs is ignored: ${only}`,
        `${projectFile}: subagents.dialog_timeout is ignored: ${only}`,
        `${projectFile}: subagents.child_extensions is ignored: ${only}`,
      ],
    });

    write(file, {
      subagents: { dialogs: "persn", dialog_timeout: 0, child_extensions: { exlude: ["x"] }, dialog: "person" },
    });
    fs.rmSync(projectFile);
    expect(read()).toEqual({
      settings: {},
      problems: [
        `${file}: subagents.dialogs must be "person", "parent", "deny", not "persn"; did you mean "person"?`,
        `${file}: subagents.dialog_timeout must be a number of seconds above 0 and at most 86400, not 0`,
        `${file}: subagents.child_extensions: unknown key "exlude"; did you mean "exclude"? (known: exclude)`,
        `${file}: subagents: unknown key "dialog"; did you mean "dialogs"? (known: onExit, limits, fallback_models, runner, runners, budgets, confirm_every_usd, dialogs, dialog_timeout, child_extensions, verify, spare)`,
      ],
    });
    write(file, { subagents: { child_extensions: { exclude: "gate" } } });
    expect(read().problems).toEqual([
      `${file}: subagents.child_extensions.exclude must be a list of extension paths or names`,
    ]);
  });

  it("bad budgets: one line per key, that period without a budget, the others kept", () => {
    const file = path.join(agentDir, "settings.json");
    write(file, { subagents: { budgets: { daily_usd: 0, monthly_usd: 30, weekly_usd: 9 } } });
    expect(read()).toEqual({
      settings: { budgets: { monthly_usd: 30 } },
      problems: [
        `${file}: subagents.budgets.daily_usd must be a positive number of USD, not 0`,
        `${file}: subagents.budgets: unknown key "weekly_usd" (known: daily_usd, monthly_usd)`,
      ],
    });
    write(file, { subagents: { budgets: 5 } });
    expect(read().problems).toEqual([
      `${file}: subagents.budgets must be an object like {"daily_usd": 5}, not a number`,
    ]);
    write(file, { subagents: { budgets: { daily_usd: "5" } } });
    expect(read().problems).toEqual([`${file}: subagents.budgets.daily_usd must be a positive number of USD, not "5"`]);
  });

  it("a settings file that is not JSON, or not a file, is one line", () => {
    const file = path.join(agentDir, "settings.json");
    write(file, '{"subagents": {');
    expect(read().problems).toEqual([
      expect.stringMatching(/settings\.json: .* at line 1, column \d+; its settings are ignored$/),
    ]);
    fs.rmSync(file);
    fs.mkdirSync(file);
    expect(read().problems).toEqual([`${file}: not a regular file; its settings are ignored`]);
  });

  it("reads pi's agent dir from PI_CODING_AGENT_DIR by default", () => {
    write(path.join(agentDir, "settings.json"), { subagents: { onExit: "stop" } });
    expect(readSubagentSettings({}, { PI_CODING_AGENT_DIR: agentDir }).settings).toEqual({ onExit: "stop" });
  });
});
