import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { branchName, worktreeName } from "../../../../src/extension/isolation/names.js";
import { snapshotWorkingState } from "../../../../src/extension/isolation/repository.js";
import { startupFolders } from "../../../../src/extension/isolation/staged-checkout.js";
import {
  createWorktree,
  ensureWorktree,
  isCheckedOut,
  removeWorktree,
} from "../../../../src/extension/isolation/worktree.js";
import { treeTag } from "../../../../src/extension/tree/paths.js";
import { branchCommit, listWorktrees, parseWorktreeList } from "../../../../src/lib/git-worktrees.js";
import { commitAll, gitShim, makeRepo, type Sandbox, sh, useSandbox, write } from "./support.js";

const sandbox = useSandbox();

/** A repository with a dirty working tree, its snapshot, and a tag: what a spawn starts from. */
async function parentRepo(box: Sandbox) {
  const repo = makeRepo(box, { "a.txt": "a\n", "src/lib/b.txt": "b\n" });
  write(path.join(repo, "a.txt"), "a, uncommitted\n");
  const base = await snapshotWorkingState(repo, { env: box.env });
  return { repo, base, tag: treeTag(), worktrees: path.join(box.dir, "tree", "worktrees") };
}

const later = (ms: number, action: () => void): Promise<void> =>
  new Promise((resolve) => setTimeout(() => resolve(action()), ms));

