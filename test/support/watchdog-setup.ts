/**
 * Runs in each vitest worker before a test file (vitest.config.ts setupFiles): records which
 * file and test this worker process is in, for the test watchdog (scripts/test-watchdog.mjs)
 * that names a hung test and ends its worker. Does nothing unless the watchdog's folder is set.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, beforeEach } from "vitest";

const WATCH_DIR_ENV = "PI_SUBAGENTS_TEST_WATCH_DIR";
const dir = process.env[WATCH_DIR_ENV];

if (dir) {
  const record = (file: string, test: string) => {
    try {
      writeFileSync(path.join(dir, String(process.pid)), JSON.stringify({ file, test, at: Date.now() }));
    } catch {
      // the watchdog's folder is gone: the pass is ending
    }
  };
  let file = "";
  // vitest reads the first parameter as fixtures and wants it destructured.
  // biome-ignore lint/correctness/noEmptyPattern: no fixture is used, only the suite after it
  beforeAll(({}, suite) => {
    file = "filepath" in suite ? suite.filepath : suite.file.filepath;
    record(file, "(its beforeAll)");
  });
  beforeEach((context) => record(context.task.file.filepath, context.task.name));
}
