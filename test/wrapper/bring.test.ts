/**
 * `subagent-wrapper bring <base> <head>` as a person or a model runs it: the report on
 * stdout, the conflicting files on one line, exit 0 / 1 / 2.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runProcess } from "../support/processes.js";
import { WRAPPER_BIN } from "../support/wrapper-harness.js";
import { AS_SETUP, makeRepo, sh, useSandbox, write } from "../unit/extension/isolation/support.js";

const sandbox = useSandbox();

describe("subagent-wrapper bring", () => {
  it("brings the agent's work into a dirty tree, names the conflict on one line, exit 1; usage errors exit 2", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "one\ntwo\nthree\n", "b.txt": "b\n" });
    const base = sh(box, repo, ["rev-parse", "HEAD"]).trim();
    const agent = path.join(box.dir, "agent");
    sh(box, repo, ["worktree", "add", "-q", "-b", "subagent/t-a", agent, base]);
    write(path.join(agent, "a.txt"), "one\nTWO by the agent\nthree\n");
    write(path.join(agent, "c.txt"), "c\n");
    sh(box, agent, ["add", "-A"]);
    sh(box, agent, [...AS_SETUP, "commit", "-q", "-m", "turn"]);
    const head = sh(box, agent, ["rev-parse", "HEAD"]).trim();
    write(path.join(repo, "a.txt"), "one\nTWO yours\nthree\n");
    write(path.join(repo, "b.txt"), "b, yours\n");

    const cli = (args: string[]) =>
      runProcess(process.execPath, [WRAPPER_BIN, "bring", ...args], { cwd: repo, env: box.env, timeoutMs: 20_000 });
    const shown = await cli([base, head]);
    expect(shown.stderr).toBe("");
    expect(shown.code).toBe(1);
    const [b7, h7] = [base.slice(0, 7), head.slice(0, 7)];
    expect(shown.stdout).toBe(
      [
        `brought in ${b7}..${h7} (2 files): 1 taken as the agent left them, 1 in conflict; your uncommitted work is kept and nothing is staged`,
        "conflicts: a.txt",
        `  a.txt: both changed the same lines: conflict markers in the file (<<<<<<< yours … >>>>>>> agent ${h7})`,
        "",
      ].join("\n"),
    );
    expect(fs.readFileSync(path.join(repo, "a.txt"), "utf8")).toBe(
      `one\n<<<<<<< yours\nTWO yours\n=======\nTWO by the agent\n>>>>>>> agent ${h7}\nthree\n`,
    );
    expect(fs.readFileSync(path.join(repo, "b.txt"), "utf8")).toBe("b, yours\n");
    expect(fs.readFileSync(path.join(repo, "c.txt"), "utf8")).toBe("c\n");

    const unknown = await cli([base, "no-such-branch"]);
    expect([unknown.code, unknown.stdout, unknown.stderr]).toEqual([
      2,
      "",
      `subagent-wrapper bring: no commit no-such-branch in the repository at ${repo}\n`,
    ]);
  });
});
