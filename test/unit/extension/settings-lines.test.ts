import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readSubagentSettings } from "../../../src/extension/settings.js";

const agentDir = fs.mkdtempSync(path.join(os.tmpdir(), "pst-settings-lines-"));
afterAll(() => fs.rmSync(agentDir, { recursive: true, force: true }));

describe("the extension's settings lines", () => {
  it("start with pi-subagent-tree: (said among pi's own), a misspelt key gets did you mean, and each is said once", () => {
    const file = path.join(agentDir, "settings.json");
    fs.writeFileSync(file, JSON.stringify({ subagents: { onexit: "stop" } }));
    const said: string[] = [];
    const first = readSubagentSettings({ agentDir }, (line) => said.push(line));
    expect(said).toEqual([
      `pi-subagent-tree: ${file}: subagents: unknown key "onexit"; did you mean "onExit"? (known: onExit, limits, fallback_models, runner, runners, budgets, confirm_every_usd, dialogs, dialog_timeout, child_extensions, verify, spare)`,
    ]);
    expect(first.problems).toHaveLength(1);
    readSubagentSettings({ agentDir }, (line) => said.push(line));
    expect(said).toHaveLength(1);
  });
});
