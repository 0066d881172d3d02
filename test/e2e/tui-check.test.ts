/**
 * The tree in a real terminal, as a person uses it: scripts/tui-check.mjs runs the real pi
 * interactively in a private tmux server against a loopback LLM, types, opens /agents,
 * interrupts a child from it, lets the others wake the root, answers a child's permission
 * dialog (pi's own example gate, loaded in the root only), and quits with a child running;
 * it asserts on each captured pane. Skipped only when tmux is not installed.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/pi-home.js";
import { spawnProcess } from "../support/processes.js";

const hasTmux = (process.env.PATH ?? "").split(path.delimiter).some((dir) => fs.existsSync(path.join(dir, "tmux")));

/** The pane printed under `--- <name> ---`. */
function pane(stdout: string, name: string): string {
  const start = stdout.indexOf(`--- ${name} ---\n`);
  if (start === -1) return "";
  const rest = stdout.slice(start + name.length + 9);
  const end = rest.search(/^--- .* ---$/m);
  return end === -1 ? rest : rest.slice(0, end);
}

describe.skipIf(!hasTmux)("interactive pi in tmux", () => {
  it("draws the tree once with compact tool lines, gives way to typing, runs /agents, wakes on idle notices, folds the widget, shows a child's dialog and exits honestly", async () => {
    const run = await spawnProcess(process.execPath, [path.join(REPO_ROOT, "scripts", "tui-check.mjs")], {
      cwd: REPO_ROOT,
      timeoutMs: 200_000,
    }).done;
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    const working = pane(run.stdout, "while the children work");
    // The widget: each line names the task, nickname, status, model and elapsed time; the status line counts.
    expect(working).toMatch(/├─ alpha \(\w+\) · running · loop\/fast · \d+s · /);
    expect(working).toMatch(/agents: \d running/);
    // Compact tool lines, and the wait's progress as one line (the tree is not drawn again).
    expect(working).toMatch(/^ spawn_agent alpha fork none "Work for a long while, then report\."\s*$/m);
    // The count is of the root's subtree (docs/tools.md): alpha and beta, and gamma once beta's
    // turn has started it (on a quiet machine it has by the time both children show 1 s).
    expect(working).toMatch(/^ waiting \d+s for notices · [23] running\s*$/m);
    expect(working.match(/[├└]─ alpha \(/g)).toHaveLength(1);
    expect(pane(run.stdout, "after typing while the children work")).toMatch(
      /gave way to your message · 2 running keep working[\s\S]*how is it going\?[\s\S]*ANSWER WHILE CHILDREN WORK/,
    );
    expect(pane(run.stdout, "/agents")).toMatch(/→ ├─ alpha \(\w+\) · running/);
    expect(pane(run.stdout, "/agents: alpha")).toMatch(/run {6}\S+\/agents\/alpha\/runs\/0001-spawn/);
    expect(pane(run.stdout, "/agents: alpha interrupted")).toMatch(/Warning: ■ \/root\/alpha \(\w+\) interrupted/);
    const woken = pane(run.stdout, "woken, the widget folded");
    expect(woken).toMatch(/↻ 2 notices woke the model: ■ \/root\/alpha interrupted, ✓ \/root\/beta completed/);
    expect(woken).toMatch(/agents: 2 completed, 1 interrupted · [\d.]+k? tok · \$0\.\d{4}/);
    expect(woken).not.toContain("subagents · ");
    // A child's dialog (the root's permission gate on its rm -rf): pi's own select, headed with
    // the child's path, counted on the status line; the script answers "Yes", then "No".
    const asked = pane(run.stdout, "a child's dialog");
    expect(asked).toMatch(/\/root\/epsilon asks: ⚠️ Dangerous command:\s+rm -rf \S+scratch-yes/);
    expect(asked).toMatch(/→ Yes\s+No/);
    expect(asked).toMatch(/agents: 1 running, .* · 1 dialog waiting/);
    expect(pane(run.stdout, "a child's second dialog")).toMatch(/\/root\/epsilon asks: [\s\S]*rm -rf \S+scratch-no/);
    const more = pane(run.stdout, "one more child");
    // beta has a later sibling (delta): its child hangs below a │.
    expect(more).toMatch(/├─ beta \(\w+\) · completed · loop\/fast · \d+s · .* · subtree [\d.]+k? tok · \$0\.\d{4}/);
    expect(more).toMatch(/│ └─ gamma \(\w+\) · completed · loop\/fast/);
    expect(more).toMatch(/└─ delta \(\w+\) · running/);
    // An interactive root leaves its running child to go on (onExit detach, the default here)
    // and says how to look, stop or take it back; the script checks the child still runs, is
    // taken back by pi on the same session and outlives a killed tmux session.
    const exit = pane(run.stdout, "after ctrl+d");
    expect(exit).toContain("agents: leaving 1 running (pi is exiting; it goes on, pi -c takes it back)");
    expect(exit).toMatch(/pi-subagent-tree: left 1 running agent \(\/root\/delta\)\./);
    expect(exit).toMatch(/re-attach: pi --session \S+root-session\.jsonl/);
    expect(exit).toMatch(/stop: {6}subagent-wrapper stop \S+/);
  }, 240_000);
});
