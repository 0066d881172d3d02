/**
 * Shipping a runner's workspace, from the local wrapper's side with the fake pi:
 * a follow-up sends only what the far side lacks (the sandbox keeps the agent's workspace in
 * meta.json `runnerWorkspacePath` between turns, so the second turn's bundle holds the
 * changed file and the new commit, not the repository), a bundle over the far side's bound
 * is a spawn error naming the size and the bound, in seconds, before pi starts, and a far
 * side that speaks an older protocol is an error that says to update it.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SERVE_ENV } from "../../src/contracts/serve-protocol.js";
import { skipOrFail } from "../support/needs.js";
import { cleanupWrapperCases, defaultMeta, HERE_RUNNER, wrapperCase } from "../support/wrapper-harness.js";

afterEach(cleanupWrapperCases);

const FILES = 2000;
const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, encoding: "utf8" }).trim();

const bwrapMissing = (): string | undefined => {
  try {
    execFileSync("bwrap", ["--ro-bind", "/", "/", "true"], { stdio: "ignore" });
    return undefined;
  } catch {
    return "bwrap (Debian package bubblewrap) is missing or cannot make a namespace here";
  }
};

/** A repository of `files` files of random text (nothing for compression to fold), committed. */
function repository(repo: string, files: number): void {
  fs.mkdirSync(repo);
  git(repo, "init", "-q", "-b", "main");
  for (let i = 0; i < files; i++) {
    const dir = path.join(repo, `d${Math.floor(i / 100)}`);
    if (i % 100 === 0) fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, `f${i}.txt`), `${randomBytes(96).toString("base64")}\n`);
  }
  git(repo, "add", "-A");
  git(repo, "commit", "-q", "-m", "initial");
}

const steps = (file: string) => ({
  steps: [
    { agentStart: true },
    { turnStart: true },
    { user: true },
    { writeFile: { path: file, text: `${file}\n` } },
    { assistant: { text: "done", stopReason: "stop" } },
    { turnEnd: true },
    { agentEnd: true },
  ],
});

/** The size the wrapper's log gives for the workspace bundle it sent. */
function sentBytes(stderr: string): number {
  const match = /workspace bundle (\d+) bytes/.exec(stderr);
  if (!match) throw new Error(`no bundle size in the wrapper's stderr: ${stderr}`);
  return Number(match[1]);
}

describe("shipping a runner's workspace", () => {
  it("sandbox: a follow-up's bundle is a small fraction of the first turn's; the kept workspace is in runnerWorkspacePath", async (ctx) => {
    skipOrFail(ctx, bwrapMissing());
    // The fake pi's script is one of this process's variables: named, so the sandbox passes it on.
    const runner = { name: "box", kind: "sandbox", env: ["FAKE_PI_SCRIPT"] };
    const meta = (run: number) =>
      defaultMeta({
        runId: `run-${run}`,
        cwd: "repo",
        runner,
        runnerWorkspacePath: "agent/runner-workspace",
        ...Object.fromEntries(
          ["resultPath", "eventsPath", "stdoutPath", "stderrPath", "transcriptPath"].map((field) => [
            field,
            `out${run}/${field.replace("Path", "")}`,
          ]),
        ),
      });
    const c = await wrapperCase({ meta: meta(1), scenario: steps("first.txt") });
    const repo = path.join(c.dir, "repo");
    repository(repo, FILES);
    // The fake pi records nothing: the sandbox's /tmp (where the case lives) is its own.
    const env = { FAKE_PI_RECORD: "" };
    const first = await c.run({ env });
    const result1 = JSON.parse(await first.read("out1/result"));
    expect(result1.status, first.stderr).toBe("completed");
    const kept = path.join(c.dir, "agent", "runner-workspace");
    expect(fs.readdirSync(kept).filter((name) => name.startsWith("subagent-keep-"))).toHaveLength(1);
    expect(git(repo, "show", "HEAD:first.txt")).toBe("first.txt");

    // One file changes on the agent's branch before the follow-up (as a merge from the parent would).
    fs.appendFileSync(path.join(repo, "d7", "f700.txt"), "changed by the parent\n");
    git(repo, "commit", "-q", "-am", "the parent's change");
    const meta2 = path.join(c.dir, "meta-2.json");
    fs.writeFileSync(meta2, JSON.stringify(meta(2)));
    const second = await c.run({ args: [meta2], env: { ...env, FAKE_PI_SCRIPT: JSON.stringify(steps("second.txt")) } });
    const result2 = JSON.parse(await second.read("out2/result"));
    expect(result2.status, second.stderr).toBe("completed");

    const [bytes1, bytes2] = [sentBytes(first.stderr), sentBytes(second.stderr)];
    expect(first.stderr).not.toMatch(/without what the far side kept/);
    expect(second.stderr).toMatch(/without what the far side kept of the last turn/);
    expect(bytes1).toBeGreaterThan(FILES * 100);
    expect(bytes2).toBeLessThan(bytes1 / 50);
    // The second turn worked on the kept workspace brought up to the parent's state.
    expect(git(repo, "show", "HEAD:second.txt")).toBe("second.txt");
    expect(git(repo, "show", "HEAD:first.txt")).toBe("first.txt");
    expect(git(repo, "show", "HEAD:d7/f700.txt")).toMatch(/changed by the parent$/);
    expect(fs.readdirSync(kept).filter((name) => name.startsWith("subagent-keep-"))).toHaveLength(1);
  });

  it("a bundle over the far side's bound: a spawn error naming the size and the bound, in seconds, pi never started", async () => {
    const bound = 4096;
    const c = await wrapperCase({
      meta: defaultMeta({
        cwd: "repo",
        runner: HERE_RUNNER,
      }),
      scenario: steps("x.txt"),
    });
    const repo = path.join(c.dir, "repo");
    repository(repo, 100);
    const out = await c.run({ env: { [SERVE_ENV.maxBundle]: String(bound) } });
    expect(out.durationMs).toBeLessThan(10_000);
    expect(out.result?.status).toBe("failed");
    expect(out.result?.errorMessage).toMatch(
      new RegExp(
        `runner here \\(command\\): the workspace bundle is \\d+ bytes, over the far side's bound of ${bound} bytes`,
      ),
    );
    expect(out.result?.errorMessage).not.toMatch(/runner_lost/);
    expect(fs.existsSync(path.join(c.dir, "fake-pi-record.json"))).toBe(false);
    expect(fs.readdirSync(path.join(c.dir, "tmp"))).toEqual([]);
  });

  it("an older far side that refuses this side's protocol version: failed in seconds, with its words and what to do", async () => {
    const refusal = JSON.stringify({ t: "error", message: "protocol version 2 is not supported (this side speaks 1)" });
    const c = await wrapperCase({
      meta: defaultMeta({
        cwd: "repo",
        runner: {
          name: "old",
          kind: "command",
          capacity: 1,
          command: ["sh", "-c", `read hello; echo '${refusal}'; exit 1`],
        },
      }),
      scenario: steps("x.txt"),
    });
    repository(path.join(c.dir, "repo"), 3);
    const out = await c.run();
    expect(out.durationMs).toBeLessThan(10_000);
    expect(out.result?.status).toBe("failed");
    expect(out.result?.errorMessage).toContain(
      "runner old (command): protocol version 2 is not supported (this side speaks 1) (update subagent-wrapper on the far side)",
    );
  });
});
