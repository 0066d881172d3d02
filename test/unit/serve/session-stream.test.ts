/**
 * The far side's session stream, woken by hand (tick) on a real file: whole lines from the
 * end of the session the turn started with, a line still being written waits, a rewrite of the
 * file stops the stream for good; and the protocol's checks of the frames that carry it.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  parseClientFrame,
  parseServerFrame,
  SESSION_APPEND_BYTES,
  type SessionAppend,
} from "../../../src/contracts/serve-protocol.js";
import { SessionStream } from "../../../src/serve/session-stream.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function streamCase(start: string, ready: () => boolean = () => true) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "psa-session-stream-"));
  dirs.push(dir);
  const file = path.join(dir, "session.jsonl");
  if (start !== "") fs.writeFileSync(file, start);
  const frames: SessionAppend[] = [];
  const stream = new SessionStream(file, Buffer.from(start), (frame) => frames.push(frame), ready);
  const text = () => frames.map((f) => Buffer.from(f.data, "base64").toString("utf8")).join("");
  return { file, frames, stream, text };
}

describe("SessionStream", () => {
  it("sends nothing before pi writes a new session, then its whole lines; a line still being written waits", () => {
    const { file, frames, stream, text } = streamCase("");
    expect(stream.tick()).toBe(0);
    fs.writeFileSync(file, '{"type":"session"}\n{"type":"mess');
    stream.tick();
    expect(text()).toBe('{"type":"session"}\n');
    fs.appendFileSync(file, 'age"}\n');
    stream.tick();
    expect(text()).toBe('{"type":"session"}\n{"type":"message"}\n');
    expect(frames.map((f) => f.at)).toEqual([0, 19]);
  });

  it("counts from the end of the session the turn started with", () => {
    const start = '{"type":"session","cwd":"/far"}\n{"id":"m0"}\n';
    const { file, frames, stream } = streamCase(start);
    fs.appendFileSync(file, '{"id":"m1"}\n');
    stream.tick();
    expect(frames).toEqual([{ t: "session_append", at: 0, data: Buffer.from('{"id":"m1"}\n').toString("base64") }]);
  });

  it("sends nothing while the output is full; the next wake catches up", () => {
    let ready = false;
    const { file, frames, stream, text } = streamCase("", () => ready);
    fs.writeFileSync(file, '{"id":"m1"}\n');
    expect(stream.tick()).toBe(0);
    expect(frames).toEqual([]);
    ready = true;
    stream.tick();
    expect(text()).toBe('{"id":"m1"}\n');
  });

  it("a rewritten file stops the stream for good (the end-of-turn blob carries it)", () => {
    const start = '{"type":"session","cwd":"/far"}\n';
    const { file, frames, stream } = streamCase(start);
    fs.appendFileSync(file, '{"id":"m1"}\n');
    stream.tick();
    fs.writeFileSync(file, `{"type":"session","cwd":"/elsewhere"}\n{"id":"m1"}\n{"id":"m2"}\n`);
    expect(stream.tick()).toBe(0);
    fs.appendFileSync(file, '{"id":"m3"}\n');
    expect(stream.tick()).toBe(0);
    expect(frames).toHaveLength(1);
  });
});

describe("the frames of the session stream", () => {
  it("a session_append within its bound is taken; a larger one, a negative offset or bad base64 is refused", () => {
    const data = (bytes: number) => Buffer.alloc(bytes, 120).toString("base64");
    const frame = (at: unknown, d: string) => JSON.stringify({ t: "session_append", at, data: d });
    expect(parseServerFrame(frame(0, data(SESSION_APPEND_BYTES)))).toMatchObject({ t: "session_append" });
    expect(parseServerFrame(frame(0, data(SESSION_APPEND_BYTES + 3)))).toBe("malformed session_append frame");
    expect(parseServerFrame(frame(-1, data(10)))).toBe("malformed session_append frame");
    expect(parseServerFrame(frame(0, "not base64!"))).toBe("malformed session_append frame");
    // Only the far side sends it.
    expect(parseClientFrame(frame(0, data(10)))).toMatch(/unknown frame type/);
  });

  it("session_stream in either hello is a flag", () => {
    expect(parseClientFrame('{"t":"hello","version":2,"session_stream":true}')).toMatchObject({ session_stream: true });
    expect(parseClientFrame('{"t":"hello","version":2,"session_stream":"yes"}')).toBe("malformed hello frame");
    expect(parseServerFrame('{"t":"hello","version":2,"server":"s","session_stream":1}')).toBe("malformed hello frame");
  });
});
