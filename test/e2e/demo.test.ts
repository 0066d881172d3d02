import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ONE_LINE_IS_ENOUGH, REPO_ROOT } from "../support/pi-home.js";
import { runProcess } from "../support/processes.js";

describe.skipIf(ONE_LINE_IS_ENOUGH)("the README's first command", () => {
  it("npm run demo: the root spawns a scout and a lead, the lead a nested checker, and the tree prints with every report", async () => {
    const out = await mkdtemp(path.join(os.tmpdir(), "psa-demo-"));
    const run = await runProcess(process.execPath, [path.join(REPO_ROOT, "scripts/demo.mjs")], {
      cwd: REPO_ROOT,
      env: { ...process.env, DEMO_OUTPUT_DIR: out },
      timeoutMs: 120_000,
    }).finally(() => rm(out, { recursive: true, force: true }));
    // What the demo printed, when it failed: its own reason first (a summary shows one line), then its tree and pi's lines on stderr.
    const reason = run.stderr.trim().split("\n").at(-1) ?? "";
    expect(run.code, `${reason}\n${run.stdout}\n${run.stderr}`).toBe(0);
    // Siblings: ├─ for all but the last, └─ for the last; the nested checker hangs below the lead.
    expect(run.stdout).toMatch(/\n├─ \/root\/survey {2}\w+ {2}scout {2}completed \(healthy\)/);
    expect(run.stdout).toMatch(/\n└─ \/root\/lead {2}\w+ {2}default {2}completed \(healthy\)/);
    expect(run.stdout).toMatch(/\n {3}└─ \/root\/lead\/checker {2}\w+ {2}default {2}completed \(healthy\)/);
    expect(run.stdout).toMatch(/\nthe whole tree again, with every run: npx subagent-wrapper inspect \S+/);
    expect(run.stdout).toContain("report: My helper /root/lead/checker says: The first line is `#!/usr/bin/env node`.");
    expect(run.stdout).toMatch(/report: The working directory has \d+ entries; source-like: .*src\//);
  });
});
