/** What a deliberate exit does with running turns, and what the terminal says then. */
import { describe, expect, it } from "vitest";
import { ENV } from "../../../../src/contracts/env.js";
import { wrapperEnv } from "../../../../src/extension/turns/wrapper/launcher.js";
import {
  activeAgents,
  detachLines,
  interactiveMode,
  launchCommand,
  onExitChoice,
  stoppingStatus,
} from "../../../../src/extension/ui/exit.js";
import { agentRecord } from "../../../support/records.js";

describe("onExit", () => {
  it("defaults: detach in interactive mode, stop in print, json and rpc modes", () => {
    expect(onExitChoice(interactiveMode(true, ["node", "pi"]), undefined, {})).toBe("detach");
    expect(onExitChoice(interactiveMode(false, ["node", "pi", "-p", "hi"]), undefined, {})).toBe("stop");
    expect(onExitChoice(interactiveMode(true, ["node", "pi", "--mode", "rpc"]), undefined, {})).toBe("stop");
  });

  it("the setting beats the default; PI_SUBAGENTS_ON_EXIT beats the setting; an unknown value is ignored", () => {
    expect(onExitChoice(true, "stop", {})).toBe("stop");
    expect(onExitChoice(false, "detach", {})).toBe("detach");
    expect(onExitChoice(true, "stop", { [ENV.onExit]: "detach" })).toBe("detach");
    expect(onExitChoice(true, "detach", { [ENV.onExit]: " STOP " })).toBe("stop");
    expect(onExitChoice(true, undefined, { [ENV.onExit]: "later" })).toBe("detach");
  });
});

describe("the detach exit lines", () => {
  const records = [
    agentRecord({ path: "/root/a", status: "running" }),
    agentRecord({ path: "/root/b", status: "running" }),
    agentRecord({ path: "/root/c", status: "pending_init" }),
  ];
  it("say how many keep running, what bounds them, and the commands to look, stop and re-attach", () => {
    const lines = detachLines(activeAgents(records), {
      sessionFile: "/s/root.jsonl",
      treeDir: "/s/subagents/id",
      turnLimitMs: 1_800_000,
      budget: "$5",
    });
    expect(lines).toEqual([
      "pi-subagent-tree: left 2 running and 1 queued agents (/root/a, /root/b, /root/c).",
      "  the 2 running go on to their own end, each bounded by its turn time limit (30 min), the limits it was given, the tree budget ($5); results are kept.",
      "  queued turns stay queued until a root takes the tree back.",
      "  look:      subagent-wrapper inspect /s/subagents/id",
      "  stop:      subagent-wrapper stop /s/subagents/id",
      "  re-attach: pi --session /s/root.jsonl  (or pi -c in this folder); notices come then, once each",
    ]);
    expect(stoppingStatus(activeAgents(records), undefined, "detach")).toContain("pi -c takes them back");
  });

  it("names the command that started pi: pi-subagent-tree when its launcher did", () => {
    const records = [agentRecord({ path: "/root/a", status: "running" })];
    const lines = detachLines(activeAgents(records), {
      command: launchCommand({ PI_SUBAGENTS_LAUNCHER: "pi-subagent-tree" }),
      sessionFile: "/s/root.jsonl",
      treeDir: "/s/subagents/id",
    });
    expect(lines.at(-1)).toBe(
      "  re-attach: pi-subagent-tree --session /s/root.jsonl  (or pi-subagent-tree -c in this folder); notices come then, once each",
    );
    const status = stoppingStatus(activeAgents(records), undefined, "detach", "pi-subagent-tree");
    expect(status).toContain("pi-subagent-tree -c takes it back");
    expect(launchCommand({})).toBe("pi");
    expect(launchCommand({ PI_SUBAGENTS_LAUNCHER: "x; rm -rf /" })).toBe("pi");
  });
});

describe("the wrapper's parent watch", () => {
  it("a root's turns outlive it: no PI_SUBAGENTS_PARENT_PID (an inherited one is dropped)", () => {
    const env = wrapperEnv("/bin/pi", { PATH: "/bin", [ENV.parentPid]: "77" });
    expect(env[ENV.parentPid]).toBeUndefined();
    expect(env[ENV.piBin]).toBe("/bin/pi");
  });

  it("below the root, a child's pi ends with its turn: its children's wrappers watch it", () => {
    const env = wrapperEnv(undefined, { [ENV.agentPath]: "/root/mid", [ENV.treeDir]: "/t" });
    expect(env[ENV.parentPid]).toBe(String(process.pid));
  });
});
