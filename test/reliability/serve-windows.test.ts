/**
 * Faults at the far side's own windows (`subagent-wrapper serve`, driven over stdin and
 * stdout with the fake pi): a live message that comes while the workspace is still being
 * unpacked (before pi runs) is delivered, first, once pi runs — never dropped without an
 * error frame; and a bundle whose symlink leads out of the workspace makes nothing outside
 * the scratch space, even for the cwd it then refuses.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ARG_TOKENS, encodeFrame } from "../../src/contracts/serve-protocol.js";
import {
  bundleOf,
  cleanupServeCases,
  type ServeRun,
  serveCase,
  startServe,
  turnFrames,
} from "../support/serve-driver.js";
import { LOAD_TASK_EXTENSION } from "./support.js";

afterEach(cleanupServeCases);

const errorOf = (run: ServeRun): string | undefined => {
  const frame = run.frames.find((f) => f.t === "error");
  return frame?.t === "error" ? frame.message : undefined;
};

const stdoutOf = (run: ServeRun): string =>
  run.frames
    .filter((f) => f.t === "stdout")
    .map((f) => Buffer.from((f as { data: string }).data, "base64").toString("utf8"))
    .join("");

describe("serve: a live message before pi runs", () => {
  it("a message sent with the turn's last blob (pi not started yet) reaches pi, before anything else: 0 lost", async () => {
    const c = serveCase();
    // pi waits until a live message is handed to it (or 30 s pass), then takes it in.
    const steps = [
      { agentStart: true },
      { turnStart: true },
      { user: true },
      { awaitSteer: 30_000 },
      { turnStart: true },
      { steer: true },
      { assistant: { text: "done", stopReason: "stop" } },
      { turnEnd: true },
      { agentEnd: true },
    ];
    const run = startServe(c, { FAKE_PI_SCRIPT: JSON.stringify({ steps }), ...LOAD_TASK_EXTENSION }, 60_000);
    const [hello, start, ...blobs] = turnFrames(c);
    if (start?.t !== "start") throw new Error("turnFrames starts with hello and start");
    const withInbox = { ...start, inbox: true, args: ["--mode", "json", "--extension", ARG_TOKENS.taskExtension, "t"] };
    // The message goes in the same write as the last blob: serve reads it while it unpacks the workspace.
    const message = { t: "message", name: "0001.json", id: "early-1", text: "early live message" } as const;
    run.write([hello!, withInbox, ...blobs, message].map(encodeFrame).join(""));
    const exit = await run.waitFor("exit", 50_000);
    run.end();
    const { code, timedOut } = await run.done;
    expect(timedOut).toBe(false);
    expect(errorOf(run)).toBeUndefined();
    expect(code).toBe(0);
    expect(exit).toMatchObject({ t: "exit", code: 0 });
    // pi took it in as a user message (the steer), not a message found later in a folder.
    const userTexts = stdoutOf(run)
      .split("\n")
      .filter((line) => line.includes('"type":"message_end"') && line.includes('"role":"user"'));
    expect(userTexts.some((line) => line.includes("early live message"))).toBe(true);
    expect(fs.readdirSync(c.tmp)).toEqual([]);
  });
});

describe("serve: a stop before pi runs", () => {
  it("a stop sent with the turn's last blob stops pi once it starts (the turn ends, not runs on)", async () => {
    const c = serveCase();
    const run = startServe(c, { FAKE_PI_SCRIPT: JSON.stringify({ steps: [{ linger: null }] }) }, 40_000);
    const frames = [...turnFrames(c), { t: "stop", signal: "SIGTERM" } as const];
    run.write(frames.map(encodeFrame).join(""));
    const exit = await run.waitFor("exit", 30_000);
    run.end();
    const { code, timedOut } = await run.done;
    expect(timedOut).toBe(false);
    expect(code).toBe(0);
    expect(exit).toMatchObject({ t: "exit" });
    expect(exit).not.toMatchObject({ code: 0 });
  });
});

describe("serve: a cwd through a symlink that leads out of the workspace", () => {
  it("is refused with an error frame, and nothing is made outside the scratch space (0 folders outside)", async () => {
    const c = serveCase();
    const outside = path.join(c.dir, "outside");
    fs.mkdirSync(outside);
    fs.symlinkSync(outside, path.join(c.repo, "a"));
    const git = (...args: string[]) =>
      execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], {
        cwd: c.repo,
        encoding: "utf8",
      }).trim();
    git("add", "-A");
    const base = git("commit-tree", git("write-tree"), "-m", "with a link out");
    const run = startServe(c, { FAKE_PI_SCRIPT: JSON.stringify({ steps: [{ agentStart: true }] }) }, 30_000);
    for (const frame of turnFrames(c, { bundle: bundleOf(c.repo, base), base, cwd: "a/x/y" })) run.write(frame);
    const { code, timedOut } = await run.done;
    expect(timedOut).toBe(false);
    expect(code).toBe(1);
    expect(errorOf(run)).toMatch(/the child's cwd is not a folder inside the workspace: a\/x\/y/);
    expect(fs.readdirSync(outside)).toEqual([]);
    expect(fs.existsSync(c.record)).toBe(false); // pi never started
    expect(fs.readdirSync(c.tmp)).toEqual([]);
  });

  it("a symlink that stays inside the workspace still leads to the cwd, made below its target", async () => {
    const c = serveCase();
    fs.symlinkSync("sub", path.join(c.repo, "link"));
    const git = (...args: string[]) =>
      execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], {
        cwd: c.repo,
        encoding: "utf8",
      }).trim();
    git("add", "-A");
    const base = git("commit-tree", git("write-tree"), "-m", "with a link in");
    const steps = [{ agentStart: true }, { agentEnd: true }];
    const run = startServe(c, { FAKE_PI_SCRIPT: JSON.stringify({ steps }) }, 30_000);
    for (const frame of turnFrames(c, { bundle: bundleOf(c.repo, base), base, cwd: "link/new" })) run.write(frame);
    await run.waitFor("exit");
    run.end();
    const { code } = await run.done;
    expect(errorOf(run)).toBeUndefined();
    expect(code).toBe(0);
    const record = JSON.parse(fs.readFileSync(c.record, "utf8")) as { cwd: string };
    expect(record.cwd.endsWith(`${path.sep}work${path.sep}sub${path.sep}new`)).toBe(true);
  });
});
