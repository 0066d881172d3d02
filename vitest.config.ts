import path from "node:path";
import { fileURLToPath } from "node:url";
import { configDefaults, defineConfig } from "vitest/config";
import {
  ensureLineBin,
  LINE_ENV,
  lineName,
  linePath,
  resolveLine,
  SCOPE_ENV,
  testsInScope,
} from "./scripts/pi-lines.mjs";

const ROOT = path.dirname(fileURLToPath(import.meta.url));

// The pi line these tests run on (PI_SUBAGENTS_TEST_PI_LINE: current | 0.73; scripts/pi-lines.mjs):
// every process a test starts finds that line's `node` and `pi` first on PATH.
const line = resolveLine(ROOT, lineName());
ensureLineBin(line);

// PI_SUBAGENTS_TEST_SCOPE=line: only the tests that depend on the line (test/e2e and any test
// that uses the line's pi or node); =rest: only the others. npm test runs the first on each
// line and the second once (scripts/test-lines.mjs); unset: every test.
const { include, exclude } = testsInScope(ROOT, process.env[SCOPE_ENV]);

export default defineConfig({
  resolve: {
    // pi 0.73.1 is installed under an npm alias (scripts/pi-lines.mjs says why): the source's
    // imports of its name, run in vitest, get that copy, as tsc's types do (tsconfig.json paths).
    alias: [{ find: /^@mariozechner\/pi-coding-agent$/, replacement: "pi-coding-agent-0.73" }],
  },
  test: {
    include,
    exclude: [...configDefaults.exclude, ...exclude],
    testTimeout: 90_000,
    hookTimeout: 30_000,
    // Wrapper and e2e tests start real processes; two cores do not like many at once (npm test
    // runs two passes at once: four files in all).
    maxWorkers: 2,
    // Records each worker's file and test for scripts/test-watchdog.mjs (npm test's hang guard).
    setupFiles: ["test/support/watchdog-setup.ts"],
    env: { [LINE_ENV]: line.name, PATH: linePath(line, process.env.PATH) },
  },
});
