/**
 * result.json on a failing disk, with the ordinary write replaced by one that fails the way a
 * full disk does (ENOSPC): the result goes into the space reserved for it before the child
 * started. The same on a real full tmpfs is in test/wrapper/paths.test.ts.
 */
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ResultV1 } from "../../../src/contracts/result.js";
import { emptyUsage } from "../../../src/contracts/usage.js";
import { RESULT_RESERVE_BYTES, ResultReserve, resultWithin, writeResult } from "../../../src/wrapper/artifacts.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "psa-reserve-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const result = (finalText = "the report"): ResultV1 => ({
  version: 1,
  runId: "r",
  status: "completed",
  exitCode: 0,
  finalText,
  usage: emptyUsage(),
  turns: 1,
  toolCalls: 0,
  startedAt: "2030-01-01T00:00:00.000Z",
  endedAt: "2030-01-01T00:00:01.000Z",
  durationMs: 1000,
  childExitCode: 0,
  childSignal: null,
  forcedExit: false,
});

const diskFull = async (): Promise<void> => {
  throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
};

describe("the result.json reserve", () => {
  it(`takes ${RESULT_RESERVE_BYTES} bytes beside result.json, named for this wrapper`, async () => {
    const resultPath = path.join(dir, "result.json");
    const reserve = await ResultReserve.create(resultPath);
    expect(reserve.file).toBe(path.join(dir, `.result.json.${process.pid}.reserve`));
    expect((await stat(reserve.file)).size).toBe(RESULT_RESERVE_BYTES);
    await reserve.release();
    expect(await readdir(dir)).toEqual([]);
  });

  it("an ordinary write gives the space back", async () => {
    const resultPath = path.join(dir, "result.json");
    const reserve = await ResultReserve.create(resultPath);
    const { written, fromReserve } = await writeResult(resultPath, result(), reserve);
    expect(fromReserve).toBe(false);
    expect(written).toEqual(result());
    expect(await readdir(dir)).toEqual(["result.json"]);
  });

  it("a write that fails with ENOSPC lands in the reserve: result.json exists, whole, and says why", async () => {
    const resultPath = path.join(dir, "result.json");
    const reserve = await ResultReserve.create(resultPath);
    const { written, fromReserve } = await writeResult(resultPath, result(), reserve, diskFull);
    expect(fromReserve).toBe(true);
    const onDisk = JSON.parse(await readFile(resultPath, "utf8")) as ResultV1;
    expect(onDisk).toEqual(written);
    expect(onDisk).toMatchObject({ status: "completed", finalText: "the report" });
    expect(onDisk.errorMessage).toBe(
      "result.json was written into the space reserved for it (ENOSPC: no space left on device, write)",
    );
    expect(await readdir(dir)).toEqual(["result.json"]);
  });

  it("a report larger than the reserve is cut to fit, and the result says so", async () => {
    const resultPath = path.join(dir, "result.json");
    const reserve = await ResultReserve.create(resultPath, 4096);
    const long = "ü".repeat(10_000);
    const { written } = await writeResult(resultPath, result(long), reserve, diskFull);
    const text = await readFile(resultPath, "utf8");
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(4096);
    expect(JSON.parse(text)).toEqual(written);
    expect(long.startsWith(written.finalText)).toBe(true);
    expect(written.finalText.length).toBeGreaterThan(1000);
    expect(written.errorMessage).toMatch(
      new RegExp(
        `reserved for it \\(ENOSPC.*\\); finalText cut from 10000 to ${written.finalText.length} characters to fit the space reserved for result\\.json$`,
      ),
    );
  });

  it("when the reserve fails too, the ordinary write's error is thrown and the reserve is removed", async () => {
    const resultPath = path.join(dir, "result.json");
    const reserve = await ResultReserve.create(resultPath);
    await rm(reserve.file);
    await expect(writeResult(resultPath, result(), reserve, diskFull)).rejects.toThrow(/ENOSPC/);
    expect(await readdir(dir)).toEqual([]);
  });

  it("without a reserve, the failure is the caller's", async () => {
    await expect(writeResult(path.join(dir, "result.json"), result(), undefined, diskFull)).rejects.toThrow(/ENOSPC/);
  });

  it("resultWithin leaves a result that fits unchanged", () => {
    expect(resultWithin(result(), RESULT_RESERVE_BYTES)).toEqual(result());
  });
});
