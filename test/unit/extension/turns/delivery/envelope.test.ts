import { describe, expect, it } from "vitest";
import {
  childInstructions,
  envelope,
  turnPrompt,
  withRolePrompt,
} from "../../../../../src/extension/turns/delivery/envelope.js";
import { agentRecord } from "../../../../support/records.js";

const record = agentRecord({
  path: "/root/scout_high",
  role: "scout",
  model: "fake/deep",
  reasoning: "high",
  activeTools: ["read", "grep", "find", "ls"],
  status: "running",
});

describe("envelopes", () => {
  it("say what the message is, who sent it and its task, then the payload verbatim", () => {
    const payload = '  -x @y\n/z "q"  ';
    expect(envelope("NEW_TASK", "/root", "scout_high", payload)).toBe(
      `[NEW_TASK from /root · task scout_high]\n${payload}`,
    );
  });

  it("a turn keeps queued pieces in the order sent, each in its own envelope, with forked history first", () => {
    const prompt = turnPrompt(
      [
        { kind: "MESSAGE", from: "/root", text: "NOTE", sentAt: "" },
        { kind: "FOLLOWUP_TASK", from: "/root", text: "SECOND TASK", sentAt: "" },
      ],
      "worker",
      "[user]\nearlier",
    );
    expect(prompt.indexOf("FORKED_HISTORY")).toBeLessThan(prompt.indexOf("[MESSAGE from /root · task worker]\nNOTE"));
    expect(prompt.indexOf("NOTE")).toBeLessThan(
      prompt.indexOf("[FOLLOWUP_TASK from /root · task worker]\nSECOND TASK"),
    );
  });

  it("never show a sender's model or reasoning", () => {
    const text = turnPrompt([{ kind: "NEW_TASK", from: "/root", text: "go", sentAt: "" }], "t");
    expect(text).not.toMatch(/model|reasoning/i);
  });
});

describe("child instructions", () => {
  it("state the path is a coordination id, not a filesystem path, and the child's own model and reasoning", () => {
    const text = childInstructions(record, false);
    expect(text).toContain("You are the agent /root/scout_high (nickname Euclid)");
    expect(text).toContain("coordination identifier in the agent tree, not a filesystem path");
    expect(text).toContain("Your own model is fake/deep with reasoning high");
    expect(text).toContain("[ABORT]");
    expect(text).not.toContain("wait_agent");
  });

  it("tell a child that can delegate to wait for its children before answering", () => {
    expect(childInstructions(record, true)).toMatch(
      /wait_agent until your children are done before you give your final answer/,
    );
  });
});

describe("withRolePrompt", () => {
  it("puts a user-defined role's text after the tree instructions, under its own heading", () => {
    expect(withRolePrompt("# Your place in the agent tree\n…\n", "reviewer", "\nYou review code.\n\n")).toBe(
      "# Your place in the agent tree\n…\n\n# Your role: reviewer\nYou review code.\n",
    );
  });

  it("leaves the instructions alone without a role text", () => {
    expect(withRolePrompt("x\n", "scout", undefined)).toBe("x\n");
    expect(withRolePrompt("x\n", "reviewer", "  \n")).toBe("x\n");
  });

  it("tells an isolated child where it works, on which branch, and that each turn is committed there", () => {
    const worktree = {
      path: "/t/worktrees/w",
      branch: "subagent/7f3a9c2e-w",
      baseCommit: "a".repeat(40),
      gitDir: "/r/.git",
      subdir: "",
    };
    const text = childInstructions(agentRecord({ path: "/root/w", worktree }), false);
    expect(text).toContain("You work in your own git worktree, /t/worktrees/w, on branch subagent/7f3a9c2e-w");
    expect(text).toContain("committed on that branch when your turn ends");
    expect(childInstructions(agentRecord({ path: "/root/w" }), false)).not.toContain("worktree");
  });
});
