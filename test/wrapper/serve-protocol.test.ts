/**
 * The runner protocol's far side, `subagent-wrapper serve`, driven directly over stdin and
 * stdout with good and bad frames: a turn goes through (pi's output, its commit as
 * a bundle, exit, the scratch space gone); anything malformed, oversized or out of order ends
 * the run with one `error` frame and exit 1, never a crash or a hang; a closed stdin or a stop
 * leaves no process of the run alive.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { blobFrames, MAX_FRAME_BYTES, SERVE_PROTOCOL_VERSION } from "../../src/contracts/serve-protocol.js";
import { processAlive } from "../../src/lib/process.js";
import {
  ANSWER_STEPS,
  bundleOf,
  cleanupServeCases,
  type ServeRun,
  scriptEnv,
  serveCase,
  startServe,
  turnFrames,
} from "../support/serve-driver.js";

afterEach(cleanupServeCases);

const errorOf = (run: ServeRun): string | undefined => {
  const frame = run.frames.find((f) => f.t === "error");
  return frame?.t === "error" ? frame.message : undefined;
};

async function waitGone(pid: number, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (!processAlive(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return !processAlive(pid);
}

describe("serve: a turn", () => {
  it("answers hello, runs pi in its scratch workspace, sends pi's output, the turn's commit and exit, then removes the scratch", async () => {
    const c = serveCase();
    const steps = [...ANSWER_STEPS];
    steps.splice(3, 0, { writeFile: { path: "made-by-child.txt", text: "child\n" } });
    const run = startServe(c, scriptEnv(steps));
    for (const frame of turnFrames(c, { cwd: "sub", task: "exact task text" })) run.write(frame);
    const exit = await run.waitFor("exit");
    run.end();
    const { code, timedOut } = await run.done;
    expect(timedOut).toBe(false);
    expect(code).toBe(0);
    expect(run.frames[0]).toMatchObject({ t: "hello", version: SERVE_PROTOCOL_VERSION });
    expect(exit).toEqual({ t: "exit", code: 0, signal: null });
    const stdout = run.frames
      .filter((f) => f.t === "stdout")
      .map((f) => Buffer.from((f as { data: string }).data, "base64").toString("utf8"))
      .join("");
    expect(stdout).toContain('"type":"agent_end"');
    const record = JSON.parse(fs.readFileSync(c.record, "utf8")) as { cwd: string; task: string };
    expect(record.task).toBe("exact task text");
    expect(record.cwd.startsWith(c.tmp)).toBe(true);
    expect(path.basename(record.cwd)).toBe("sub");
    const commit = run.frames.find((f) => f.t === "commit");
    expect(commit).toMatchObject({ t: "commit", base: c.base });
    const head = (commit as { head: string }).head;
    // The bundle that came back holds the child's file on top of the base.
    const chunks = run.frames.filter((f) => f.t === "blob" && f.kind === "bundle") as Array<{ data: string }>;
    const bundle = path.join(c.dir, "turn.bundle");
    fs.writeFileSync(bundle, Buffer.concat(chunks.map((f) => Buffer.from(f.data, "base64"))));
    execFileSync("git", ["fetch", "-q", bundle, "HEAD"], { cwd: c.repo });
    const files = execFileSync("git", ["show", "--name-only", "--format=", head], { cwd: c.repo, encoding: "utf8" });
    expect(files.trim()).toBe("sub/made-by-child.txt");
    expect(fs.readdirSync(c.tmp)).toEqual([]);
  });

  it("sends no commit head when the turn changed nothing", async () => {
    const c = serveCase();
    const run = startServe(c, scriptEnv(ANSWER_STEPS));
    for (const frame of turnFrames(c)) run.write(frame);
    const commit = await run.waitFor("commit");
    expect(commit).toEqual({ t: "commit", base: c.base });
    run.end();
    expect((await run.done).code).toBe(0);
  });

  it("a stop frame ends pi (SIGTERM to its group) and the turn still comes back", async () => {
    const c = serveCase();
    const run = startServe(c, scriptEnv([{ agentStart: true }, { sleep: 60_000 }]));
    for (const frame of turnFrames(c)) run.write(frame);
    await run.waitFor("started");
    run.write({ t: "stop", signal: "SIGTERM" });
    const exit = await run.waitFor("exit", 10_000);
    expect(exit).toMatchObject({ t: "exit" });
    expect(run.frames.some((f) => f.t === "commit")).toBe(true);
    run.end();
    expect((await run.done).code).toBe(0);
  });

  it("stdin closed mid-turn: pi and serve are gone within 10 s, the scratch space too", async () => {
    const c = serveCase();
    const run = startServe(c, scriptEnv([{ agentStart: true }, { sleep: 60_000 }]));
    for (const frame of turnFrames(c)) run.write(frame);
    await run.waitFor("started");
    while (!fs.existsSync(c.record)) await new Promise((resolve) => setTimeout(resolve, 50));
    const { pid } = JSON.parse(fs.readFileSync(c.record, "utf8")) as { pid: number };
    run.end();
    const started = Date.now();
    const { timedOut } = await run.done;
    expect(timedOut).toBe(false);
    expect(await waitGone(pid, 10_000 - (Date.now() - started))).toBe(true);
    expect(fs.readdirSync(c.tmp)).toEqual([]);
  });
});

describe("serve: bad input ends the run with one clear error, never a hang", () => {
  const cases: Array<[string, (run: ServeRun, c: ReturnType<typeof serveCase>) => void, RegExp]> = [
    ["bad JSON", (run) => run.write("{not json\n"), /not JSON/],
    ["a frame before hello", (run, c) => run.write(turnFrames(c)[1]!), /expected hello, got start/],
    ["an unknown frame type", (run) => run.write('{"t":"launch"}\n'), /unknown frame type "launch"/],
    ["a malformed frame", (run) => run.write('{"t":"hello","version":"1"}\n'), /malformed hello frame/],
    [
      "another protocol version",
      (run) => run.write({ t: "hello", version: 99 }),
      /protocol version 99 is not supported/,
    ],
    [
      "a truncated frame at the end of the stream",
      (run) => {
        run.write({ t: "hello", version: SERVE_PROTOCOL_VERSION });
        run.write('{"t":"start","runId":');
        run.end();
      },
      /truncated frame/,
    ],
    [
      "a line longer than the bound (refused before it is all read)",
      (run) => run.write(`{"t":"hello","pad":"${"x".repeat(MAX_FRAME_BYTES + 10)}`),
      /frame longer than/,
    ],
    [
      "a start whose cwd leaves the workspace",
      (run, c) => {
        const [hello, start] = turnFrames(c);
        run.write(hello!);
        run.write({ ...(start as object), cwd: "../../etc" } as never);
      },
      /malformed start frame/,
    ],
    [
      "a blob whose end frame gives another size",
      (run, c) => {
        const frames = turnFrames(c);
        run.write(frames[0]!);
        run.write(frames[1]!);
        run.write({ t: "blob_end", kind: "bundle", bytes: 12 });
      },
      /bundle is 0 bytes, its end frame says 12/,
    ],
    [
      "a blob past its bound",
      (run, c) => {
        const [hello, start] = turnFrames(c);
        run.write(hello!);
        run.write({ ...(start as object), blobs: ["bundle", "task", "system_prompt"] } as never);
        const chunk = Buffer.alloc(1024 * 1024, 120).toString("base64");
        for (let i = 0; i < 5; i++) run.write({ t: "blob", kind: "system_prompt", data: chunk });
      },
      /expected a blob|larger than its bound/,
    ],
    [
      "a bundle that does not hold the announced base",
      (run, c) => {
        for (const frame of turnFrames(c, { base: "0".repeat(40) })) run.write(frame);
      },
      /no ref at the announced base/,
    ],
    [
      "garbage after the last blob",
      (run, c) => {
        for (const frame of turnFrames(c)) run.write(frame);
        run.write("garbage\n");
      },
      /not JSON|unexpected/,
    ],
  ];

  it.each(cases)("%s", async (_name, act, message) => {
    const c = serveCase();
    const run = startServe(c, scriptEnv([{ agentStart: true }, { sleep: 60_000 }]), 15_000);
    act(run, c);
    const { code, timedOut } = await run.done;
    expect(timedOut).toBe(false);
    expect(code).toBe(1);
    expect(errorOf(run)).toMatch(message);
    expect(run.frames.filter((f) => f.t === "error")).toHaveLength(1);
    expect(run.stderr()).not.toMatch(/at .*\.js:\d+/); // no stack trace
    expect(fs.readdirSync(c.tmp)).toEqual([]);
  });

  it("a bundle whose tree holds a path escaping the workspace is refused before any checkout", async () => {
    const c = serveCase();
    const git = (...args: string[]) => execFileSync("git", args, { cwd: c.repo, encoding: "utf8" }).trim();
    const blob = execFileSync("git", ["hash-object", "-w", "--stdin"], {
      cwd: c.repo,
      input: "owned\n",
      encoding: "utf8",
    }).trim();
    const inner = execFileSync("git", ["mktree"], {
      cwd: c.repo,
      input: `100644 blob ${blob}\tevil.txt\n`,
      encoding: "utf8",
    }).trim();
    const outer = execFileSync("git", ["mktree"], {
      cwd: c.repo,
      input: `040000 tree ${inner}\t..\n`,
      encoding: "utf8",
    }).trim();
    const base = git("-c", "user.name=t", "-c", "user.email=t@t", "commit-tree", outer, "-m", "evil");
    const run = startServe(c, scriptEnv(ANSWER_STEPS), 15_000);
    for (const frame of turnFrames(c, { bundle: bundleOf(c.repo, base), base })) run.write(frame);
    const { code, timedOut } = await run.done;
    expect(timedOut).toBe(false);
    expect(code).toBe(1);
    expect(errorOf(run)).toMatch(/git fetch failed|outside the workspace/);
    expect(fs.existsSync(c.record)).toBe(false); // pi never started
    expect(fs.existsSync(path.join(c.tmp, "evil.txt"))).toBe(false);
    expect(fs.readdirSync(c.tmp)).toEqual([]);
  });

  it("a message frame is refused when its name would leave the inbox", async () => {
    const c = serveCase();
    const run = startServe(c, scriptEnv([{ agentStart: true }, { sleep: 60_000 }]), 15_000);
    for (const frame of turnFrames(c)) run.write(frame);
    await run.waitFor("started");
    run.write({ t: "message", name: "../../x.json", id: "m1", text: "hi" });
    const { code, timedOut } = await run.done;
    expect(timedOut).toBe(false);
    expect(code).toBe(1);
    expect(errorOf(run)).toMatch(/malformed message frame/);
  });

  it("blob frames split a file in bounded chunks and say its size", () => {
    const frames = blobFrames("bundle", Buffer.alloc(2.5 * 1024 * 1024));
    expect(frames.map((f) => f.t)).toEqual(["blob", "blob", "blob", "blob_end"]);
    expect(frames.at(-1)).toEqual({ t: "blob_end", kind: "bundle", bytes: 2.5 * 1024 * 1024 });
  });
});
