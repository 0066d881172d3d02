/**
 * fork_turns when the parent's history holds no assistant message yet (its first turn): pi
 * cannot continue such a session file, so the history reaches the child as a transcript at
 * the head of its first prompt, before its NEW_TASK envelope.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { reply, userTexts } from "../support/scripted-llm.js";
import { expectCleanExit, expectNoSurvivors, Program, useTrees, waitForAll } from "../support/tree-harness-extra.js";

const tree = useTrees();

describe("fork_turns on the parent's first turn", () => {
  it("the default full fork delivers the parent's prompt as a transcript, then the task", async () => {
    const root = new Program([
      reply.toolCall("spawn_agent", { task_name: "helper", message: "Summarize what I was asked." }),
      waitForAll(["/root/helper"]),
      reply.text("ROOT DONE"),
    ]);
    const h = await tree({
      scripts: { "/root": root.steps(), "/root/helper": [reply.text("You were asked about the weather.")] },
    });
    expectCleanExit(await h.runRoot("What is the weather like on Mars?"));
    const [first] = h.requestsOf("/root/helper");
    const texts = userTexts(first!);
    expect(texts).toHaveLength(1);
    expect(texts[0]).toBe(
      "[FORKED_HISTORY · the parent's conversation so far]\n[user]\nWhat is the weather like on Mars?\n\n[NEW_TASK from /root · task helper]\nSummarize what I was asked.",
    );
    // Nothing was written for pi to continue: the child's session is pi's own, started fresh.
    const session = path.join(h.treeDir(), "agents", "helper", "session.jsonl");
    const entries = fs
      .readFileSync(session, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { type: string });
    expect(entries.filter((e) => e.type === "session")).toHaveLength(1);
    await expectNoSurvivors(h);
  });
});
