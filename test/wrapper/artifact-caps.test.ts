import { afterEach, describe, expect, it } from "vitest";
import { killAll } from "../support/processes.js";
import { cleanupWrapperCases, wrapperCase } from "../support/wrapper-harness.js";

afterEach(async () => {
  await killAll();
  await cleanupWrapperCases();
});

const CAP = 8192;
const BULKY_MARKER = `[subagent-wrapper: raw log reached ${CAP / 8} bytes; message deltas and snapshots are omitted from here on (PI_SUBAGENTS_LOG_MAX_BYTES raises the cap)]`;
const FULL_MARKER = `[subagent-wrapper: raw log reached its cap of ${CAP} bytes; the rest is omitted (PI_SUBAGENTS_LOG_MAX_BYTES=unlimited lifts the cap)]`;

describe("subagent-wrapper: capped raw logs", () => {
  it("a big stream leaves a capped stdout log with a marker, and the run's records whole", async () => {
    const run = await (await wrapperCase({ scenario: "big-updates" })).run({
      env: { PI_SUBAGENTS_LOG_MAX_BYTES: String(CAP) },
    });
    expect(run.result).toMatchObject({ status: "completed" });
    expect(run.result!.errorMessage).toBeUndefined();
    const raw = await run.read("out/stdout.log");
    expect(raw).toContain(BULKY_MARKER);
    expect(raw.length).toBeLessThanOrEqual(CAP + BULKY_MARKER.length + FULL_MARKER.length + 4);
    // The final message_end (not bulky) is kept after the deltas were cut.
    expect(raw.slice(raw.indexOf(BULKY_MARKER))).toContain('"type":"message_end"');
    expect(run.events.map((e) => e.type)).toContain("assistant_text");
  });

  it("non-JSON lines are kept up to the cap, then the log ends with a marker line", async () => {
    const steps = [
      ...Array.from({ length: 40 }, (_, i) => ({ raw: `plain text line ${i} ${"-".repeat(400)}` })),
      { stderr: "e".repeat(20_000) },
      { assistant: { text: "done", stopReason: "stop" } },
    ];
    const run = await (await wrapperCase({ scenario: { steps } })).run({
      env: { PI_SUBAGENTS_LOG_MAX_BYTES: String(CAP) },
    });
    expect(run.result).toMatchObject({ status: "completed", finalText: "done" });
    const raw = await run.read("out/stdout.log");
    expect(raw).toContain("plain text line 0 ");
    expect(raw.endsWith(`\n${FULL_MARKER}\n`)).toBe(true);
    expect(raw.length).toBe(CAP + FULL_MARKER.length + 2);
    const stderr = await run.read("out/stderr.log");
    expect(stderr.endsWith(`\n${FULL_MARKER}\n`)).toBe(true);
  });

  it("PI_SUBAGENTS_LOG_MAX_BYTES=unlimited keeps every byte", async () => {
    const run = await (await wrapperCase({ scenario: "big-updates" })).run({
      env: { PI_SUBAGENTS_LOG_MAX_BYTES: "unlimited" },
    });
    const raw = await run.read("out/stdout.log");
    expect(raw).not.toContain("[subagent-wrapper:");
    expect(raw.split("\n").filter((line) => line.startsWith('{"type":"message_update"')).length).toBeGreaterThanOrEqual(
      50,
    );
  });

  it("a bad cap value is named on stderr and the default applies", async () => {
    const run = await (await wrapperCase({ scenario: "big-updates" })).run({
      env: { PI_SUBAGENTS_LOG_MAX_BYTES: "lots" },
    });
    expect(run.result).toMatchObject({ status: "completed" });
    expect(run.stderr).toContain(
      'subagent-wrapper: warning: PI_SUBAGENTS_LOG_MAX_BYTES=lots is not a byte count, 0 or "unlimited"; using 8388608',
    );
  });
});
