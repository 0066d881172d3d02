#!/usr/bin/env node
// What the subcommands cost, and that they cost the `run` path nothing: start-up of
// `node -e 0`, `subagent-wrapper --version` (the run path's module graph), `inspect` with and
// without the schema check, `doctor` (fake pi), and importing the schema validator alone.
// Processes alternate round by round; prints medians.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { median, REPO_ROOT, timed } from "./support.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const BIN = path.join(REPO_ROOT, "bin/subagent-wrapper");
const FAKE_PI = path.join(REPO_ROOT, "fixtures/fake-pi");

const dir = mkdtempSync(path.join(os.tmpdir(), "psa-bench-cli-"));
const env = {
  ...process.env,
  PATH: `${FAKE_PI}${path.delimiter}${process.env.PATH}`,
  PI_SUBAGENTS_DIR: path.join(dir, "runs"),
  PI_CODING_AGENT_DIR: dir,
};
writeFileSync(
  path.join(dir, "meta.json"),
  JSON.stringify({
    runId: "bench",
    task: "hi",
    cwd: ".",
    resultPath: "result.json",
    eventsPath: "events.jsonl",
    graceMs: 300,
  }),
);
execFileSync(process.execPath, [BIN, "meta.json"], { cwd: dir, env: { ...env, FAKE_PI_SCENARIO: "tool-then-answer" } });

const importOnly = (specifier) =>
  Number(
    spawnSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const t = performance.now(); await import(${JSON.stringify(specifier)}); console.log(performance.now() - t);`,
      ],
      {
        cwd: REPO_ROOT,
        encoding: "utf8",
      },
    ).stdout,
  );

const cases = {
  "node -e 0": [process.execPath, ["-e", "0"]],
  "subagent-wrapper --version": [process.execPath, [BIN, "--version"]],
  "subagent-wrapper inspect --no-check": [process.execPath, [BIN, "inspect", dir, "--no-check"]],
  "subagent-wrapper inspect": [process.execPath, [BIN, "inspect", dir]],
  "subagent-wrapper doctor (fake pi)": [process.execPath, [BIN, "doctor"]],
};
const samples = Object.fromEntries(Object.keys(cases).map((name) => [name, []]));
const validatorImport = [];
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, [cmd, args]] of Object.entries(cases))
      samples[name].push(await timed(cmd, args, { cwd: dir, env }));
    validatorImport.push(importOnly("typebox/schema"));
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(`${ROUNDS} rounds, alternated, medians (wall time of a whole process)`);
for (const [name, values] of Object.entries(samples))
  console.log(`${name.padEnd(38)} ${median(values).toFixed(0).padStart(5)} ms`);
console.log(
  `${"import('typebox/schema') alone".padEnd(38)} ${median(validatorImport).toFixed(0).padStart(5)} ms (in-process)`,
);
