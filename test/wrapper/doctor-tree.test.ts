/**
 * `subagent-wrapper doctor --tree <dir>`: a tree directory whose isolated agents' worktrees are
 * in every state doctor tells apart, made with real git in a temp dir.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { worktreeProblems } from "../../src/cli/worktree-format.js";
import type { AgentWorktreeV1 } from "../../src/contracts/tree.js";
import { createWorktree } from "../../src/extension/isolation/worktree.js";
import { runProcess } from "../support/processes.js";
import { agentRecord } from "../support/records.js";
import { WRAPPER_BIN } from "../support/wrapper-harness.js";
import { makeRepo, type Sandbox, sh, useSandbox } from "../unit/extension/isolation/support.js";

const sandbox = useSandbox();

/** A tree with agents `healthy` (intact), `lost` (folder gone), `shut` (shut down, worktree left), `tidy` (shut down, all gone). */
async function staleTree(box: Sandbox) {
  const repo = makeRepo(box, { "a.txt": "a\n" });
  const base = sh(box, repo, ["rev-parse", "HEAD"]).trim();
  const treeDir = path.join(box.dir, "tree");
  fs.mkdirSync(path.join(treeDir, "agents"), { recursive: true });
  fs.writeFileSync(
    path.join(treeDir, "tree.json"),
    JSON.stringify({ version: 1, rootSession: "s", createdAt: "", tag: "0badc0de" }),
  );
  const agents: Array<[string, string, boolean]> = [
    ["healthy", "completed", true],
    ["lost", "interrupted", true],
    ["shut", "shutdown", true],
    ["tidy", "shutdown", false],
  ];
  let seq = 0;
  for (const [name, status, create] of agents) {
    const worktree: AgentWorktreeV1 = {
      path: path.join(treeDir, "worktrees", name),
      branch: `subagent/0badc0de-${name}`,
      baseCommit: base,
      gitDir: path.join(repo, ".git"),
      subdir: "",
    };
    if (create)
      await createWorktree({
        topLevel: repo,
        worktreePath: worktree.path,
        branch: worktree.branch,
        base,
        env: box.env,
      });
    const record = agentRecord({ path: `/root/${name}`, status: status as never, spawnSeq: ++seq, worktree });
    fs.mkdirSync(path.join(treeDir, "agents", name), { recursive: true });
    fs.writeFileSync(path.join(treeDir, "agents", name, "agent.json"), JSON.stringify(record));
  }
  fs.rmSync(path.join(treeDir, "worktrees", "lost"), { recursive: true, force: true });
  fs.mkdirSync(path.join(treeDir, "worktrees", "stray"));
  return { repo, treeDir };
}

function doctorTree(box: Sandbox, treeDir: string, json = false) {
  return runProcess(process.execPath, [WRAPPER_BIN, "doctor", "--tree", treeDir, ...(json ? ["--json"] : [])], {
    timeoutMs: 30_000,
    env: box.env,
  });
}

describe("doctor --tree", () => {
  it("lists every isolated agent's worktree in spawn order and says which are stale (exit 1)", async () => {
    const box = sandbox();
    const { treeDir } = await staleTree(box);
    const run = await doctorTree(box, treeDir);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(1);
    const out = run.stdout;
    expect(out).toMatch(
      new RegExp(
        `✓ /root/healthy +${treeDir}/worktrees/healthy on subagent/0badc0de-healthy \\(completed\\)\\n +branch subagent/0badc0de-healthy holds 0 commits beyond its base`,
      ),
    );
    expect(out).toMatch(
      /✗ \/root\/lost +.*worktrees\/lost on .* \(interrupted\) — stale: the folder is missing\n.*\n +→ its next turn \(or a restart of its parent\) recreates it from the branch/,
    );
    expect(out).toMatch(
      /✗ \/root\/shut +.* — stale: the agent is shut down but its worktree is still there\n.*\n +→ git worktree remove --force .*worktrees\/shut/,
    );
    expect(out).toMatch(
      /✓ \/root\/tidy +.*worktrees\/tidy \(removed\) on subagent\/0badc0de-tidy \(shutdown\)\n +branch subagent\/0badc0de-tidy deleted \(it held no commits\)/,
    );
    expect(out).toMatch(/✗ \(no agent\) +.*worktrees\/stray — stale: no agent of this tree owns it/);
    expect(out.indexOf("/root/healthy")).toBeLessThan(out.indexOf("/root/lost"));
    expect(out.endsWith("\n3 stale worktrees\n")).toBe(true);
  });

  it("--json gives the same checks; a tree with no isolated agent has none stale (exit 0); no tree there is exit 2", async () => {
    const box = sandbox();
    const { treeDir } = await staleTree(box);
    const json = await doctorTree(box, treeDir, true);
    const report = JSON.parse(json.stdout) as { ok: boolean; worktrees: Array<{ name: string; ok: boolean }> };
    expect(report.ok).toBe(false);
    expect(report.worktrees.map((check) => [check.name, check.ok])).toEqual([
      ["/root/healthy", true],
      ["/root/lost", false],
      ["/root/shut", false],
      ["/root/tidy", true],
      ["(no agent)", false],
    ]);

    const empty = path.join(box.dir, "empty-tree");
    fs.mkdirSync(path.join(empty, "agents"), { recursive: true });
    const none = await doctorTree(box, empty);
    expect(none.code).toBe(0);
    expect(none.stdout).toContain("no agent of this tree runs in its own worktree");
    expect(none.stdout.endsWith("\nno stale worktree\n")).toBe(true);

    const missing = await doctorTree(box, path.join(box.dir, "nothing"));
    expect(missing.code).toBe(2);
    expect(missing.stdout).toBe("");
    expect(missing.stderr).toMatch(/^subagent-wrapper doctor: .*nothing is not a tree directory/);
  });
});

describe("worktreeProblems", () => {
  const facts = {
    agent: "/root/a",
    status: "completed",
    path: "/t/w/a",
    branch: "subagent/x-a",
    folderExists: true,
    knownToGit: true,
    branchExists: true,
  };
  it.each<[string, Partial<typeof facts> & { gitError?: string }, string[]]>([
    ["intact", {}, []],
    ["a folder git does not know", { knownToGit: false }, ["git does not know this folder as a worktree"]],
    ["a branch gone", { branchExists: false }, ["branch subagent/x-a is gone"]],
    [
      "folder and branch gone",
      { folderExists: false, knownToGit: false, branchExists: false },
      ["branch subagent/x-a is gone", "the folder is missing"],
    ],
    ["shut down, all gone", { status: "shutdown", folderExists: false, knownToGit: false, branchExists: false }, []],
    [
      "shut down, still registered",
      { status: "shutdown", folderExists: false, knownToGit: true },
      ["the agent is shut down and its folder is gone, but git still lists the worktree"],
    ],
    ["git unreachable", { gitError: "no such directory" }, ["git could not be asked: no such directory"]],
  ])("%s", (_label, overrides, expected) => {
    expect(worktreeProblems({ ...facts, ...overrides }).map((p) => p.problem)).toEqual(expected);
  });
});
