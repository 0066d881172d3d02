/**
 * Area 4 — atomicity. The wrapper is SIGKILLed at random moments of its run: result.json is
 * then absent or complete, valid JSON — never partial. And a reader polling result.json (as
 * the extension's launcher does) while it is rewritten never parses half a file.
 * scripts/reliability.mjs runs the same trials 200+ times; here a quicker sample.
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { RUN_STATUSES } from "../../src/contracts/result.js";
import { runResult } from "../../src/extension/turns/launcher.js";
import { writeResultAtomic } from "../../src/wrapper/artifacts.js";
import { killAll } from "../support/processes.js";
import { cleanupWrapperCases, defaultMeta, wrapperCase } from "../support/wrapper-harness.js";
import { killLeftovers, LOAD_TASK_EXTENSION, settleLeftovers } from "./support.js";

afterEach(async () => {
  await killAll();
  await killLeftovers();
  await cleanupWrapperCases();
});

const TRIALS = 24;
const CONCURRENCY = 4;
/** A run of a few hundred ms with plenty of output, so kills land in every phase. */
const BUSY = {
  steps: [
    { tool: { id: "t1", name: "bash", args: { command: "ls" } } },
    { bigLine: { type: "garbage", bytes: 200_000 } },
    { assistant: { text: "done", stopReason: "stop" }, partials: 20 },
  ],
};

type Verdict = "absent" | "complete";
let tempFilesLeft = 0;

async function trial(delayMs: number): Promise<Verdict> {
  const c = await wrapperCase({ meta: defaultMeta(), scenario: BUSY });
  const wrapper = c.start({ env: LOAD_TASK_EXTENSION });
  await new Promise((r) => setTimeout(r, delayMs));
  wrapper.kill("SIGKILL");
  await wrapper.done;
  const text = await readFile(path.join(c.dir, "out/result.json"), "utf8").catch(() => undefined);
  if (text === undefined) {
    // A write cut short between its temp file and the rename may leave `.result.json.*.tmp`
    // (never read by anyone); count them for the report.
    const temps = (await readdir(path.join(c.dir, "out")).catch(() => [])).filter((name) => name.endsWith(".tmp"));
    tempFilesLeft += temps.length;
    return "absent";
  }
  const result = JSON.parse(text); // throws on a partial file: the trial fails
  expect(result.version).toBe(1);
  expect(RUN_STATUSES).toContain(result.status);
  expect(typeof result.endedAt).toBe("string");
  // No temp file survives a finished write; one cut short may leave `.result.json.*.tmp`.
  expect((await readdir(path.join(c.dir, "out"))).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  return "complete";
}

describe(`area 4: ${TRIALS} SIGKILLs at random moments → result.json absent or complete, never partial`, () => {
  it(`${TRIALS} trials, ${CONCURRENCY} at a time, 0 partial files, 0 processes left`, async () => {
    const verdicts: Verdict[] = [];
    const delays = Array.from({ length: TRIALS }, (_, i) => Math.round((i / TRIALS) * 900 + Math.random() * 40));
    for (let i = 0; i < delays.length; i += CONCURRENCY) {
      verdicts.push(...(await Promise.all(delays.slice(i, i + CONCURRENCY).map(trial))));
    }
    const complete = verdicts.filter((v) => v === "complete").length;
    console.log(
      `[reliability] ${TRIALS} kill trials: ${complete} complete result.json, ${TRIALS - complete} absent, 0 partial, ${tempFilesLeft} temp files left`,
    );
    expect(verdicts).toHaveLength(TRIALS);
    expect(await settleLeftovers(8000)).toEqual([]);
  });
});

describe("area 4: a reader never sees a half-written result.json", () => {
  it("500 atomic rewrites of a 300 KB result raced by the launcher's reader → 0 partial reads", async () => {
    const c = await wrapperCase({});
    const file = path.join(c.dir, "result.json");
    const big = (n: number) => ({ version: 1, runId: `r${n}`, status: "completed", finalText: String(n % 10).repeat(300_000) });
    await writeResultAtomic(file, big(0) as never);
    let writing = true;
    let reads = 0;
    let partial = 0;
    const reader = (async () => {
      while (writing) {
        const result = await runResult(c.dir);
        reads++;
        if (result?.finalText.length !== 300_000) partial++;
      }
    })();
    for (let n = 1; n <= 500; n++) await writeResultAtomic(file, big(n) as never);
    writing = false;
    await reader;
    console.log(`[reliability] ${reads} reads during 500 rewrites: ${partial} partial`);
    expect(reads).toBeGreaterThan(0);
    expect(partial).toBe(0);
  });
});
