import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ENV } from "../../../src/contracts/env.js";
import { inboxFileName } from "../../../src/contracts/inbox.js";
import { cwdStartedPath } from "../../../src/contracts/meta.js";
import { InboxRelay } from "../../../src/wrapper/remote/inbox-relay.js";
import {
  CHECKOUT_AFTER_STOP_MS,
  checkoutAfterStopMs,
  checkoutDone,
  letCheckoutGo,
  unsentInboxMessages,
} from "../../../src/wrapper/remote/local-side.js";
import { FakeClock } from "../../support/fake-clock.js";

const dirs: string[] = [];
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pst-local-side-"));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe("unsentInboxMessages", () => {
  it("returns each complete message once, in send order, and leaves a file still being written for later", () => {
    const dir = tempDir();
    const write = (seq: number, body: string) => fs.writeFileSync(path.join(dir, inboxFileName(seq)), body);
    write(2, JSON.stringify({ id: "b", text: "second" }));
    write(1, JSON.stringify({ id: "a", text: "first" }));
    write(3, '{"id": "c", "te');
    fs.writeFileSync(path.join(dir, `.${inboxFileName(4)}.tmp`), JSON.stringify({ id: "d", text: "temp" }));
    const sent = new Set<string>();
    expect(unsentInboxMessages(dir, sent).map((m) => [m.name, m.id, m.text])).toEqual([
      [inboxFileName(1), "a", "first"],
      [inboxFileName(2), "b", "second"],
    ]);
    expect(unsentInboxMessages(dir, sent)).toEqual([]);
    write(3, JSON.stringify({ id: "c", text: "third" }));
    expect(unsentInboxMessages(dir, sent).map((m) => m.id)).toEqual(["c"]);
  });

  it("passes over a FIFO in the inbox instead of waiting on it", () => {
    const dir = tempDir();
    execFileSync("mkfifo", [path.join(dir, inboxFileName(1))]);
    fs.writeFileSync(path.join(dir, inboxFileName(2)), JSON.stringify({ id: "b", text: "second" }));
    expect(unsentInboxMessages(dir, new Set()).map((m) => m.id)).toEqual(["b"]);
  });

  it("has none for a folder that does not exist", () => {
    expect(unsentInboxMessages(path.join(tempDir(), "missing"), new Set())).toEqual([]);
  });
});

describe("the inbox relay", () => {
  it("sends what is there at once, then each new message on the next look, once, until stopped", async () => {
    const dir = tempDir();
    const write = (seq: number, id: string) =>
      fs.writeFileSync(path.join(dir, inboxFileName(seq)), JSON.stringify({ id, text: `text ${id}` }));
    const clock = new FakeClock();
    const sent: string[] = [];
    const relay = new InboxRelay(dir, (frame) => sent.push(frame.id), clock);
    write(1, "a");
    relay.start();
    expect(sent).toEqual(["a"]);
    write(2, "b");
    expect(sent).toEqual(["a"]);
    await clock.advance(100);
    expect(sent).toEqual(["a", "b"]);
    relay.stop();
    write(3, "c");
    await clock.advance(1000);
    expect(sent).toEqual(["a", "b"]);
    expect(clock.pending()).toEqual([]);
  });
});

describe("checkout hand-over", () => {
  it("letCheckoutGo writes the checkout's started file, and says nothing when its folder is gone", () => {
    const ready = path.join(tempDir(), "cwd-ready");
    letCheckoutGo(ready);
    expect(fs.existsSync(cwdStartedPath(ready))).toBe(true);
    expect(() => letCheckoutGo(path.join(tempDir(), "gone", "cwd-ready"))).not.toThrow();
  });

  it("checkoutDone resolves once the file says ready and throws what any other word says", async () => {
    const ready = path.join(tempDir(), "cwd-ready");
    const clock = new FakeClock();
    let done = false;
    const waiting = checkoutDone(ready, () => false, 200, clock).then(() => {
      done = true;
    });
    await clock.advance(500);
    expect(done).toBe(false);
    fs.writeFileSync(ready, "ready\n");
    await clock.advance(50);
    await waiting;
    expect(done).toBe(true);
    const failed = path.join(tempDir(), "cwd-ready");
    fs.writeFileSync(failed, "checkout failed: disk full");
    await expect(checkoutDone(failed, () => false)).rejects.toThrow(
      "the working directory is not ready: checkout failed: disk full",
    );
  });

  it("checkoutDone gives up on a checkout that never says ready once the turn was stopped that long ago", async () => {
    const never = path.join(tempDir(), "cwd-ready");
    const clock = new FakeClock();
    let stopped = false;
    let done = false;
    const waiting = checkoutDone(never, () => stopped, 200, clock).then(() => {
      done = true;
    });
    await clock.advance(1000);
    expect(done).toBe(false);
    stopped = true;
    await clock.advance(200);
    expect(done).toBe(false);
    await clock.advance(100);
    await waiting;
    expect(done).toBe(true);
  });

  it("the wait after a stop is 30 s unless a test sets a positive whole number of ms", () => {
    expect(checkoutAfterStopMs({})).toBe(CHECKOUT_AFTER_STOP_MS);
    expect(CHECKOUT_AFTER_STOP_MS).toBe(30_000);
    expect(checkoutAfterStopMs({ [ENV.checkoutAfterStopMs]: "2500" })).toBe(2500);
    for (const bad of ["", "0", "-5", "1.5", "soon"]) {
      expect(checkoutAfterStopMs({ [ENV.checkoutAfterStopMs]: bad })).toBe(CHECKOUT_AFTER_STOP_MS);
    }
  });
});
