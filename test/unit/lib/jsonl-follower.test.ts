/** lib's JsonlFollower: only appended bytes, whole lines, UTF-8 intact across reads, a shrunk or replaced file started over. */
import { appendFile, mkdtemp, rename, rm, unlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { JsonlFollower } from "../../../src/lib/jsonl-follower.js";

let dir: string;
let file: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "psa-jsonl-"));
  file = path.join(dir, "events.jsonl");
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const texts = (read: { lines: Array<{ text: string }> }) => read.lines.map((line) => line.text);

describe("JsonlFollower", () => {
  it("reads nothing while the file does not exist", async () => {
    expect(await new JsonlFollower(file).read()).toEqual({ lines: [], restarted: false });
  });

  it("returns each whole line once, numbered as in the file (blank lines counted, not returned); a partial last line waits", async () => {
    const follower = new JsonlFollower(file);
    await writeFile(file, '{"a":1}\n\n{"b"');
    expect(await follower.read()).toEqual({ lines: [{ line: 1, text: '{"a":1}' }], restarted: false });
    expect(await follower.read()).toEqual({ lines: [], restarted: false });
    await appendFile(file, ":2}\n  \nnot json\n");
    expect(await follower.read()).toEqual({
      lines: [
        { line: 3, text: '{"b":2}' },
        { line: 5, text: "not json" },
      ],
      restarted: false,
    });
  });

  it("keeps a multi-byte character split between two reads intact", async () => {
    const follower = new JsonlFollower(file);
    const bytes = Buffer.from('{"text":"π ≈ 3.14 — 🙂"}\n', "utf8");
    for (const cut of [bytes.indexOf(Buffer.from("≈")) + 1, bytes.indexOf(Buffer.from("🙂")) + 3]) {
      await writeFile(file, bytes.subarray(0, cut));
      const fresh = new JsonlFollower(file);
      expect(texts(await fresh.read())).toEqual([]);
      await appendFile(file, bytes.subarray(cut));
      expect(texts(await fresh.read())).toEqual(['{"text":"π ≈ 3.14 — 🙂"}']);
    }
    await writeFile(file, bytes);
    expect(texts(await follower.read())).toEqual(['{"text":"π ≈ 3.14 — 🙂"}']);
  });

  it("with maxReadBytes, reads a large file a slice at a time and still returns every line once", async () => {
    const lines = Array.from({ length: 40 }, (_, i) => JSON.stringify({ i, pad: "é".repeat(i) }));
    await writeFile(file, `${lines.join("\n")}\n`);
    const follower = new JsonlFollower(file, 97);
    const seen: string[] = [];
    for (let polls = 0; polls < 200 && seen.length < lines.length; polls++) seen.push(...texts(await follower.read()));
    expect(seen).toEqual(lines);
  });

  it("starts over when the file shrinks (truncated and rewritten)", async () => {
    const follower = new JsonlFollower(file);
    await writeFile(file, '{"seq":1}\n{"seq":2}\n');
    await follower.read();
    await writeFile(file, '{"seq":9}\n');
    expect(await follower.read()).toEqual({ lines: [{ line: 1, text: '{"seq":9}' }], restarted: true });
    expect(await follower.read()).toEqual({ lines: [], restarted: false });
  });

  it("starts over when the file is replaced by another one, even a longer one", async () => {
    const follower = new JsonlFollower(file);
    await writeFile(file, '{"seq":1}\n{"par');
    await follower.read();
    const next = path.join(dir, "next.jsonl");
    await writeFile(next, '{"seq":10}\n{"seq":11}\n{"seq":12}\n');
    await rename(next, file);
    expect(await follower.read()).toEqual({
      lines: [
        { line: 1, text: '{"seq":10}' },
        { line: 2, text: '{"seq":11}' },
        { line: 3, text: '{"seq":12}' },
      ],
      restarted: true,
    });
  });

  it("a file that goes away reads as nothing, and its successor from the start", async () => {
    const follower = new JsonlFollower(file);
    await writeFile(file, '{"seq":1}\n');
    await follower.read();
    await unlink(file);
    expect(await follower.read()).toEqual({ lines: [], restarted: false });
    await writeFile(file, '{"seq":1}\n{"seq":2}\n');
    expect(await follower.read()).toEqual({
      lines: [
        { line: 1, text: '{"seq":1}' },
        { line: 2, text: '{"seq":2}' },
      ],
      restarted: true,
    });
  });
});
