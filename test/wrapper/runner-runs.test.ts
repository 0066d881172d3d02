/**
 * A run on a runner, from the local wrapper's side, with the fake pi and a
 * `command` runner whose prefix starts `subagent-wrapper serve` on this machine (no bwrap
 * needed): the run directory is a local run's, the turn's commit lands on the checked-out
 * branch, and failures are answers — a prefix that cannot start ends `failed` with its own
 * words in seconds, a connection lost mid-turn with `runner_lost`, a stop is `interrupted` —
 * and no process of the run is left.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { processAlive } from "../../src/lib/process.js";
import {
  cleanupWrapperCases,
  defaultMeta,
  fakePiRecord,
  WRAPPER_BIN,
  wrapperCase,
} from "../support/wrapper-harness.js";

afterEach(cleanupWrapperCases);

const SERVE = [process.execPath, WRAPPER_BIN];
const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, encoding: "utf8" }).trim();

/** A case whose cwd is a repository with one commit, run on `runner`. */
async function runnerCase(runner: Record<string, unknown>, scenario: object, meta: Record<string, unknown> = {}) {
  const c = await wrapperCase({
    meta: defaultMeta({ cwd: "repo", runner: { name: "here", kind: "command", capacity: 1, ...runner }, ...meta }),
    scenario,
  });
  const repo = path.join(c.dir, "repo");
  fs.mkdirSync(repo);
  git(repo, "init", "-q", "-b", "main");
  fs.writeFileSync(path.join(repo, "a.txt"), "a\n");
  git(repo, "add", "-A");
  git(repo, "commit", "-q", "-m", "initial");
  return { c, repo };
}

const steps = (...middle: object[]) => ({
  steps: [
    { agentStart: true },
    { turnStart: true },
    { user: true },
    ...middle,
    { assistant: { text: "done", stopReason: "stop" } },
    { turnEnd: true },
    { agentEnd: true },
  ],
});

async function gone(pid: number, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (processAlive(pid) && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 100));
  return !processAlive(pid);
}

