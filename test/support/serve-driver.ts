/**
 * Drives `subagent-wrapper serve` directly (the far side of a runner) over its stdin and
 * stdout, with the fake pi, and reads its frames back: the protocol suite's harness.
 */
import { type ChildProcessByStdio, execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Readable, Writable } from "node:stream";
import {
  blobFrames,
  type ClientFrame,
  encodeFrame,
  SERVE_PROTOCOL_VERSION,
  type ServerFrame,
} from "../../src/contracts/serve-protocol.js";
import { signalGroup } from "../../src/wrapper/child.js";
import { FAKE_PI_DIR, WRAPPER_BIN } from "./wrapper-harness.js";

export interface ServeCase {
  dir: string;
  /** The serve process's TMPDIR: its scratch spaces go here. */
  tmp: string;
  repo: string;
  base: string;
  bundle: Buffer;
  /** Where the fake pi records what it got (pid, cwd, task). */
  record: string;
}

const cleanups: Array<() => void> = [];

export function cleanupServeCases(): void {
  for (const cleanup of cleanups.splice(0)) cleanup();
}

const git = (cwd: string, ...args: string[]): string =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, encoding: "utf8" }).trim();

/** A temp repository with one commit, bundled as the local side would (a ref at a parentless base). */
export function serveCase(): ServeCase {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "psa-serve-test-"));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const tmp = path.join(dir, "tmp");
  const repo = path.join(dir, "repo");
  fs.mkdirSync(tmp);
  fs.mkdirSync(path.join(repo, "sub"), { recursive: true });
  git(repo, "init", "-q");
  fs.writeFileSync(path.join(repo, "a.txt"), "a\n");
  fs.writeFileSync(path.join(repo, "sub", "b.txt"), "b\n");
  git(repo, "add", "-A");
  const tree = git(repo, "write-tree");
  const base = git(repo, "commit-tree", tree, "-m", "base");
  return { dir, tmp, repo, base, bundle: bundleOf(repo, base), record: path.join(dir, "record.json") };
}

/** A bundle holding `commit` at `refs/subagent-serve/t`. */
export function bundleOf(repo: string, commit: string): Buffer {
  git(repo, "update-ref", "refs/subagent-serve/t", commit);
  const file = path.join(repo, "..", `bundle-${commit.slice(0, 8)}`);
  git(repo, "bundle", "create", "-q", file, "refs/subagent-serve/t");
  git(repo, "update-ref", "-d", "refs/subagent-serve/t");
  return fs.readFileSync(file);
}

export interface ServeRun {
  pid: number;
  frames: ServerFrame[];
  stderr(): string;
  write(frame: ClientFrame | string): void;
  end(): void;
  /** Resolves with the exit code once serve has exited (SIGKILL after `timeoutMs`). */
  done: Promise<{ code: number | null; timedOut: boolean }>;
  /** Resolves once a frame of type `t` has arrived. */
  waitFor(t: ServerFrame["t"], timeoutMs?: number): Promise<ServerFrame>;
}

export function startServe(c: ServeCase, env: NodeJS.ProcessEnv = {}, timeoutMs = 30_000): ServeRun {
  const child: ChildProcessByStdio<Writable, Readable, Readable> = spawn(process.execPath, [WRAPPER_BIN, "serve"], {
    env: {
      ...process.env,
      TMPDIR: c.tmp,
      PI_SUBAGENTS_PI_BIN: path.join(FAKE_PI_DIR, "pi"),
      FAKE_PI_RECORD: c.record,
      ...env,
    },
    stdio: ["pipe", "pipe", "pipe"],
    detached: true,
  });
  const pid = child.pid ?? -1;
  cleanups.push(() => signalGroup(pid, "SIGKILL"));
  const frames: ServerFrame[] = [];
  let stderr = "";
  let buffer = "";
  const waiters: Array<() => void> = [];
  child.stdout.setEncoding("utf8").on("data", (text: string) => {
    buffer += text;
    for (let at = buffer.indexOf("\n"); at !== -1; at = buffer.indexOf("\n")) {
      frames.push(JSON.parse(buffer.slice(0, at)) as ServerFrame);
      buffer = buffer.slice(at + 1);
    }
    for (const waiter of waiters.splice(0)) waiter();
  });
  child.stderr.setEncoding("utf8").on("data", (text: string) => {
    stderr += text;
  });
  child.stdin.on("error", () => undefined);
  const done = new Promise<{ code: number | null; timedOut: boolean }>((resolve) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      signalGroup(pid, "SIGKILL");
    }, timeoutMs);
    child.once("close", (code) => {
      clearTimeout(timer);
      for (const waiter of waiters.splice(0)) waiter();
      resolve({ code, timedOut });
    });
  });
  const waitFor = (t: ServerFrame["t"], ms = 20_000) =>
    new Promise<ServerFrame>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${t} frame within ${ms} ms: ${JSON.stringify(frames)}`)), ms);
      const check = () => {
        const found = frames.find((frame) => frame.t === t);
        if (found) {
          clearTimeout(timer);
          resolve(found);
        } else waiters.push(check);
      };
      check();
    });
  return {
    pid,
    frames,
    stderr: () => stderr,
    write: (frame) => child.stdin.write(typeof frame === "string" ? frame : encodeFrame(frame)),
    end: () => child.stdin.end(),
    done,
    waitFor,
  };
}

/** hello, start and the blobs of a turn that runs `script` in the fake pi. */
export function turnFrames(
  c: ServeCase,
  options: { task?: string; cwd?: string; bundle?: Buffer; base?: string } = {},
): ClientFrame[] {
  const task = Buffer.from(options.task ?? "do it");
  return [
    { t: "hello", version: SERVE_PROTOCOL_VERSION },
    {
      t: "start",
      runId: "run-1",
      args: ["--mode", "json", "task"],
      env: {},
      cwd: options.cwd ?? "",
      base: options.base ?? c.base,
      blobs: ["bundle", "task"],
      inbox: false,
    },
    ...blobFrames("bundle", options.bundle ?? c.bundle),
    ...blobFrames("task", task),
  ];
}

export const scriptEnv = (steps: object[]): NodeJS.ProcessEnv => ({ FAKE_PI_SCRIPT: JSON.stringify({ steps }) });

export const ANSWER_STEPS: object[] = [
  { agentStart: true },
  { turnStart: true },
  { user: true },
  { assistant: { text: "done", stopReason: "stop" } },
  { turnEnd: true },
  { agentEnd: true },
];
