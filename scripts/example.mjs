#!/usr/bin/env node
// The README's first command: run subagent-wrapper on examples/hello/meta.json against the
// bundled fake pi (no API key, no network) and print what a script would read back.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const meta = path.join(root, "examples/hello/meta.json");
const out = path.join(root, "example-output");

console.log(`$ subagent-wrapper examples/hello/meta.json   (pi = fixtures/fake-pi/pi, scripted)\n`);
const run = spawnSync(process.execPath, [path.join(root, "bin/subagent-wrapper"), meta], {
  stdio: ["ignore", "inherit", "inherit"],
  env: {
    ...process.env,
    PI_SUBAGENTS_PI_BIN: path.join(root, "fixtures/fake-pi/pi"),
    FAKE_PI_SCENARIO: path.join(root, "examples/hello/scenario.json"),
  },
});

const result = JSON.parse(readFileSync(path.join(out, "result.json"), "utf8"));
const events = readFileSync(path.join(out, "events.jsonl"), "utf8")
  .trim()
  .split("\n")
  .map((line) => JSON.parse(line));

console.log(`wrapper exit code: ${run.status}`);
console.log(`status:     ${result.status}   (stopReason ${result.stopReason}, forcedExit ${result.forcedExit})`);
console.log(`report:     ${result.finalText}`);
console.log(
  `turns:      ${result.turns}, tool calls: ${result.toolCalls}, tokens: ${result.usage.totalTokens}, model: ${result.resolvedModel}`,
);
console.log(
  `duration:   ${result.durationMs} ms (the fake child lingered; it was stopped ${result.forcedExit ? "after graceMs" : "—"})`,
);
console.log(`\nevents.jsonl (${events.length} records):`);
for (const event of events) {
  const { type, seq, ts, usage, ...rest } = event;
  console.log(`  ${String(seq).padStart(2)} ${type.padEnd(15)} ${JSON.stringify(rest).slice(0, 110)}`);
}
console.log(
  `\nartifacts in ${path.relative(process.cwd(), out) || "."}/: result.json events.jsonl stdout.log stderr.log transcript.md`,
);
process.exit(run.status ?? 1);
