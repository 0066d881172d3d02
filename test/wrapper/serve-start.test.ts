/**
 * How `subagent-wrapper serve` starts (bin/subagent-wrapper): a bare `serve` skips the full
 * CLI (commander) and answers exactly as the CLI's serve does; a file named `serve` in the
 * cwd sends it through the CLI, which says how to run such a meta file and serves all the same.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { encodeFrame, SERVE_PROTOCOL_VERSION } from "../../src/contracts/serve-protocol.js";
import { packageVersion } from "../../src/lib/package-info.js";
import { WRAPPER_BIN } from "../support/wrapper-harness.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** serve in `cwd`, given a hello and then the end of its stdin. */
function serveHello(cwd: string) {
  const run = spawnSync(process.execPath, [WRAPPER_BIN, "serve"], {
    cwd,
    input: encodeFrame({ t: "hello", version: SERVE_PROTOCOL_VERSION }),
    encoding: "utf8",
    env: { ...process.env, TMPDIR: cwd },
    timeout: 20_000,
  });
  return {
    code: run.status,
    frames: run.stdout
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line)),
    stderr: run.stderr,
  };
}

describe("subagent-wrapper serve: the start", () => {
  it("a bare serve answers hello with the package's name and version, and ends when stdin ends before a start", () => {
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), "psa-serve-start-"));
    dirs.push(cwd);
    const run = serveHello(cwd);
    // Its other fields (what it keeps, its bundle bound) are the protocol tests' concern.
    expect(run.frames[0]).toMatchObject({
      t: "hello",
      version: SERVE_PROTOCOL_VERSION,
      server: `subagent-wrapper ${packageVersion()}`,
    });
    expect(run.stderr).toBe("");
    expect(run.code).not.toBeNull();
  });

  it("with a file named serve in the cwd: the CLI's note on stderr, and the same hello", () => {
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), "psa-serve-start-"));
    dirs.push(cwd);
    const bare = serveHello(cwd);
    fs.writeFileSync(path.join(cwd, "serve"), "{}\n");
    const run = serveHello(cwd);
    expect(run.stderr).toContain(
      'subagent-wrapper: note: "serve" is the serve command; to run the meta file ./serve, use: subagent-wrapper run serve',
    );
    expect(run.frames).toEqual(bare.frames);
    expect(run.code).toBe(bare.code);
  });
});
