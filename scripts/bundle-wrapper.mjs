#!/usr/bin/env node
// Bundles the wrapper's run path (dist/cli/run-command.js and what it imports: our own
// modules and Node built-ins only) into one CommonJS file beside it, which
// bin/subagent-wrapper loads for a plain `[run] <meta.json>`. One file without the ESM loader
// starts ~7 ms sooner than the module graph, and start-up is the wrapper's whole overhead on a
// short run (docs/performance.md). Run after `tsc -p .` (npm run build does both).
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "rolldown";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const input = path.join(root, "dist/cli/run-command.js");
const output = path.join(root, "dist/cli/run-command.bundle.cjs");

await build({
  input,
  platform: "node",
  // Anything that is not our own file stays a require(): the run path has no dependencies.
  external: (id) => !id.startsWith(".") && !path.isAbsolute(id),
  // The span exporter (telemetry/otlp-export.js) is imported on demand: inlined, it still runs, and requires the SDK, only when tracing is on.
  output: { file: output, format: "cjs", codeSplitting: false },
  logLevel: "warn",
});
