/** tail's EventLineFollower: each appended whole line once, raw and parsed, numbered as in the file. */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EventLineFollower } from "../../../src/cli/tail.js";

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "psa-follower-"));
  file = path.join(dir, "events.jsonl");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("EventLineFollower", () => {
  it("returns nothing until the file exists, then each appended whole line once, numbered", async () => {
    const follower = new EventLineFollower(file);
    expect(await follower.read()).toEqual({ raw: [], lines: [] });
    writeFileSync(file, '{"seq":1}\n{"seq":2');
    expect(await follower.read()).toEqual({ raw: ['{"seq":1}'], lines: [{ line: 1, record: { seq: 1 } }] });
    appendFileSync(file, "}\n\nnot json\n");
    expect(await follower.read()).toEqual({
      raw: ['{"seq":2}', "not json"],
      lines: [
        { line: 2, record: { seq: 2 } },
        { line: 4, error: expect.stringMatching(/^not JSON/), text: "not json" },
      ],
    });
    expect(await follower.read()).toEqual({ raw: [], lines: [] });
  });

  it("keeps a multi-byte character split between two reads intact", async () => {
    const follower = new EventLineFollower(file);
    const line = Buffer.from('{"text":"π ≈ 3.14 — ünïcödé"}\n', "utf8");
    const cut = line.indexOf(Buffer.from("≈")) + 1; // inside the 3-byte character
    writeFileSync(file, line.subarray(0, cut));
    expect((await follower.read()).lines).toEqual([]);
    appendFileSync(file, line.subarray(cut));
    expect((await follower.read()).lines).toEqual([{ line: 1, record: { text: "π ≈ 3.14 — ünïcödé" } }]);
  });

  it("starts over when the file is replaced by a shorter one", async () => {
    const follower = new EventLineFollower(file);
    writeFileSync(file, '{"seq":1}\n{"seq":2}\n');
    await follower.read();
    writeFileSync(file, '{"seq":9}\n');
    expect((await follower.read()).lines).toEqual([{ line: 1, record: { seq: 9 } }]);
  });
});
