/**
 * What clean decides, table by table (pure), and what it does against a real repository:
 * the decision `subagent-wrapper clean` and `/agents clean` share.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createWorktree } from "../../../src/extension/isolation/worktree.js";
import {
  type CleanFacts,
  carryOutClean,
  cleanFacts,
  cleanSubjects,
  planClean,
  planLines,
  resultLines,
  unknownNames,
} from "../../../src/lib/worktree-clean.js";
import { commitAll, makeRepo, sh, useSandbox, write } from "../extension/isolation/support.js";

const worktree = (name: string) => ({
  path: `/t/worktrees/${name}`,
  branch: `subagent/0badc0de-${name}`,
  baseCommit: "b".repeat(40),
  gitDir: "/repo/.git",
});

const fact = (name: string, over: Partial<CleanFacts> = {}): CleanFacts => ({
  agent: `/root/${name}`,
  status: "completed",
  worktree: worktree(name),
  folderExists: true,
  dirty: false,
  branchExists: true,
  commits: 0,
  ...over,
});

describe("planClean", () => {
  it("an ended agent's worktree goes, and its branch when it holds nothing beyond its base", () => {
    expect(planClean([fact("a")])).toEqual({
      steps: [
        {
          agent: "/root/a",
          gitDir: "/repo/.git",
          base: "b".repeat(40),
          branch: "subagent/0badc0de-a",
          worktreePath: "/t/worktrees/a",
          removeFolder: true,
          deleteBranch: { commits: 0 },
        },
      ],
      kept: [],
    });
  });

  it.each<[string, Partial<CleanFacts>, { folder: boolean; branch: boolean; kept?: RegExp }]>([
    ["a branch with commits stays", { commits: 2 }, { folder: true, branch: false, kept: /2 commits beyond its base/ }],
    ["a folder already gone: only the branch", { folderExists: false }, { folder: false, branch: true }],
    ["uncommitted changes: both stay", { dirty: true }, { folder: false, branch: false, kept: /uncommitted changes/ }],
    ["git could not be asked: both stay", { gitError: "boom" }, { folder: false, branch: false, kept: /boom/ }],
    ["in use: both stay", { inUse: "it is running" }, { folder: false, branch: false, kept: /it is running/ }],
  ])("%s", (_name, over, want) => {
    const plan = planClean([fact("a", over)]);
    expect(plan.steps.some((step) => step.removeFolder)).toBe(want.folder);
    expect(plan.steps.some((step) => step.deleteBranch)).toBe(want.branch);
    if (want.kept) expect(plan.kept[0]?.why).toMatch(want.kept);
    else expect(plan.kept).toEqual([]);
  });

  it("a branch with commits goes when named, by its name or its agent's path", () => {
    expect(planClean([fact("a", { commits: 2 })], new Set(["subagent/0badc0de-a"])).steps[0]?.deleteBranch).toEqual({
      commits: 2,
    });
    expect(planClean([fact("a", { commits: 2 })], new Set(["/root/a"])).steps[0]?.deleteBranch).toEqual({ commits: 2 });
    expect(unknownNames([fact("a")], new Set(["/root/a", "subagent/0badc0de-a", "nope"]))).toEqual(["nope"]);
  });

  it("lists what goes, then what stays and why", () => {
    const plan = planClean([fact("a"), fact("b", { commits: 1 }), fact("c", { inUse: "it is queued" })]);
    expect(planLines(plan)).toEqual([
      "to remove:",
      "  worktree /t/worktrees/a (/root/a)",
      "  branch subagent/0badc0de-a (no commits beyond its base)",
      "  worktree /t/worktrees/b (/root/b)",
      "kept:",
      "  branch subagent/0badc0de-b (/root/b): 1 commit beyond its base (name it to delete it)",
      "  /t/worktrees/c (/root/c): it is queued",
    ]);
    expect(planLines({ steps: [], kept: [] })).toEqual(["nothing to remove"]);
  });
});

describe("cleanSubjects", () => {
  it("an agent is in use while its turn runs or waits, or while an ancestor's does; the caller may know more", () => {
    const subjects = cleanSubjects(
      [
        { path: "/root/lead", status: "running" },
        { path: "/root/lead/sub", status: "completed", worktree: worktree("lead-sub") },
        { path: "/root/lead/sub/leaf", status: "completed", worktree: worktree("lead-sub-leaf") },
        { path: "/root/queued", status: "pending_init", worktree: worktree("queued") },
        { path: "/root/done", status: "interrupted", worktree: worktree("done") },
        { path: "/root/ending", status: "interrupted", worktree: worktree("ending") },
      ],
      (agent) => (agent === "/root/ending" ? "its turn is settling" : undefined),
    );
    expect(subjects.map((subject) => [subject.agent, subject.inUse])).toEqual([
      ["/root/lead/sub", "its parent /root/lead works and may follow it up"],
      ["/root/lead/sub/leaf", "its parent /root/lead works and may follow it up"],
      ["/root/queued", "it is queued"],
      ["/root/done", undefined],
      ["/root/ending", "its turn is settling"],
    ]);
  });
});

describe("carrying it out in a real repository", () => {
  const sandbox = useSandbox();

  it("removes the worktree and the branch without work, keeps the branch with work, and says what it did", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n" });
    const base = sh(box, repo, ["rev-parse", "HEAD"]).trim();
    const subjects = [];
    for (const name of ["idle", "worked"]) {
      const made = {
        path: path.join(box.dir, "tree", "worktrees", name),
        branch: `subagent/0badc0de-${name}`,
        baseCommit: base,
        gitDir: path.join(repo, ".git"),
      };
      await createWorktree({ topLevel: repo, worktreePath: made.path, branch: made.branch, base, env: box.env });
      subjects.push({ agent: `/root/${name}`, status: "completed", worktree: made });
    }
    write(path.join(box.dir, "tree", "worktrees", "worked", "b.txt"), "work\n");
    commitAll(box, path.join(box.dir, "tree", "worktrees", "worked"), "work");

    const facts = await cleanFacts(subjects, { env: box.env });
    expect(facts.map((f) => [f.agent, f.commits, f.dirty])).toEqual([
      ["/root/idle", 0, false],
      ["/root/worked", 1, false],
    ]);
    const results = await carryOutClean(planClean(facts), { env: box.env });
    expect(resultLines(results)).toEqual([
      `removed worktree ${box.dir}/tree/worktrees/idle (/root/idle)`,
      "deleted branch subagent/0badc0de-idle",
      `removed worktree ${box.dir}/tree/worktrees/worked (/root/worked)`,
    ]);
    expect(fs.readdirSync(path.join(box.dir, "tree", "worktrees"))).toEqual([]);
    expect(sh(box, repo, ["branch", "--format=%(refname:short)"]).split("\n").filter(Boolean).sort()).toEqual([
      "main",
      "subagent/0badc0de-worked",
    ]);
  });
});