describe("a run on a runner (command prefix, fake pi)", () => {
  it("completes like a local run: the same run files, result.json's runner, the turn's commit on the branch", async () => {
    const { c, repo } = await runnerCase(
      { command: ["env"], remote_command: SERVE },
      steps({ writeFile: { path: "child.txt", text: "child\n" } }),
    );
    const out = await c.run();
    expect(out.code, out.stderr).toBe(0);
    expect(out.result).toMatchObject({
      status: "completed",
      finalText: "done",
      runner: { name: "here", kind: "command" },
    });
    for (const file of ["events.jsonl", "result.json", "stdout.log", "stderr.log", "transcript.md"])
      expect(fs.existsSync(path.join(c.dir, "out", file)), file).toBe(true);
    expect(out.events.map((e) => e.type)).toContain("assistant_text");
    // The child ran in a scratch workspace of its own, not in the checkout.
    const record = await fakePiRecord(c.dir);
    expect(record.cwd.startsWith(path.join(c.dir, "tmp"))).toBe(true);
    expect(git(repo, "log", "--format=%s", "-1")).toMatch(/subagent turn/);
    expect(git(repo, "show", "HEAD:child.txt")).toBe("child");
    expect(git(repo, "status", "--porcelain")).toBe("");
    expect(fs.readdirSync(path.join(c.dir, "tmp"))).toEqual([]);
  });

  it("a prefix that cannot start: failed within seconds, with its own first line", async () => {
    const { c } = await runnerCase({ command: ["/nonexistent/prefix-bin"], remote_command: SERVE }, steps());
    const out = await c.run();
    expect(out.code).toBe(1);
    expect(out.durationMs).toBeLessThan(10_000);
    expect(out.result?.status).toBe("failed");
    expect(out.result?.errorMessage).toMatch(/runner here \(command\) could not start/);
    expect(out.result?.errorMessage).toMatch(/ENOENT|nonexistent/);
  });

  it("a prefix that fails at once: its stderr's first line and tail (at most 1 KB) are the error", async () => {
    const { c } = await runnerCase(
      { command: ["sh", "-c", "echo 'ssh: connect to host far: Connection refused' >&2; exit 255", "--"] },
      steps(),
    );
    const out = await c.run();
    expect(out.result?.status).toBe("failed");
    expect(out.result?.errorMessage).toContain("ssh: connect to host far: Connection refused");
    expect(out.result!.errorMessage!.length).toBeLessThan(1600);
  });

  it("a prefix that fails at once, on a workspace with many files: the wrapper ends after its git work, leaving nothing in the temp folder", async () => {
    const { c, repo } = await runnerCase({ command: ["false"] }, steps());
    // Enough files that reading the workspace outlasts the prefix's failure.
    for (let i = 0; i < 2000; i++) fs.writeFileSync(path.join(repo, `f${i}.txt`), `${i}\n`);
    const out = await c.run();
    expect(out.result?.status).toBe("failed");
    expect(fs.readdirSync(path.join(c.dir, "tmp"))).toEqual([]);
  });

  it("the connection lost mid-turn: failed with runner_lost, and nothing of the run left", async () => {
    const { c } = await runnerCase(
      { command: ["timeout", "-s", "KILL", "3"], remote_command: SERVE },
      { steps: [{ agentStart: true }, { turnStart: true }, { sleep: 60_000 }] },
    );
    // The task extension runs inside the fake pi: it ends pi once serve, its parent, is gone.
    const out = await c.run({ env: { FAKE_PI_LOAD_EXTENSIONS: "task-extension.js" } });
    expect(out.result?.status).toBe("failed");
    expect(out.result?.errorMessage).toMatch(/runner_lost: runner here \(command\): the connection was lost mid-turn/);
    const { pid } = await fakePiRecord(c.dir);
    expect(await gone(pid, 10_000)).toBe(true);
  });

  it("the connection lost mid-turn: the local session file holds the lines pi wrote before the loss, its header naming the local folder", async () => {
    const header = { type: "session", version: 3, id: "s-1", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/far" };
    const lines = [
      header,
      { type: "message", id: "u1", message: { role: "user", content: "inspect auth" } },
      { type: "message", id: "a1", message: { role: "assistant", content: [{ type: "toolCall", name: "bash" }] } },
    ];
    const { c, repo } = await runnerCase(
      { command: ["timeout", "-s", "KILL", "3"], remote_command: SERVE },
      { steps: [{ agentStart: true }, { turnStart: true }, { sessionAppend: lines }, { sleep: 60_000 }] },
      { sessionPath: "session.jsonl" },
    );
    const out = await c.run({ env: { FAKE_PI_LOAD_EXTENSIONS: "task-extension.js" } });
    expect(out.result?.status).toBe("failed");
    expect(out.result?.errorMessage).toMatch(/runner_lost: runner here \(command\): the connection was lost mid-turn/);
    const session = fs.readFileSync(path.join(c.dir, "session.jsonl"), "utf8");
    const here = [{ ...header, cwd: repo }, ...lines.slice(1)];
    expect(session).toBe(here.map((line) => `${JSON.stringify(line)}\n`).join(""));
  });

  it("a far side that does not stream the session (its hello without session_stream): nothing of the session while the turn runs, all of it at the end", async () => {
    // The local side's hello reaches serve without the flag: serve answers as a far side before the stream did.
    const proxy = [
      'const { spawn } = require("node:child_process");',
      'const far = spawn(process.execPath, process.argv.slice(1), { stdio: ["pipe", "inherit", "inherit"] });',
      'let rest = "";',
      'process.stdin.on("data", (d) => { rest += d; let at; while ((at = rest.indexOf("\\n")) >= 0) {',
      '  far.stdin.write(rest.slice(0, at + 1).replace(\',"session_stream":true\', "")); rest = rest.slice(at + 1); } });',
      'process.stdin.on("end", () => far.stdin.end());',
      'far.on("exit", (code) => process.exit(code ?? 1));',
    ].join("\n");
    const header = { type: "session", version: 3, id: "s-1", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/far" };
    // Lost mid-turn, such a far side sends nothing of the session back (the behaviour before the stream)…
    const lost = await runnerCase(
      { command: ["timeout", "-s", "KILL", "3"], remote_command: [process.execPath, "-e", proxy, "--", WRAPPER_BIN] },
      { steps: [{ agentStart: true }, { sessionAppend: [header] }, { sleep: 60_000 }] },
      { sessionPath: "session.jsonl" },
    );
    const lostOut = await lost.c.run({ env: { FAKE_PI_LOAD_EXTENSIONS: "task-extension.js" } });
    expect(lostOut.result?.errorMessage).toMatch(/runner_lost/);
    expect(fs.existsSync(path.join(lost.c.dir, "session.jsonl"))).toBe(false);
    // …and a turn that ends sends it whole.
    const { c, repo } = await runnerCase(
      { command: ["env"], remote_command: [process.execPath, "-e", proxy, "--", WRAPPER_BIN] },
      steps({ sessionAppend: [header, { type: "message", id: "a1" }] }),
      { sessionPath: "session.jsonl" },
    );
    const out = await c.run();
    expect(out.code, out.stderr).toBe(0);
    expect(out.result?.status).toBe("completed");
    const session = fs.readFileSync(path.join(c.dir, "session.jsonl"), "utf8");
    expect(session).toBe(
      `${JSON.stringify({ ...header, cwd: repo })}\n${JSON.stringify({ type: "message", id: "a1" })}\n`,
    );
  });

  it("a stop (SIGTERM to the wrapper) goes over as a stop frame: interrupted, and pi is gone", async () => {
    const { c } = await runnerCase(
      { command: ["env"], remote_command: SERVE },
      { steps: [{ agentStart: true }, { turnStart: true }, { sleep: 60_000 }] },
    );
    const run = c.start();
    const recordFile = path.join(c.dir, "fake-pi-record.json");
    while (!fs.existsSync(recordFile)) await new Promise((resolve) => setTimeout(resolve, 100));
    run.kill("SIGTERM");
    const out = await c.collect(await run.done);
    expect(out.result?.status).toBe("interrupted");
    const { pid } = await fakePiRecord(c.dir);
    expect(await gone(pid, 10_000)).toBe(true);
  });
});
