/**
 * Verification through the tree, real pi and scripted LLM, in one tree: a child told to make
 * a failing check pass answers too early, is sent back with the check's failure in the same
 * session and repairs it; a reviewer definition (read-only tools) gives a verdict on another
 * child's work; a malformed verify is the spawn's error naming the field. A sandbox child's
 * check runs inside its sandbox and cannot write the parent's repository (needs bwrap).
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { skipOrFail } from "../support/needs.js";
import { reply, userTexts } from "../support/scripted-llm.js";
import {
  allNotices,
  expectCleanExit,
  expectNoSurvivors,
  lastList,
  rootText,
  useTrees,
} from "../support/tree-harness-extra.js";
import { committedRepository } from "../support/tree-repo.js";

const tree = useTrees();

const CHECK = "test -f fixed || { echo 'fixed is missing'; exit 3; }";
const REVIEWER = `---
name: reviewer
description: Reviews a child's work; read-only.
tools: read, grep, find, ls
---
You review strictly.
`;

type Json = Record<string, unknown>;

const bwrapMissing = (): string | undefined => {
  try {
    execFileSync("bwrap", ["--ro-bind", "/", "/", "true"], { stdio: "ignore" });
    return undefined;
  } catch {
    return "bwrap (Debian package bubblewrap) is missing or cannot make a namespace here";
  }
};

describe("verification in a tree", () => {
  it("a failing check sends the child back to repair in the same session; a reviewer gives a verdict; a bad verify is refused", async () => {
    const h = await tree({
      scripts: {
        "/root": [
          reply.toolCall("spawn_agent", {
            task_name: "fixer",
            message: "make the check pass",
            agent_type: "implementation",
            fork_turns: "none",
            verify: { run: [CHECK], max_repairs: 2 },
          }),
          reply.toolCall("spawn_agent", {
            task_name: "reviewed",
            message: "look at the project",
            fork_turns: "none",
            verify: { review: "reviewer", max_repairs: 0 },
          }),
          reply.toolCall("spawn_agent", {
            task_name: "bad",
            message: "x",
            fork_turns: "none",
            verify: { run: ["true"], max_repairs: 9 },
          }),
          reply.toolCall("wait_agent", { timeout_ms: 90_000 }),
          reply.toolCall("wait_agent", { timeout_ms: 90_000 }),
          reply.toolCall("list_agents", {}),
          reply.text("ROOT DONE"),
        ],
        // Answers before doing the work; sent back, it does it.
        "/root/fixer": [reply.text("done"), reply.toolCall("bash", { command: "touch fixed" }), reply.text("fixed it")],
        "/root/reviewed": [reply.text("the project looks fine")],
        "/root/reviewed:review": [reply.text("The work matches the task.\nVERDICT: pass")],
      },
    });
    await mkdir(path.join(h.home.dir, "agents"), { recursive: true });
    await writeFile(path.join(h.home.dir, "agents", "reviewer.md"), REVIEWER);
    expectCleanExit(await h.runRoot("delegate", { timeoutMs: 150_000 }));

    expect(rootText(h, "spawn_agent", { task_name: "bad" })).toContain(
      "verify.max_repairs must be a whole number from 0 to 5, not 9",
    );

    const notices = allNotices(h) as Json[];
    const fixer = notices.find((notice) => notice.agent_name === "/root/fixer");
    expect(fixer).toMatchObject({
      agent_status: "completed",
      report: "fixed it",
      verification: { status: "passed", repairs: 1, checks: [{ name: CHECK, kind: "run", exit_code: 0 }] },
    });
    // The repair went into the same conversation: its request holds the first answer, then the failure.
    const fixerRequests = h.requestsOf("/root/fixer");
    expect(fixerRequests).toHaveLength(3);
    const repairRequest = fixerRequests[1]!;
    expect(JSON.stringify(repairRequest.messages)).toContain("make the check pass");
    expect(
      repairRequest.messages.some((m) => m.role === "assistant" && JSON.stringify(m.content).includes("done")),
    ).toBe(true);
    expect(userTexts(repairRequest).at(-1)).toContain(`the check \`${CHECK}\` failed (exit code 3)`);
    expect(userTexts(repairRequest).at(-1)).toContain("fixed is missing");

    const reviewed = notices.find((notice) => notice.agent_name === "/root/reviewed");
    expect(reviewed).toMatchObject({
      agent_status: "completed",
      verification: { status: "passed", repairs: 0, checks: [{ name: "reviewer", kind: "review", verdict: "pass" }] },
    });
    // The reviewer read-only: only read, grep, find and ls were offered to it, with the definition's text.
    const [review] = h.requestsOf("/root/reviewed:review");
    const offered = (review?.tools ?? []).map((tool) => (tool as { function: { name: string } }).function.name);
    expect(offered.sort()).toEqual(["find", "grep", "ls", "read"]);
    expect(JSON.stringify(review?.messages)).toContain("You review strictly.");
    expect(userTexts(review!)[0]).toContain("the project looks fine");

    expect(lastList(h).find((agent) => agent.agent_name === "/root/fixer")).toMatchObject({
      verification: { status: "passed", repairs: 1 },
    });
    await expectNoSurvivors(h);
  });

  it("a sandbox child's check runs inside its sandbox: it cannot write the parent's repository", async (ctx) => {
    skipOrFail(ctx, bwrapMissing());
    const h = await tree({
      scripts: {
        "/root": [
          () => {
            const escaped = `${requestCwd}/escaped.txt`;
            return reply.toolCall("spawn_agent", {
              task_name: "boxed",
              message: "look around",
              fork_turns: "none",
              runner: "box",
              verify: {
                run: [`if touch ${escaped}; then echo WROTE THE PARENT; exit 1; fi; echo checked`],
                max_repairs: 0,
              },
            });
          },
          reply.toolCall("wait_agent", { timeout_ms: 90_000 }),
          reply.text("ROOT DONE"),
        ],
        "/root/boxed": [reply.text("boxed done")],
      },
      extraSettings: { subagents: { runners: { box: { kind: "sandbox" } } } },
    });
    const requestCwd = committedRepository(h);
    expectCleanExit(await h.runRoot("delegate", { timeoutMs: 150_000 }));
    const boxed = (allNotices(h) as Json[]).find((notice) => notice.agent_name === "/root/boxed");
    expect(boxed).toMatchObject({
      agent_status: "completed",
      verification: { status: "passed", repairs: 0, checks: [{ kind: "run", exit_code: 0 }] },
    });
    expect(existsSync(`${requestCwd}/escaped.txt`)).toBe(false);
    await expectNoSurvivors(h);
  });
});
