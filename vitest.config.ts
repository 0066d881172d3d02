import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { ensureLineBin, LINE_ENV, lineName, linePath, resolveLine } from "./scripts/pi-lines.mjs";

// The pi line these tests run on (PI_SUBAGENTS_TEST_PI_LINE: current | 0.73; scripts/pi-lines.mjs):
// every process a test starts finds that line's `node` and `pi` first on PATH.
const line = resolveLine(path.dirname(fileURLToPath(import.meta.url)), lineName());
ensureLineBin(line);

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 90_000,
    hookTimeout: 30_000,
    // Wrapper and e2e tests start real processes; two cores do not like many at once.
    maxWorkers: 2,
    env: { [LINE_ENV]: line.name, PATH: linePath(line, process.env.PATH) },
  },
});