describe("createWorktree", () => {
  it("makes a worktree of the base on a new branch, and the child's cwd in it", async () => {
    const box = sandbox();
    const { repo, base, tag, worktrees } = await parentRepo(box);
    const branch = branchName(tag, "/root/lead/checker");
    const worktreePath = path.join(worktrees, worktreeName("/root/lead/checker"));
    const headBefore = sh(box, repo, ["rev-parse", "HEAD"]);

    const worktree = await createWorktree({
      topLevel: repo,
      worktreePath,
      branch,
      base,
      subdir: "src/lib",
      env: box.env,
    });

    expect(worktree).toEqual({ path: worktreePath, branch, base, cwd: path.join(worktreePath, "src/lib") });
    expect(fs.readFileSync(path.join(worktreePath, "a.txt"), "utf8")).toBe("a, uncommitted\n");
    expect(fs.readFileSync(path.join(worktree.cwd, "b.txt"), "utf8")).toBe("b\n");
    expect(sh(box, worktreePath, ["rev-parse", "HEAD"]).trim()).toBe(base);
    expect(sh(box, worktreePath, ["symbolic-ref", "--short", "HEAD"]).trim()).toBe(branch);
    expect(sh(box, worktreePath, ["status", "--porcelain"])).toBe("");
    expect(sh(box, repo, ["rev-parse", "HEAD"])).toBe(headBefore);
    expect(await branchCommit(repo, branch, { env: box.env })).toBe(base);
  });

  it("creates the child's cwd when git has nothing there (a folder of ignored files)", async () => {
    const box = sandbox();
    const { repo, base, tag, worktrees } = await parentRepo(box);
    const worktree = await createWorktree({
      topLevel: repo,
      worktreePath: path.join(worktrees, "a"),
      branch: branchName(tag, "/root/a"),
      base,
      subdir: "build/out",
      env: box.env,
    });
    expect(fs.statSync(worktree.cwd).isDirectory()).toBe(true);
  });

  it("8 at once in one repository all succeed", async () => {
    const box = sandbox();
    const { repo, base, tag, worktrees } = await parentRepo(box);
    const agents = Array.from({ length: 8 }, (_, i) => `/root/worker_${i}`);
    const created = await Promise.all(
      agents.map((agent) =>
        createWorktree({
          topLevel: repo,
          worktreePath: path.join(worktrees, worktreeName(agent)),
          branch: branchName(tag, agent),
          base,
          env: box.env,
        }),
      ),
    );
    const listed = await listWorktrees(repo, { env: box.env });
    expect(listed).toHaveLength(9);
    for (const worktree of created) {
      expect(listed).toContainEqual({ path: worktree.path, head: base, branch: worktree.branch });
      expect(fs.readFileSync(path.join(worktree.path, "a.txt"), "utf8")).toBe("a, uncommitted\n");
    }
  });

  it("8 at once alongside other git processes in the same repository (cross-process locks) all succeed", async () => {
    const box = sandbox();
    const { repo, base, tag, worktrees } = await parentRepo(box);
    sh(box, repo, ["pack-refs", "--all"]);
    const { spawn } = await import("node:child_process");
    // Other processes creating and deleting branches and worktrees: packed-refs.lock, worktrees/.
    const others = Array.from(
      { length: 6 },
      (_, i) =>
        new Promise<void>((resolve) => {
          const script = `git worktree add -q -b other_${i} "${path.join(box.dir, `other_${i}`)}" HEAD; git branch -q tmp_${i}; git branch -q -D tmp_${i}`;
          spawn("/bin/sh", ["-c", script], { cwd: repo, env: box.env, stdio: "ignore" }).on("close", () => resolve());
        }),
    );
    const agents = Array.from({ length: 8 }, (_, i) => `/root/lead/w_${i}`);
    const created = await Promise.all(
      agents.map((agent) =>
        createWorktree({
          topLevel: repo,
          worktreePath: path.join(worktrees, worktreeName(agent)),
          branch: branchName(tag, agent),
          base,
          env: box.env,
        }),
      ),
    );
    await Promise.all(others);
    const listed = await listWorktrees(repo, { env: box.env });
    for (const worktree of created)
      expect(listed.find((entry) => entry.path === worktree.path)?.branch).toBe(worktree.branch);
  });

  it("waits out a ref lock another process holds", async () => {
    const box = sandbox();
    const { repo, base, tag, worktrees } = await parentRepo(box);
    const branch = branchName(tag, "/root/a");
    const lock = path.join(repo, ".git", "refs", "heads", `${branch}.lock`);
    write(lock, "");
    const release = later(300, () => fs.rmSync(lock));
    const worktree = await createWorktree({
      topLevel: repo,
      worktreePath: path.join(worktrees, "a"),
      branch,
      base,
      env: box.env,
    });
    await release;
    expect(await branchCommit(repo, worktree.branch, { env: box.env })).toBe(base);
  });

  it("gives up on a lock held for longer than the lock wait, naming the command", async () => {
    const box = sandbox();
    const { repo, base, tag, worktrees } = await parentRepo(box);
    const branch = branchName(tag, "/root/a");
    write(path.join(repo, ".git", "refs", "heads", `${branch}.lock`), "");
    const started = Date.now();
    await expect(
      createWorktree({
        topLevel: repo,
        worktreePath: path.join(worktrees, "a"),
        branch,
        base,
        env: box.env,
        lockWaitMs: 300,
      }),
    ).rejects.toThrow(/^git worktree add .*failed \(exit \d+\): .*Unable to create '.*\.lock': File exists/s);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("refuses an existing branch and a base that is not a commit", async () => {
    const box = sandbox();
    const { repo, base, worktrees } = await parentRepo(box);
    sh(box, repo, ["branch", "subagent/00000000-a"]);
    await expect(
      createWorktree({
        topLevel: repo,
        worktreePath: path.join(worktrees, "a"),
        branch: "subagent/00000000-a",
        base,
        env: box.env,
      }),
    ).rejects.toThrow(/already exists/);
    await expect(
      createWorktree({
        topLevel: repo,
        worktreePath: path.join(worktrees, "b"),
        branch: "subagent/00000000-b",
        base: "f".repeat(40),
        env: box.env,
      }),
    ).rejects.toThrow(/is not a commit of/);
    expect(fs.existsSync(path.join(worktrees, "a"))).toBe(false);
  });
});

describe("listWorktrees", () => {
  it("lists the main worktree first, then linked ones with branch, detached, locked and prunable", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n" });
    const head = sh(box, repo, ["rev-parse", "HEAD"]).trim();
    const weird = path.join(box.dir, "with space\nand newline");
    sh(box, repo, ["worktree", "add", "-q", "-b", "one", weird]);
    sh(box, repo, ["worktree", "add", "-q", "--detach", path.join(box.dir, "detached")]);
    sh(box, repo, ["worktree", "add", "-q", "-b", "locked", path.join(box.dir, "locked")]);
    sh(box, repo, ["worktree", "lock", path.join(box.dir, "locked")]);
    sh(box, repo, ["worktree", "add", "-q", "-b", "gone", path.join(box.dir, "gone")]);
    fs.rmSync(path.join(box.dir, "gone"), { recursive: true });
    expect(await listWorktrees(repo, { env: box.env })).toEqual([
      { path: repo, head, branch: "main" },
      { path: path.join(box.dir, "detached"), head, detached: true },
      { path: path.join(box.dir, "gone"), head, branch: "gone", prunable: true },
      { path: path.join(box.dir, "locked"), head, branch: "locked", locked: true },
      { path: weird, head, branch: "one" },
    ]);
  });

  it("parses the line format of git before 2.36 (no -z)", () => {
    const text =
      "worktree /r\nHEAD abc\nbranch refs/heads/main\n\nworktree /r/../w\nHEAD def\ndetached\nlocked reason\n\nworktree /b.git\nbare\n\n";
    expect(parseWorktreeList(text, "\n")).toEqual([
      { path: "/r", head: "abc", branch: "main" },
      { path: "/r/../w", head: "def", detached: true, locked: true },
      { path: "/b.git", bare: true },
    ]);
  });
});

describe("removeWorktree", () => {
  it("removes the worktree and its branch when the branch holds nothing beyond the base; twice is harmless", async () => {
    const box = sandbox();
    const { repo, base, tag, worktrees } = await parentRepo(box);
    const branch = branchName(tag, "/root/a");
    const worktree = await createWorktree({
      topLevel: repo,
      worktreePath: path.join(worktrees, "a"),
      branch,
      base,
      env: box.env,
    });
    write(path.join(worktree.path, "uncommitted.txt"), "dropped with the worktree\n");
    expect(await removeWorktree({ topLevel: repo, worktreePath: worktree.path, branch, base, env: box.env })).toEqual({
      removed: true,
      branchDeleted: true,
    });
    expect(fs.existsSync(worktree.path)).toBe(false);
    expect((await listWorktrees(repo, { env: box.env })).map((entry) => entry.path)).toEqual([repo]);
    expect(await branchCommit(repo, branch, { env: box.env })).toBeUndefined();
    expect(await removeWorktree({ topLevel: repo, worktreePath: worktree.path, branch, base, env: box.env })).toEqual({
      removed: false,
      branchDeleted: false,
    });
  });

  it("keeps a branch that holds commits", async () => {
    const box = sandbox();
    const { repo, base, tag, worktrees } = await parentRepo(box);
    const branch = branchName(tag, "/root/a");
    const worktree = await createWorktree({
      topLevel: repo,
      worktreePath: path.join(worktrees, "a"),
      branch,
      base,
      env: box.env,
    });
    write(path.join(worktree.path, "work.txt"), "work\n");
    const tip = commitAll(box, worktree.path, "child work");
    expect(await removeWorktree({ topLevel: repo, worktreePath: worktree.path, branch, base, env: box.env })).toEqual({
      removed: true,
      branchDeleted: false,
    });
    expect(await branchCommit(repo, branch, { env: box.env })).toBe(tip);
    expect(await listWorktrees(repo, { env: box.env })).toHaveLength(1);
  });

  it("when the folder is already gone (git refuses to remove it), prunes it", async () => {
    const box = sandbox();
    const { repo, base, tag, worktrees } = await parentRepo(box);
    const branch = branchName(tag, "/root/a");
    const worktree = await createWorktree({
      topLevel: repo,
      worktreePath: path.join(worktrees, "a"),
      branch,
      base,
      env: box.env,
    });
    fs.rmSync(worktree.path, { recursive: true });
    expect(await removeWorktree({ topLevel: repo, worktreePath: worktree.path, branch, base, env: box.env })).toEqual({
      removed: true,
      branchDeleted: true,
    });
    expect(await listWorktrees(repo, { env: box.env })).toHaveLength(1);
  });

  it("removes a worktree someone locked", async () => {
    const box = sandbox();
    const { repo, base, tag, worktrees } = await parentRepo(box);
    const branch = branchName(tag, "/root/a");
    const worktree = await createWorktree({
      topLevel: repo,
      worktreePath: path.join(worktrees, "a"),
      branch,
      base,
      env: box.env,
    });
    sh(box, repo, ["worktree", "lock", worktree.path]);
    expect(await removeWorktree({ topLevel: repo, worktreePath: worktree.path, branch, base, env: box.env })).toEqual({
      removed: true,
      branchDeleted: true,
    });
    expect(await listWorktrees(repo, { env: box.env })).toHaveLength(1);
  });

  it("removes a worktree whose repository moved since", async () => {
    const box = sandbox();
    const { repo, base, tag, worktrees } = await parentRepo(box);
    const branch = branchName(tag, "/root/a");
    const worktree = await createWorktree({
      topLevel: repo,
      worktreePath: path.join(worktrees, "a"),
      branch,
      base,
      env: box.env,
    });
    const moved = path.join(box.dir, "moved");
    fs.renameSync(repo, moved);
    expect(await removeWorktree({ topLevel: moved, worktreePath: worktree.path, branch, base, env: box.env })).toEqual({
      removed: true,
      branchDeleted: true,
    });
    expect(fs.existsSync(worktree.path)).toBe(false);
    expect(await listWorktrees(moved, { env: box.env })).toHaveLength(1);
  });

  it("never deletes a folder that is not a worktree of the repository", async () => {
    const box = sandbox();
    const { repo, base } = await parentRepo(box);
    const precious = path.join(box.dir, "precious");
    write(path.join(precious, "keep.txt"), "keep\n");
    expect(
      await removeWorktree({
        topLevel: repo,
        worktreePath: precious,
        branch: "subagent/00000000-x",
        base,
        env: box.env,
      }),
    ).toEqual({
      removed: false,
      branchDeleted: false,
    });
    expect(fs.readFileSync(path.join(precious, "keep.txt"), "utf8")).toBe("keep\n");
    // Not the main worktree either: git refuses, and so does the fallback.
    await expect(
      removeWorktree({ topLevel: repo, worktreePath: repo, branch: "main", base, env: box.env }),
    ).rejects.toThrow(/is a main working tree/);
    expect(fs.existsSync(path.join(repo, "a.txt"))).toBe(true);
  });

  it("8 at once (with packed refs, so each branch deletion takes packed-refs.lock) all succeed", async () => {
    const box = sandbox();
    const { repo, base, tag, worktrees } = await parentRepo(box);
    const agents = Array.from({ length: 8 }, (_, i) => `/root/w_${i}`);
    const created = await Promise.all(
      agents.map((agent) =>
        createWorktree({
          topLevel: repo,
          worktreePath: path.join(worktrees, worktreeName(agent)),
          branch: branchName(tag, agent),
          base,
          env: box.env,
        }),
      ),
    );
    sh(box, repo, ["pack-refs", "--all"]);
    const lock = path.join(repo, ".git", "packed-refs.lock");
    write(lock, "");
    const release = later(300, () => fs.rmSync(lock));
    const results = await Promise.all(
      created.map((worktree) =>
        removeWorktree({ topLevel: repo, worktreePath: worktree.path, branch: worktree.branch, base, env: box.env }),
      ),
    );
    await release;
    expect(results).toEqual(Array.from({ length: 8 }, () => ({ removed: true, branchDeleted: true })));
    expect(sh(box, repo, ["branch", "--list", "subagent/*"])).toBe("");
  });
});

describe("ensureWorktree", () => {
  it("recreates a missing worktree from its branch, with the branch's commits; leaves a present one alone", async () => {
    const box = sandbox();
    const { repo, base, tag, worktrees } = await parentRepo(box);
    const branch = branchName(tag, "/root/a");
    const worktree = await createWorktree({
      topLevel: repo,
      worktreePath: path.join(worktrees, "a"),
      branch,
      base,
      subdir: "src",
      env: box.env,
    });
    write(path.join(worktree.path, "work.txt"), "work\n");
    const tip = commitAll(box, worktree.path, "child work");

    expect(
      await ensureWorktree({ topLevel: repo, worktreePath: worktree.path, branch, subdir: "src", env: box.env }),
    ).toEqual({
      created: false,
      cwd: worktree.cwd,
    });
    fs.rmSync(worktree.path, { recursive: true });
    expect(
      await ensureWorktree({ topLevel: repo, worktreePath: worktree.path, branch, subdir: "src", env: box.env }),
    ).toEqual({
      created: true,
      cwd: worktree.cwd,
    });
    expect(fs.readFileSync(path.join(worktree.path, "work.txt"), "utf8")).toBe("work\n");
    expect(sh(box, worktree.path, ["rev-parse", "HEAD"]).trim()).toBe(tip);
    expect((await listWorktrees(repo, { env: box.env })).filter((entry) => entry.path === worktree.path)).toEqual([
      { path: worktree.path, head: tip, branch },
    ]);
  });

  it("finishes the checkout of a worktree a stopped process registered but never filled", async () => {
    const box = sandbox();
    const { repo, base, tag, worktrees } = await parentRepo(box);
    const branch = branchName(tag, "/root/a");
    const worktreePath = path.join(worktrees, "a");
    sh(box, repo, ["worktree", "add", "-q", "--no-checkout", "-b", branch, worktreePath, base]);
    expect(fs.readdirSync(worktreePath)).toEqual([".git"]);
    expect(await ensureWorktree({ topLevel: repo, worktreePath, branch, env: box.env })).toEqual({
      created: false,
      cwd: worktreePath,
    });
    expect(fs.readFileSync(path.join(worktreePath, "a.txt"), "utf8")).toBe("a, uncommitted\n");
    expect(sh(box, worktreePath, ["status", "--porcelain"])).toBe("");
  });

  it("repairs a worktree whose repository moved", async () => {
    const box = sandbox();
    const { repo, base, tag, worktrees } = await parentRepo(box);
    const branch = branchName(tag, "/root/a");
    const worktree = await createWorktree({
      topLevel: repo,
      worktreePath: path.join(worktrees, "a"),
      branch,
      base,
      env: box.env,
    });
    const moved = path.join(box.dir, "moved");
    fs.renameSync(repo, moved);
    expect(await ensureWorktree({ topLevel: moved, worktreePath: worktree.path, branch, env: box.env })).toEqual({
      created: false,
      cwd: worktree.path,
    });
    expect(sh(box, worktree.path, ["rev-parse", "HEAD"]).trim()).toBe(base);
  });

  it("throws when both the folder and the branch are gone", async () => {
    const box = sandbox();
    const { repo, worktrees } = await parentRepo(box);
    await expect(
      ensureWorktree({
        topLevel: repo,
        worktreePath: path.join(worktrees, "a"),
        branch: "subagent/00000000-a",
        env: box.env,
      }),
    ).rejects.toThrow(/cannot recreate worktree .*: branch subagent\/00000000-a does not exist/);
  });
});

describe("startupFolders", () => {
  it("names .pi and .agents at every level from the top down to the cwd", () => {
    expect(startupFolders("")).toEqual([".pi", ".agents"]);
    expect(startupFolders("src/lib")).toEqual([
      ".pi",
      ".agents",
      "src/.pi",
      "src/.agents",
      "src/lib/.pi",
      "src/lib/.agents",
    ]);
  });
});

describe("createWorktree with deferCheckout", () => {
  /** A parent whose project has pi folders and context files at several levels, and plenty of other files. */
  async function projectWithPiFolders(box: Sandbox, settings = '{"theme":"dark"}\n') {
    const files: Record<string, string> = {
      ".pi/settings.json": settings,
      ".agents/skills/top/SKILL.md": "top skill\n",
      "src/lib/.agents/skills/deep/SKILL.md": "deep skill\n",
      "src/.pi/prompts/p.md": "a level between\n",
      "AGENTS.md": "top context\n",
      "src/lib/AGENTS.override.md": "cwd context\n",
      ".github/workflow.yml": "not pi's\n",
      "other/.pi/settings.json": "not on the way to the cwd\n",
    };
    for (let i = 0; i < 300; i++) files[`src/lib/data/f${i}.txt`] = `${i}\n`;
    const repo = makeRepo(box, files);
    fs.symlinkSync("AGENTS.md", path.join(repo, "CLAUDE.md"));
    write(path.join(repo, "src", "lib", "data", "untracked.txt"), "seen by the child\n");
    const base = await snapshotWorkingState(repo, { env: box.env });
    return { repo, base, tag: treeTag(), worktrees: path.join(box.dir, "tree", "worktrees") };
  }

  const EARLY = [
    ".pi/settings.json",
    ".agents/skills/top/SKILL.md",
    "src/.pi/prompts/p.md",
    "src/lib/.agents/skills/deep/SKILL.md",
    "AGENTS.md",
    "CLAUDE.md",
    "src/lib/AGENTS.override.md",
  ];

  it("returns with what pi reads before a tool call written (context files, pi's folders on the way to the cwd); finishCheckout writes the rest, and the index appears when every file is there", async () => {
    const box = sandbox();
    const { base, tag, worktrees, repo } = await projectWithPiFolders(box);
    const worktreePath = path.join(worktrees, "a");
    const made = await createWorktree({
      topLevel: repo,
      worktreePath,
      branch: branchName(tag, "/root/a"),
      base,
      subdir: "src/lib",
      env: box.env,
      deferCheckout: true,
    });
    expect(made.finishCheckout).toBeTypeOf("function");
    expect(made.cwd).toBe(path.join(worktreePath, "src/lib"));
    const early = await isCheckedOut(worktreePath);
    for (const file of EARLY) expect(fs.existsSync(path.join(worktreePath, file)), file).toBe(true);
    expect(fs.readFileSync(path.join(worktreePath, "CLAUDE.md"), "utf8")).toBe("top context\n");
    for (const file of ["src/lib/data/f1.txt", ".github/workflow.yml", "other/.pi/settings.json"])
      expect(fs.existsSync(path.join(worktreePath, file)), file).toBe(false);
    const inodes = EARLY.map((file) => fs.lstatSync(path.join(worktreePath, file)).ino);
    await made.finishCheckout!();
    expect(early).toBe(false);
    expect(await isCheckedOut(worktreePath)).toBe(true);
    // Written once: never unlinked and recreated under a child that may be reading them.
    expect(EARLY.map((file) => fs.lstatSync(path.join(worktreePath, file)).ino)).toEqual(inodes);
    expect(fs.readFileSync(path.join(made.cwd, "data", "untracked.txt"), "utf8")).toBe("seen by the child\n");
    expect(fs.readdirSync(path.join(made.cwd, "data")).filter((name) => name.startsWith("f"))).toHaveLength(300);
    expect(sh(box, worktreePath, ["status", "--porcelain"])).toBe("");
    expect(
      fs
        .readdirSync(sh(box, worktreePath, ["rev-parse", "--absolute-git-dir"]).trim())
        .filter((name) => name.startsWith("pi-subagent")),
    ).toEqual([]);
  });

  it("waits for every file when the cwd's .pi/settings.json names resources (they may lie anywhere in the project)", async () => {
    const box = sandbox();
    const { base, tag, worktrees, repo } = await projectWithPiFolders(box, '{"packages":["../../tools/pkg"]}\n');
    const made = await createWorktree({
      topLevel: repo,
      worktreePath: path.join(worktrees, "a"),
      branch: branchName(tag, "/root/a"),
      base,
      env: box.env,
      deferCheckout: true,
    });
    expect(made.finishCheckout).toBeUndefined();
    expect(await isCheckedOut(made.path)).toBe(true);
    expect(fs.existsSync(path.join(made.path, "src/lib/data/f299.txt"))).toBe(true);
  });

  it("waits for every file when a pi folder, or a context file, is a symbolic link to a file written later", async () => {
    const box = sandbox();
    for (const [name, link, target] of [
      ["folder", ".pi", "shared/pi"],
      ["context", "AGENTS.md", "docs/agents.md"],
    ] as const) {
      const repo = makeRepo(box, { "shared/pi/settings.json": "{}\n", "docs/agents.md": "agents\n" }, `repo-${name}`);
      fs.symlinkSync(target, path.join(repo, link));
      const base = commitAll(box, repo, `link ${link}`);
      const worktreePath = path.join(box.dir, `wt-${name}`);
      const made = await createWorktree({
        topLevel: repo,
        worktreePath,
        branch: branchName(treeTag(), "/root/a"),
        base,
        env: box.env,
        deferCheckout: true,
      });
      expect(made.finishCheckout, link).toBeUndefined();
      expect(await isCheckedOut(worktreePath)).toBe(true);
      // Through the link, the file it leads to is there.
      expect(
        fs.readFileSync(path.join(worktreePath, link, ...(name === "folder" ? ["settings.json"] : [])), "utf8"),
      ).toBe(name === "folder" ? "{}\n" : "agents\n");
    }
  });

  it("still starts early with a symbolic link pi does not read as it starts (a folder elsewhere in the project)", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "scripts/tools/run.sh": "echo run\n", "AGENTS.md": "agents\n" });
    fs.symlinkSync("scripts/tools", path.join(repo, "tools"));
    const base = commitAll(box, repo, "link tools");
    const made = await createWorktree({
      topLevel: repo,
      worktreePath: path.join(box.dir, "wt"),
      branch: branchName(treeTag(), "/root/a"),
      base,
      env: box.env,
      deferCheckout: true,
    });
    expect(made.finishCheckout).toBeTypeOf("function");
    await made.finishCheckout!();
    expect(fs.readFileSync(path.join(made.path, "tools", "run.sh"), "utf8")).toBe("echo run\n");
  });

  it("a checkout that fails rejects finishCheckout and leaves no index, so a later ensureWorktree writes it again", async () => {
    const box = sandbox();
    const { base, tag, worktrees, repo } = await projectWithPiFolders(box);
    const branch = branchName(tag, "/root/a");
    const worktreePath = path.join(worktrees, "a");
    const failing = gitShim(box, "read-tree", "echo 'fatal: the disk is full' >&2; exit 128");
    const made = await createWorktree({
      topLevel: repo,
      worktreePath,
      branch,
      base,
      subdir: "src/lib",
      env: failing,
      deferCheckout: true,
    });
    await expect(made.finishCheckout!()).rejects.toThrow(/read-tree .*the disk is full/);
    expect(await isCheckedOut(worktreePath)).toBe(false);
    await ensureWorktree({ topLevel: repo, worktreePath, branch, subdir: "src/lib", env: box.env });
    expect(await isCheckedOut(worktreePath)).toBe(true);
    expect(sh(box, worktreePath, ["status", "--porcelain"])).toBe("");
  });
});

describe("isCheckedOut", () => {
  it("is true for a finished worktree, false for a folder, a missing one, or one registered but never checked out", async () => {
    const box = sandbox();
    const { repo, base, tag, worktrees } = await parentRepo(box);
    const made = await createWorktree({
      topLevel: repo,
      worktreePath: path.join(worktrees, "a"),
      branch: branchName(tag, "/root/a"),
      base,
      env: box.env,
    });
    expect(await isCheckedOut(made.path)).toBe(true);
    expect(await isCheckedOut(repo)).toBe(false); // the main working tree has a .git folder, not a link
    expect(await isCheckedOut(path.join(worktrees, "nothing"))).toBe(false);
    const bare = path.join(worktrees, "b");
    sh(box, repo, ["worktree", "add", "-q", "--no-checkout", "-b", branchName(tag, "/root/b"), bare, base]);
    expect(await isCheckedOut(bare)).toBe(false);
  });
});
