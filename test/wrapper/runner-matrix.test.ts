/**
 * What works on every runner, from the local wrapper's side with the fake pi and a
 * `command` runner whose prefix starts `subagent-wrapper serve` on this machine: fallback
 * models (each model's pi is a new far side; the next one's workspace holds what the
 * failed one changed, its session is the far side's copy of the run's session, the attempts are
 * recorded) and limits (the wrap-up is a live message that goes over the protocol
 * and reaches the far pi before its next request; the turn ends `completed` with `limit`).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ENV } from "../../src/contracts/env.js";
import { killAll } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, HERE_RUNNER, wrapperCase } from "../support/wrapper-harness.js";

afterEach(async () => {
  await killAll();
  await cleanupWrapperCases();
});

const RUNNER = HERE_RUNNER;
const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, encoding: "utf8" }).trim();

/** A case on the command runner whose cwd is a repository with one commit. */
async function runnerCase(meta: Record<string, unknown>, scenario: object) {
  const c = await wrapperCase({ meta: defaultMeta({ cwd: "repo", runner: RUNNER, ...meta }), scenario });
  const repo = path.join(c.dir, "repo");
  fs.mkdirSync(repo);
  git(repo, "init", "-q", "-b", "main");
  fs.writeFileSync(path.join(repo, "a.txt"), "a\n");
  git(repo, "add", "-A");
  git(repo, "commit", "-q", "-m", "initial");
  return { c, repo };
}

const begin = [{ agentStart: true }, { turnStart: true }, { user: true }];
const end = [{ turnEnd: true }, { agentEnd: true }, { exit: 0 }];

describe("fallback models on a runner (command prefix, fake pi)", () => {
  it("a 429 on the far side: the next model's pi is a new far side that starts from what the first changed, on the run's session; attempts recorded", async () => {
    const scripts = {
      "fake/a": {
        steps: [
          ...begin,
          { writeFile: { path: "first.txt", text: "from a\n" } },
          { assistant: { stopReason: "error", errorMessage: "429 Rate limit reached. Please try again in 20s." } },
          ...end,
        ],
      },
      "fake/b": {
        steps: [
          ...begin,
          { writeFile: { path: "second.txt", text: "from b\n" } },
          { assistant: { text: "done on b", stopReason: "stop" } },
          ...end,
        ],
      },
    };
    // No sessionPath of its own: the wrapper gives the run one (fallback.ts), and it must go over too.
    const { c, repo } = await runnerCase(
      { requestedModel: "fake/a", fallbackModels: ["fake/b"], runnerWorkspacePath: "agent/runner-workspace" },
      { steps: [] },
    );
    const starts = path.join(c.dir, "starts.jsonl");
    const out = await c.run({ env: { FAKE_PI_MODEL_SCRIPTS: JSON.stringify(scripts), FAKE_PI_RECORDS: starts } });
    expect(out.code, out.stderr).toBe(0);
    expect(out.result).toMatchObject({
      status: "completed",
      finalText: "done on b",
      resolvedModel: "fake/b",
      runner: { name: "here", kind: "command" },
    });
    expect(out.result?.attempts?.map((a) => [a.model, a.error_class])).toEqual([["fake/a", "rate_limit"]]);
    expect(out.events.find((e) => e.type === "model_switch")).toMatchObject({ from: "fake/a", to: "fake/b" });

    const pis = fs
      .readFileSync(starts, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { argv: string[]; cwd: string; task: string });
    expect(pis).toHaveLength(2);
    expect(pis[1]!.argv[pis[1]!.argv.indexOf("--model") + 1]).toBe("fake/b");
    expect(pis[1]!.task).toMatch(/fake\/a failed with a provider error \(rate_limit\).*now runs on fake\/b/);
    // Each far pi got the far side's copy of the run's session, not this machine's path.
    const localSession = path.join(c.dir, "out", "fallback-session.jsonl");
    for (const pi of pis) {
      const session = pi.argv[pi.argv.indexOf("--session") + 1]!;
      expect(session).not.toBe(localSession);
      expect(session.startsWith(path.join(c.dir, "tmp"))).toBe(true);
    }
    // The second far side claimed the workspace the first kept (the agent's key): only what it lacked went over ...
    expect(out.stderr.match(/workspace bundle \d+ bytes/g)).toHaveLength(2);
    expect(out.stderr).toMatch(/workspace bundle \d+ bytes, without what the far side kept of the last turn/);
    // ... and both attempts' work is on the branch: had the second workspace lacked first.txt,
    // its commit would have deleted it.
    expect(git(repo, "show", "HEAD:first.txt")).toBe("from a");
    expect(git(repo, "show", "HEAD:second.txt")).toBe("from b");
    expect(git(repo, "log", "--format=%s", "-3").split("\n")).toEqual([
      "subagent turn (run run-1)",
      "subagent turn (run run-1)",
      "initial",
    ]);
    expect(git(repo, "status", "--porcelain")).toBe("");
  });
});

