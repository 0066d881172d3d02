/** The CLI's and /agents' synchronous file reads: a tail, a whole file, never blocked by a FIFO. */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readFileTail } from "../../../src/lib/file-tail.js";
import { readRegularFileSync } from "../../../src/lib/regular-file.js";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "file-tail-"));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("readFileTail", () => {
  it("gives the last maxBytes of a file, all of a shorter one, none of an empty or missing one", () => {
    const file = path.join(dir, "log");
    fs.writeFileSync(file, "first line\nlast line\n");
    expect(readFileTail(file, 10)).toBe("last line\n");
    expect(readFileTail(file, 1000)).toBe("first line\nlast line\n");
    fs.writeFileSync(file, "");
    expect(readFileTail(file, 10)).toBeUndefined();
    expect(readFileTail(path.join(dir, "missing"), 10)).toBeUndefined();
  });

  it("returns at once for a FIFO or a folder where a file belongs", () => {
    const fifo = path.join(dir, "fifo");
    execFileSync("mkfifo", [fifo]);
    expect(readFileTail(fifo, 10)).toBeUndefined();
    expect(readFileTail(dir, 10)).toBeUndefined();
  });
});

describe("readRegularFileSync", () => {
  it("reads a file, says absent for a missing one and refuses a FIFO without blocking", () => {
    const file = path.join(dir, "a.json");
    fs.writeFileSync(file, "{}");
    expect(readRegularFileSync(file)).toEqual({ text: "{}" });
    expect(readRegularFileSync(path.join(dir, "nope"))).toEqual({ absent: true });
    const fifo = path.join(dir, "fifo");
    execFileSync("mkfifo", [fifo]);
    expect(readRegularFileSync(fifo)).toEqual({ problem: "is not a regular file" });
  });
});
