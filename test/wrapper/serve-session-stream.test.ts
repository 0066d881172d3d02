/**
 * The session stream (protocol 2 with `session_stream`): serve, driven directly,
 * sends what the fake pi appends to its session file while the turn runs, in order and in
 * bounded pieces, counted from the session the turn started with; a peer that does not ask
 * gets only the whole session at the end, as before. And the local side's copy
 * (wrapper/remote/session-copy.ts) writes whole lines in order and stops at a gap.
 */
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  ARG_TOKENS,
  blobFrames,
  type ClientFrame,
  SERVE_PROTOCOL_VERSION,
  SESSION_APPEND_BYTES,
  type ServerFrame,
  type SessionAppend,
} from "../../src/contracts/serve-protocol.js";
import { SessionCopy } from "../../src/wrapper/remote/session-copy.js";
import { cleanupServeCases, type ServeCase, scriptEnv, serveCase, startServe } from "../support/serve-driver.js";

afterEach(cleanupServeCases);

const HEADER = { type: "session", version: 3, id: "s-1", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/local/agent" };
const START_SESSION = `${JSON.stringify(HEADER)}\n${JSON.stringify({ type: "message", id: "m0" })}\n`;

/** hello (with or without the stream), start naming pi's session, and its blobs (the session the turn starts with). */
function sessionTurn(c: ServeCase, hello: ClientFrame, session = START_SESSION): ClientFrame[] {
  return [
    hello,
    {
      t: "start",
      runId: "run-1",
      args: ["--mode", "json", "--session", ARG_TOKENS.session, "task"],
      env: {},
      cwd: "",
      base: c.base,
      blobs: ["bundle", "task", "session"],
      inbox: false,
    },
    ...blobFrames("bundle", c.bundle),
    ...blobFrames("task", Buffer.from("do it")),
    ...blobFrames("session", Buffer.from(session)),
  ];
}

const appends = (frames: ServerFrame[]): SessionAppend[] =>
  frames.filter((f): f is SessionAppend => f.t === "session_append");
const bytesOf = (frames: SessionAppend[]): Buffer => Buffer.concat(frames.map((f) => Buffer.from(f.data, "base64")));
const sessionBlob = (frames: ServerFrame[]): string =>
  Buffer.concat(
    frames
      .filter((f) => f.t === "blob" && f.kind === "session")
      .map((f) => Buffer.from((f as { data: string }).data, "base64")),
  ).toString("utf8");

const line = (id: string) => ({ type: "message", id, message: { role: "assistant", content: id } });

describe("serve: the session stream", () => {
  it("sends the lines pi appends while it runs, in order, counted from the session the turn started with", async () => {
    const c = serveCase();
    const steps = [
      { sessionAppend: [line("m1")] },
      { sleep: 800 },
      { sessionAppend: [line("m2"), line("m3")] },
      { sleep: 800 },
      { agentStart: true },
      { agentEnd: true },
    ];
    const run = startServe(c, scriptEnv(steps));
    for (const frame of sessionTurn(c, { t: "hello", version: SERVE_PROTOCOL_VERSION, session_stream: true }))
      run.write(frame);
    await run.waitFor("exit");
    run.end();
    expect((await run.done).code).toBe(0);
    expect(run.frames[0]).toMatchObject({ t: "hello", session_stream: true });
    const pieces = appends(run.frames);
    const streamed = [line("m1"), line("m2"), line("m3")].map((l) => `${JSON.stringify(l)}\n`).join("");
    expect(bytesOf(pieces).toString("utf8")).toBe(streamed);
    // At least two pieces (pi wrote twice, 800 ms apart), each starting where the one before ended.
    expect(pieces.length).toBeGreaterThanOrEqual(2);
    let at = 0;
    for (const piece of pieces) {
      expect(piece.at).toBe(at);
      at += Buffer.from(piece.data, "base64").length;
    }
    // Every piece came before the end of the turn; the whole session still comes, and ends with them.
    const firstBlob = run.frames.findIndex((f) => f.t === "blob" && f.kind === "session");
    expect(run.frames.indexOf(pieces.at(-1)!)).toBeLessThan(firstBlob);
    const whole = sessionBlob(run.frames);
    expect(whole.endsWith(`\n${streamed}`)).toBe(true);
    expect(JSON.parse(whole.split("\n")[0]!).cwd).not.toBe("/local/agent");
  });

  it("a line longer than a frame comes in bounded pieces, in order, whole once put together", async () => {
    const c = serveCase();
    const big = { type: "message", id: "big", text: "x".repeat(SESSION_APPEND_BYTES * 2 + 1000) };
    const steps = [{ sessionAppend: [line("m1"), big, line("m2")] }, { sleep: 800 }, { agentEnd: true }];
    // Too long for the environment: the scenario in a file.
    const scenario = path.join(c.dir, "big.json");
    fs.writeFileSync(scenario, JSON.stringify({ steps }));
    const run = startServe(c, { FAKE_PI_SCENARIO: scenario });
    for (const frame of sessionTurn(c, { t: "hello", version: SERVE_PROTOCOL_VERSION, session_stream: true }))
      run.write(frame);
    await run.waitFor("exit");
    run.end();
    await run.done;
    const pieces = appends(run.frames);
    expect(pieces.length).toBeGreaterThanOrEqual(3);
    for (const piece of pieces)
      expect(Buffer.from(piece.data, "base64").length).toBeLessThanOrEqual(SESSION_APPEND_BYTES);
    expect(bytesOf(pieces).toString("utf8")).toBe(
      [line("m1"), big, line("m2")].map((l) => `${JSON.stringify(l)}\n`).join(""),
    );
  });

  it("a peer that does not ask (version 2 without the flag, version 1) gets no pieces, only the whole session at the end", async () => {
    for (const hello of [
      { t: "hello", version: SERVE_PROTOCOL_VERSION },
      { t: "hello", version: 1 },
    ] as ClientFrame[]) {
      const c = serveCase();
      const run = startServe(c, scriptEnv([{ sessionAppend: [line("m1")] }, { sleep: 800 }, { agentEnd: true }]));
      for (const frame of sessionTurn(c, hello)) run.write(frame);
      await run.waitFor("exit");
      run.end();
      expect((await run.done).code).toBe(0);
      expect(run.frames[0]).not.toHaveProperty("session_stream");
      expect(appends(run.frames)).toEqual([]);
      expect(sessionBlob(run.frames).endsWith(`${JSON.stringify(line("m1"))}\n`)).toBe(true);
    }
  });
});

describe("the local copy of a streamed session", () => {
  const copyCase = () => {
    const c = serveCase();
    const file = path.join(c.dir, "session.jsonl");
    fs.writeFileSync(file, START_SESSION);
    return { file, copy: new SessionCopy(file, "/local/agent") };
  };
  const piece = (at: number, text: string): SessionAppend => ({
    t: "session_append",
    at,
    data: Buffer.from(text).toString("base64"),
  });

  it("appends whole lines in order; a line in several pieces is written once its end came", () => {
    const { file, copy } = copyCase();
    copy.take(piece(0, "one\ntw"));
    expect(fs.readFileSync(file, "utf8")).toBe(`${START_SESSION}one\n`);
    copy.take(piece(6, "o-long"));
    expect(fs.readFileSync(file, "utf8")).toBe(`${START_SESSION}one\n`);
    copy.take(piece(12, "\nthree\n"));
    expect(fs.readFileSync(file, "utf8")).toBe(`${START_SESSION}one\ntwo-long\nthree\n`);
    expect(copy.problem).toBeUndefined();
  });

  it("a new session's header names the local folder; a follow-up's header stays as it was", () => {
    const c = serveCase();
    const fresh = path.join(c.dir, "fresh.jsonl");
    const copy = new SessionCopy(fresh, "/local/agent");
    copy.take(piece(0, `${JSON.stringify({ ...HEADER, cwd: "/far/scratch" })}\n{"id":"m1"}\n`));
    expect(fs.readFileSync(fresh, "utf8")).toBe(START_SESSION.split("\n")[0] + '\n{"id":"m1"}\n');
    const { file, copy: followUp } = copyCase();
    followUp.take(piece(0, `${JSON.stringify({ ...HEADER, cwd: "/far/scratch" })}\n`));
    expect(fs.readFileSync(file, "utf8").split("\n")[2]).toContain("/far/scratch");
  });

  it("a gap stops the copy: what was written stays, nothing after it is written", () => {
    const { file, copy } = copyCase();
    copy.take(piece(0, "one\n"));
    copy.take(piece(10, "lost\n"));
    copy.take(piece(4, "two\n"));
    expect(fs.readFileSync(file, "utf8")).toBe(`${START_SESSION}one\n`);
    expect(copy.problem).toMatch(/at 10, expected 4/);
  });
});