describe("limits on a runner (command prefix, fake pi running the task extension)", () => {
  it("max_turns: the wrap-up goes over as a live message, reaches the far pi before its next request; completed with limit", async () => {
    const { c } = await runnerCase(
      { limits: { max_turns: 1 } },
      {
        steps: [
          ...begin,
          {
            assistant: {
              text: "looking",
              toolCalls: [{ id: "c1", name: "bash", arguments: { command: "true" } }],
              stopReason: "toolUse",
            },
          },
          // Returns as soon as the wrap-up arrives; a loaded machine once took more than 10 s to carry it.
          { awaitSteer: 40_000 },
          { tool: { id: "c1", name: "bash", output: "ok" } },
          { turnEnd: true },
          { turnStart: true },
          { steer: true },
          { assistant: { text: "done: A; left: B; files: clean", stopReason: "stop" } },
          ...end,
        ],
      },
    );
    const out = await c.run({
      env: { FAKE_PI_LOAD_EXTENSIONS: "task-extension.js", PI_SUBAGENTS_PI_VERSION: "0.73.1" },
    });
    expect(out.result, out.stderr).toMatchObject({
      status: "completed",
      finalText: "done: A; left: B; files: clean",
      limit: { name: "max_turns", value: 1, used: 1 },
      forcedExit: false,
      runner: { name: "here", kind: "command" },
    });
    const types = out.events.map((e) => e.type);
    expect(types.indexOf("limit")).toBeLessThan(types.indexOf("message_delivered"));
    const delivered = out.events.find((e) => e.type === "message_delivered") as { id: string; text: string };
    expect(delivered.id).toBe("limit-wrap-up");
    expect(delivered.text).toMatch(/^\[LIMIT max_turns\] .*1 of 1 model requests/);
    // The far pi read it before its next request: the delivery comes before the last answer.
    expect(types.lastIndexOf("assistant_text")).toBeGreaterThan(types.indexOf("message_delivered"));
  });
});

describe("a runner turn whose checkout never says ready (its root died while writing it, none came back)", () => {
  it("the turn still ends by its own limit: interrupted with limit, its commit landed, the checkout wait after the stop", async () => {
    const { c, repo } = await runnerCase(
      { limits: { time_limit: 1, grace_seconds: 1 }, cwdReadyPath: "checkouts/agent.ready" },
      { steps: [...begin, { writeFile: { path: "begun.txt", text: "begun\n" } }, { linger: null }] },
    );
    // The wait is CHECKOUT_AFTER_STOP_MS (30 s) for users; 3 s here, set the one way a test may.
    const afterStopMs = 3000;
    const began = Date.now();
    const out = await c.run({
      timeoutMs: afterStopMs + 30_000,
      env: { [ENV.checkoutAfterStopMs]: String(afterStopMs) },
    });
    expect(out.result, out.stderr).toMatchObject({ status: "interrupted", limit: { name: "time_limit", value: 1 } });
    // The time limit (1 s) stops the turn; the landing then waits the whole checkout wait.
    expect(Date.now() - began).toBeGreaterThan(1000 + afterStopMs);
    expect(git(repo, "show", "HEAD:begun.txt")).toBe("begun");
  }, 90_000);
});
