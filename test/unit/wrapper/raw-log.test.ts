import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ENV } from "../../../src/contracts/env.js";
import {
  ArtifactFile,
  DEFAULT_LOG_MAX_BYTES,
  logCapsFromEnv,
  RawLog,
  UNCAPPED,
} from "../../../src/wrapper/artifacts.js";

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function logWith(caps: {
  bulkyBytes: number;
  maxBytes: number;
}): Promise<{ log: RawLog; text: () => Promise<string> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "psa-raw-log-"));
  dirs.push(dir);
  const file = await ArtifactFile.open("stdout log", path.join(dir, "stdout.log"));
  const log = new RawLog(file, caps);
  return {
    log,
    text: async () => {
      await file.close();
      return readFile(path.join(dir, "stdout.log"), "utf8");
    },
  };
}

const line = (text: string) => Buffer.from(`${text}\n`);

describe("logCapsFromEnv", () => {
  it("defaults to 8 MiB, bulky lines to an eighth of it", () => {
    expect(logCapsFromEnv({})).toEqual({
      caps: { maxBytes: DEFAULT_LOG_MAX_BYTES, bulkyBytes: DEFAULT_LOG_MAX_BYTES / 8 },
    });
    expect(DEFAULT_LOG_MAX_BYTES).toBe(8 * 1024 * 1024);
  });

  it("takes a byte count, and 0 or unlimited lifts the cap", () => {
    expect(logCapsFromEnv({ [ENV.logMaxBytes]: "800" }).caps).toEqual({ maxBytes: 800, bulkyBytes: 100 });
    expect(logCapsFromEnv({ [ENV.logMaxBytes]: "0" }).caps).toBe(UNCAPPED);
    expect(logCapsFromEnv({ [ENV.logMaxBytes]: " Unlimited " }).caps).toBe(UNCAPPED);
  });

  it("names a bad value and keeps the default", () => {
    const { caps, error } = logCapsFromEnv({ [ENV.logMaxBytes]: "lots" });
    expect(caps.maxBytes).toBe(DEFAULT_LOG_MAX_BYTES);
    expect(error).toBe(`${ENV.logMaxBytes}=lots is not a byte count, 0 or "unlimited"; using ${DEFAULT_LOG_MAX_BYTES}`);
  });
});

describe("RawLog", () => {
  it("drops bulky lines past their cap after one marker, and keeps every other line", async () => {
    const { log, text } = await logWith({ bulkyBytes: 20, maxBytes: 10_000 });
    log.write(line('{"type":"message_update","n":1}'), true);
    log.write(line("not json"), false);
    log.write(line('{"type":"message_update","n":2}'), true);
    log.write(line('{"type":"message_update","n":3}'), true);
    log.write(line('{"type":"message_end"}'), false);
    const out = await text();
    expect(out).toContain('"n":1');
    expect(out).not.toContain('"n":2');
    expect(out).not.toContain('"n":3');
    expect(out).toContain("not json\n");
    expect(out).toContain('{"type":"message_end"}\n');
    expect(out.match(/raw log reached 20 bytes; message deltas and snapshots are omitted from here on/g)).toHaveLength(
      1,
    );
    expect(out).toContain(ENV.logMaxBytes);
  });

  it("stops at the hard cap with one marker line, cutting the line that crosses it", async () => {
    const { log, text } = await logWith({ bulkyBytes: 50, maxBytes: 50 });
    for (let i = 0; i < 10; i++) log.write(line(`garbage line ${i}`), false);
    const out = await text();
    const marker = `\n[subagent-wrapper: raw log reached its cap of 50 bytes; the rest is omitted (${ENV.logMaxBytes}=unlimited lifts the cap)]\n`;
    expect(out.endsWith(marker)).toBe(true);
    expect(out.length - marker.length).toBe(50);
    expect(out.startsWith("garbage line 0\ngarbage line 1\ngarbage line 2\ngarb")).toBe(true);
    expect(out.match(/raw log reached/g)).toHaveLength(1);
  });

  it("keeps everything when uncapped", async () => {
    const { log, text } = await logWith(UNCAPPED);
    const big = "x".repeat(100_000);
    log.write(line(big), true);
    log.write(line(big), false);
    expect(await text()).toBe(`${big}\n${big}\n`);
  });
});
