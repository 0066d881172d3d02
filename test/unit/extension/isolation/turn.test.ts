import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { snapshotWorkingState } from "../../../../src/extension/isolation/repository.js";
import { commitTurn, parseNumstat, worktreeSummary } from "../../../../src/extension/isolation/turn.js";
import { createWorktree } from "../../../../src/extension/isolation/worktree.js";
import { FALLBACK_IDENTITY } from "../../../../src/lib/git.js";
import { commitAll, makeRepo, type Sandbox, sh, treeFiles, useSandbox, write } from "./support.js";

const sandbox = useSandbox();

const NEWLINE_NAME = "line\nbreak.txt";
const UNICODE_NAME = "dé jà vu/名前 ü.txt";

async function isolatedChild(
  box: Sandbox,
  files: Record<string, string> = { "a.txt": "one\ntwo\nthree\n", "old.txt": "old\n" },
) {
  const repo = makeRepo(box, files);
  const base = await snapshotWorkingState(repo, { env: box.env });
  const worktree = await createWorktree({
    topLevel: repo,
    worktreePath: path.join(box.dir, "tree/worktrees/a"),
    branch: "subagent/0123abcd-a",
    base,
    env: box.env,
  });
  return { repo, base, worktree };
}

describe("commitTurn", () => {
  it("a turn that changed nothing makes no commit", async () => {
    const box = sandbox();
    const { base, worktree } = await isolatedChild(box);
    expect(await commitTurn({ worktreePath: worktree.path, message: "turn 1", env: box.env })).toEqual({
      head: base,
      committed: false,
    });
    expect(sh(box, worktree.path, ["rev-list", "--count", `${base}..HEAD`]).trim()).toBe("0");
  });

  it("commits everything (added, modified, deleted, odd names) on the branch, one commit per turn", async () => {
    const box = sandbox();
    const { repo, base, worktree } = await isolatedChild(box);
    const parentHead = sh(box, repo, ["rev-parse", "HEAD"]);
    write(path.join(worktree.path, "a.txt"), "one\n2\nthree\nfour\n");
    fs.rmSync(path.join(worktree.path, "old.txt"));
    write(path.join(worktree.path, NEWLINE_NAME), "x\n");
    write(path.join(worktree.path, UNICODE_NAME), "y\n");
    write(path.join(worktree.path, "staged.txt"), "s\n");
    sh(box, worktree.path, ["add", "staged.txt"]);

    const first = await commitTurn({ worktreePath: worktree.path, message: "turn 1\n\nbody", env: box.env });
    expect(first.committed).toBe(true);
    expect(sh(box, repo, ["rev-parse", "refs/heads/subagent/0123abcd-a"]).trim()).toBe(first.head);
    expect(sh(box, worktree.path, ["rev-parse", "HEAD^"]).trim()).toBe(base);
    expect(treeFiles(box, worktree.path, first.head)).toEqual(
      ["a.txt", NEWLINE_NAME, UNICODE_NAME, "staged.txt"].sort(),
    );
    expect(sh(box, worktree.path, ["log", "-1", "--format=%B", first.head]).trim()).toBe("turn 1\n\nbody");
    expect(sh(box, worktree.path, ["status", "--porcelain"])).toBe("");
    expect(sh(box, repo, ["rev-parse", "HEAD"])).toBe(parentHead);

    write(path.join(worktree.path, "a.txt"), "turn two\n");
    const second = await commitTurn({ worktreePath: worktree.path, message: "turn 2", env: box.env });
    expect(second.committed).toBe(true);
    expect(sh(box, worktree.path, ["rev-list", "--count", `${base}..HEAD`]).trim()).toBe("2");
    expect(await commitTurn({ worktreePath: worktree.path, message: "turn 3", env: box.env })).toEqual({
      head: second.head,
      committed: false,
    });
  });

  it("keeps the child's own commits and adds what is left uncommitted on top", async () => {
    const box = sandbox();
    const { base, worktree } = await isolatedChild(box);
    write(path.join(worktree.path, "mine.txt"), "mine\n");
    const own = commitAll(box, worktree.path, "the child's own commit");
    write(path.join(worktree.path, "rest.txt"), "rest\n");
    const turn = await commitTurn({ worktreePath: worktree.path, message: "turn", env: box.env });
    expect(
      sh(box, worktree.path, ["rev-list", "--reverse", `${base}..HEAD`])
        .trim()
        .split("\n"),
    ).toEqual([own, turn.head]);
  });

  it("commits with no git identity anywhere, and never runs hooks", async () => {
    const box = sandbox();
    const { repo, worktree } = await isolatedChild(box);
    const marker = path.join(box.dir, "hook-ran");
    for (const hook of ["pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "reference-transaction"]) {
      write(path.join(repo, ".git/hooks", hook), `#!/bin/sh\necho ${hook} >> "${marker}"\nexit 1\n`);
      fs.chmodSync(path.join(repo, ".git/hooks", hook), 0o755);
    }
    write(path.join(worktree.path, "a.txt"), "changed\n");
    const turn = await commitTurn({ worktreePath: worktree.path, message: "turn", env: box.env });
    expect(turn.committed).toBe(true);
    expect(sh(box, worktree.path, ["log", "-1", "--format=%an <%ae>", turn.head]).trim()).toBe(
      `${FALLBACK_IDENTITY.name} <${FALLBACK_IDENTITY.email}>`,
    );
    expect(fs.existsSync(marker)).toBe(false);
  });

  it("uses the repository's identity when one is configured", async () => {
    const box = sandbox();
    const { repo, worktree } = await isolatedChild(box);
    sh(box, repo, ["config", "user.name", "Grace Hopper"]);
    sh(box, repo, ["config", "user.email", "grace@example.com"]);
    write(path.join(worktree.path, "a.txt"), "changed\n");
    const turn = await commitTurn({ worktreePath: worktree.path, message: "turn", env: box.env });
    expect(sh(box, worktree.path, ["log", "-1", "--format=%an <%ae>|%cn", turn.head]).trim()).toBe(
      "Grace Hopper <grace@example.com>|Grace Hopper",
    );
  });
});

describe("worktreeSummary", () => {
  it("counts changed paths and lines since the base; a binary file is a changed file with 0/0", async () => {
    const box = sandbox();
    const { base, worktree } = await isolatedChild(box);
    write(path.join(worktree.path, "a.txt"), "one\n2\nthree\nfour\n"); // +2 −1
    fs.rmSync(path.join(worktree.path, "old.txt")); // −1
    write(path.join(worktree.path, NEWLINE_NAME), "x\ny\n"); // +2
    write(path.join(worktree.path, UNICODE_NAME), "z\n"); // +1
    write(path.join(worktree.path, "with space.bin"), Buffer.from([0, 1, 2, 3, 0, 255]));
    const { head } = await commitTurn({ worktreePath: worktree.path, message: "turn", env: box.env });
    expect(await worktreeSummary({ worktreePath: worktree.path, base, head, env: box.env })).toEqual({
      changed_files: ["a.txt", UNICODE_NAME, NEWLINE_NAME, "old.txt", "with space.bin"].sort(),
      insertions: 5,
      deletions: 2,
    });
  });

  it("lists at most maxFiles paths, sorted, and then gives the total", async () => {
    const box = sandbox();
    const { base, worktree } = await isolatedChild(box);
    for (let i = 0; i < 60; i++) write(path.join(worktree.path, `f${String(i).padStart(2, "0")}.txt`), "line\n");
    const { head } = await commitTurn({ worktreePath: worktree.path, message: "turn", env: box.env });
    const summary = await worktreeSummary({ worktreePath: worktree.path, base, head, env: box.env });
    expect(summary.changed_files).toHaveLength(50);
    expect(summary.changed_files[0]).toBe("f00.txt");
    expect(summary.changed_files[49]).toBe("f49.txt");
    expect(summary.changed_files_total).toBe(60);
    expect(summary.insertions).toBe(60);
    const small = await worktreeSummary({ worktreePath: worktree.path, base, head, maxFiles: 100, env: box.env });
    expect(small.changed_files).toHaveLength(60);
    expect("changed_files_total" in small).toBe(false);
  });

  it("is empty for a branch with no changes", async () => {
    const box = sandbox();
    const { base, worktree } = await isolatedChild(box);
    expect(await worktreeSummary({ worktreePath: worktree.path, base, head: base, env: box.env })).toEqual({
      changed_files: [],
      insertions: 0,
      deletions: 0,
    });
  });

  it("parseNumstat reads -z records, tabs in names included", () => {
    expect(parseNumstat("3\t1\ta.txt\0-\t-\tb.bin\0" + "0\t2\tname\twith tab\0")).toEqual({
      files: ["a.txt", "b.bin", "name\twith tab"],
      insertions: 3,
      deletions: 3,
    });
    expect(parseNumstat("")).toEqual({ files: [], insertions: 0, deletions: 0 });
  });
});
