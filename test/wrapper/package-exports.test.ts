/**
 * The package as a user imports it: by name, through package.json "exports", from the built
 * dist/ (a temp project whose node_modules/pi-subagent-tree links this checkout). The root is
 * the contracts and the pure readers, and nothing that starts processes or touches files;
 * `pi-subagent-tree/wrapper` is the programmatic run.
 */

import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, symlink } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pkg from "../../package.json" with { type: "json" };
import * as contracts from "../../src/contracts/index.js";
import { REPO_ROOT } from "../support/pi-home.js";
import { runProcess } from "../support/processes.js";

let project: string;
beforeAll(async () => {
  project = await mkdtemp(path.join(os.tmpdir(), "psa-exports-"));
  await mkdir(path.join(project, "node_modules"));
  await symlink(REPO_ROOT, path.join(project, "node_modules", "pi-subagent-tree"), "dir");
});
afterAll(() => rm(project, { recursive: true, force: true }));

/** The names a specifier exports, as a user's `import()` sees them. */
async function exportedNames(specifier: string): Promise<string[]> {
  const code = `const m = await import(${JSON.stringify(specifier)}); process.stdout.write(JSON.stringify(Object.keys(m).sort()));`;
  const run = await runProcess(process.execPath, ["--input-type=module", "-e", code], {
    cwd: project,
    timeoutMs: 20_000,
  });
  expect(run.stderr).toBe("");
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout) as string[];
}

const READERS = [
  "ABORT_MARKER",
  "ABORT_NO_REASON",
  "OutcomeTracker",
  "findAbortMarker",
  "isTerminalStop",
  "normalizePiEvent",
  "normalizeStopReason",
];

describe("the package's exports, imported by name", () => {
  it('"pi-subagent-tree" is the contracts plus the pure readers: no runWrapper, no loadMeta', async () => {
    const names = await exportedNames("pi-subagent-tree");
    expect(names).toEqual([...Object.keys(contracts), ...READERS].sort());
    expect(names).not.toContain("runWrapper");
    expect(names).not.toContain("loadMeta");
  });

  it('"pi-subagent-tree/wrapper" is the programmatic run: runWrapper and loadMeta', async () => {
    expect(await exportedNames("pi-subagent-tree/wrapper")).toEqual(["loadMeta", "runWrapper"]);
  });

  it('"pi-subagent-tree/contracts" is the contracts alone', async () => {
    expect(await exportedNames("pi-subagent-tree/contracts")).toEqual(Object.keys(contracts).sort());
  });

  it("every file the exports map names exists (types included)", () => {
    const targets = Object.values(pkg.exports).flatMap((target) =>
      typeof target === "string" ? [target] : Object.values(target),
    );
    expect(targets.filter((target) => !existsSync(path.join(REPO_ROOT, target)))).toEqual([]);
  });

  it("a harness reads a stop reason and the [ABORT] marker through the root export as the wrapper does", async () => {
    const code = `import { normalizeStopReason, findAbortMarker, OutcomeTracker } from "pi-subagent-tree";
const tracker = new OutcomeTracker();
tracker.observe({ type: "message_end", message: { role: "assistant", content: [{ type: "text", text: "Checked.\\n[ABORT] no API key" }], stopReason: "stop" } });
process.stdout.write(JSON.stringify([normalizeStopReason("end_turn"), findAbortMarker(["x\\n[ABORT] no API key"]), tracker.finish({ exitCode: 0, signal: null, stderrTail: "" })]));`;
    const run = await runProcess(process.execPath, ["--input-type=module", "-e", code], {
      cwd: project,
      timeoutMs: 20_000,
    });
    expect(run.stderr).toBe("");
    expect(JSON.parse(run.stdout)).toEqual([
      { stopReason: "stop", rawStopReason: "end_turn" },
      "no API key",
      {
        status: "aborted",
        stopReason: "stop",
        rawStopReason: "stop",
        finalText: "Checked.\n[ABORT] no API key",
        abortReason: "no API key",
        abortSource: "marker",
      },
    ]);
  });
});
