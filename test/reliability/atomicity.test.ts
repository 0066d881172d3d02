/**
 * Area 4 — atomicity. The wrapper is SIGKILLed at moments spread over its run: result.json is
 * then absent or complete, valid JSON — never partial. And a reader polling result.json (as
 * the extension's launcher does) while it is rewritten never parses half a file.
 * scripts/reliability.mjs runs the same trials 200+ times; here a quicker sample.
 */
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { RUN_STATUSES } from "../../src/contracts/result.js";
import { readRunResult } from "../../src/extension/turns/wrapper/run-reads.js";
import { writeResultAtomic } from "../../src/wrapper/artifacts.js";
import { turnResult } from "../support/fake-turns.js";
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
/**
 * When a trial's SIGKILL is sent: `ms` after the wrapper was started, or as soon as its
 * result.json exists (the moment right after the rename, while the wrapper closes up).
 */
type KillPoint = { afterMs: number } | "result-written";
let tempFilesLeft = 0;

async function resultWritten(dir: string, exited: Promise<unknown>): Promise<void> {
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  while (!gone && !(await stat(path.join(dir, "out/result.json")).catch(() => undefined)))
    await new Promise((r) => setTimeout(r, 2));
}

async function trial(kill: KillPoint): Promise<Verdict> {
  const c = await wrapperCase({ meta: defaultMeta(), scenario: BUSY });
  const wrapper = c.start({ env: LOAD_TASK_EXTENSION });
  if (kill === "result-written") await resultWritten(c.dir, wrapper.done);
  else await new Promise((r) => setTimeout(r, kill.afterMs));
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

describe(`area 4: ${TRIALS} SIGKILLs spread over a run → result.json absent or complete, never partial`, () => {
  it(`${TRIALS} trials, ${CONCURRENCY} at a time: both outcomes occur, 0 partial files, 0 processes left`, async () => {
    // An unkilled run of the same scenario on this machine now says how long a run takes.
    const reference = await (await wrapperCase({ meta: defaultMeta(), scenario: BUSY })).run({
      env: LOAD_TASK_EXTENSION,
    });
    expect(reference.result?.status).toBe("completed");
    // The first kill lands before node has loaded the wrapper (absent, by construction); the
    // last two once result.json exists (complete, by construction); the others are spread
    // from the start to 1.5 times the reference run, so they land in every phase.
    const spread = TRIALS - 3;
    const kills: KillPoint[] = [
      { afterMs: 0 },
      ...Array.from({ length: spread }, (_, i) => ({
        afterMs: Math.round(((i + 1) / spread) * 1.5 * reference.durationMs),
      })),
      "result-written",
      "result-written",
    ];
    const verdicts: Verdict[] = [];
    for (let i = 0; i < kills.length; i += CONCURRENCY) {
      verdicts.push(...(await Promise.all(kills.slice(i, i + CONCURRENCY).map(trial))));
    }
    const complete = verdicts.filter((v) => v === "complete").length;
    console.log(
      `[reliability] ${TRIALS} kill trials over a ${reference.durationMs} ms run: ${complete} complete result.json, ${TRIALS - complete} absent, 0 partial, ${tempFilesLeft} temp files left`,
    );
    expect(verdicts).toHaveLength(TRIALS);
    expect(verdicts[0]).toBe("absent");
    expect(verdicts.slice(-2)).toEqual(["complete", "complete"]);
    expect(await settleLeftovers(8000)).toEqual([]);
  });
});

describe("area 4: a reader never sees a half-written result.json", () => {
  it("500 atomic rewrites of a 300 KB result raced by the launcher's reader → 0 partial reads", async () => {
    const c = await wrapperCase({});
    const file = path.join(c.dir, "result.json");
    const big = (n: number) => turnResult({ runId: `r${n}`, finalText: String(n % 10).repeat(300_000) });
    await writeResultAtomic(file, big(0));
    let writing = true;
    let reads = 0;
    let partial = 0;
    const reader = (async () => {
      while (writing) {
        // A half-written file would read as damaged (not JSON) or absent: both count.
        const { result } = await readRunResult(c.dir);
        reads++;
        if (result?.finalText.length !== 300_000) partial++;
      }
    })();
    for (let n = 1; n <= 500; n++) await writeResultAtomic(file, big(n));
    writing = false;
    await reader;
    console.log(`[reliability] ${reads} reads during 500 rewrites: ${partial} partial`);
    expect(reads).toBeGreaterThan(0);
    expect(partial).toBe(0);
  });
});
