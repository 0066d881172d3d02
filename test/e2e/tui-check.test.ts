/**
 * The live tree display in a real terminal: scripts/tui-check.mjs runs the real pi
 * interactively in a private tmux server against a loopback LLM and asserts on the captured
 * pane. Skipped only when tmux is not installed.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/pi-home.js";
import { spawnProcess } from "../support/processes.js";

const hasTmux = (process.env.PATH ?? "").split(path.delimiter).some((dir) => fs.existsSync(path.join(dir, "tmux")));

describe.skipIf(!hasTmux)("interactive pi in tmux", () => {
  it("shows the tree in the status line and the widget: nickname, status, model, elapsed, then usage and cost", async () => {
    const run = await spawnProcess(process.execPath, [path.join(REPO_ROOT, "scripts", "tui-check.mjs")], { cwd: REPO_ROOT, timeoutMs: 150_000 }).done;
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    const [whileRunning, atEnd] = run.stdout.split("--- pane at the end ---");
    // While the children work: each line names the task, nickname, status, model and elapsed time.
    expect(whileRunning).toMatch(/├─ alpha \(\w+\) · running · loop\/fast · \d+s · /);
    expect(whileRunning).toMatch(/agents: \d running/);
    // At the end: every agent completed with its usage and cost; beta's line rolls up gamma's.
    expect(atEnd).toMatch(/└─ beta \(\w+\) · completed · loop\/fast · \d+s · .* · subtree [\d.]+k? tok · \$0\.\d{4}/);
    expect(atEnd).toMatch(/ {2}└─ gamma \(\w+\) · completed · loop\/fast/);
    expect(atEnd).toMatch(/agents: 3 done · [\d.]+k? tok · \$0\.\d{4}/);
  }, 180_000);
});
