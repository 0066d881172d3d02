import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  findRepository,
  snapshotWorkingState,
  untrackedPaths,
} from "../../../../src/extension/isolation/repository.js";
import { createWorktree } from "../../../../src/extension/isolation/worktree.js";
import { FALLBACK_IDENTITY } from "../../../../src/lib/git.js";
import { AS_SETUP, commitAll, makeRepo, type Sandbox, sh, show, treeFiles, useSandbox, write } from "./support.js";

const sandbox = useSandbox();

const NEWLINE_NAME = "new\nline.txt";
const UNICODE_NAME = "ünï cødé 名前.md";

const shOr = (box: Sandbox, cwd: string, args: string[], fallback: string): string => {
  try {
    return sh(box, cwd, args);
  } catch {
    return fallback;
  }
};

/** Everything a snapshot must leave as it was. */
function parentState(box: Sandbox, repo: string) {
  const gitDir = path.join(repo, sh(box, repo, ["rev-parse", "--git-dir"]).trim());
  return {
    head: shOr(box, repo, ["rev-parse", "--verify", "--quiet", "HEAD"], "unborn"),
    symbolicHead: sh(box, repo, ["symbolic-ref", "HEAD"]),
    refs: sh(box, repo, ["for-each-ref", "--format=%(refname) %(objectname)"]),
    cached: sh(box, repo, ["diff", "--cached", "--binary"]),
    index: fs.existsSync(path.join(gitDir, "index"))
      ? fs.readFileSync(path.join(gitDir, "index")).toString("base64")
      : "none",
    status: sh(box, repo, ["--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=all"]),
    worktrees: sh(box, repo, ["worktree", "list", "--porcelain"]),
  };
}

describe("findRepository", () => {
  it("reports the top of the working tree and the cwd below it", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n", "src/lib/b.ts": "b\n", "with space/ü/c.txt": "c\n" });
    const { env } = box;
    expect(await findRepository(repo, { env })).toEqual({ topLevel: repo, subdir: "" });
    expect(await findRepository(path.join(repo, "src/lib"), { env })).toEqual({ topLevel: repo, subdir: "src/lib" });
    expect(await findRepository(path.join(repo, "with space/ü"), { env })).toEqual({
      topLevel: repo,
      subdir: "with space/ü",
    });
  });

  it("is undefined outside any working tree: a plain folder, a bare repository, a .git folder", async () => {
    const box = sandbox();
    const plain = path.join(box.dir, "plain");
    fs.mkdirSync(plain);
    expect(await findRepository(plain, { env: box.env })).toBeUndefined();
    const bare = path.join(box.dir, "bare.git");
    sh(box, box.dir, ["init", "-q", "--bare", bare]);
    expect(await findRepository(bare, { env: box.env })).toBeUndefined();
    const repo = makeRepo(box, { "a.txt": "a\n" });
    expect(await findRepository(path.join(repo, ".git"), { env: box.env })).toBeUndefined();
    expect(await findRepository(path.join(repo, ".git", "refs"), { env: box.env })).toBeUndefined();
  });

  it("inside a linked worktree, finds that worktree", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "src/a.txt": "a\n" });
    const linked = path.join(box.dir, "linked");
    sh(box, repo, ["worktree", "add", "-q", "-b", "side", linked]);
    expect(fs.statSync(path.join(linked, ".git")).isFile()).toBe(true);
    expect(await findRepository(path.join(linked, "src"), { env: box.env })).toEqual({
      topLevel: linked,
      subdir: "src",
    });
  });

  it("throws (rather than answering 'no repository') when the cwd does not exist", async () => {
    const box = sandbox();
    await expect(findRepository(path.join(box.dir, "nope"), { env: box.env })).rejects.toThrow(/no such directory/);
  });
});

describe("snapshotWorkingState", () => {
  it("is HEAD plus staged, unstaged, deleted and untracked changes, without ignored files, and changes nothing", async () => {
    const box = sandbox();
    const repo = makeRepo(box, {
      ".gitignore": "node_modules/\n*.log\n",
      "keep.txt": "keep\n",
      "staged.txt": "old\n",
      "unstaged.txt": "old\n",
      "deleted.txt": "gone soon\n",
      "staged-deleted.txt": "gone soon\n",
    });
    write(path.join(repo, "tracked.log"), "tracked although ignored\n");
    sh(box, repo, ["add", "-f", "tracked.log"]);
    const head = commitAll(box, repo, "a tracked file that matches an ignore rule");
    write(path.join(repo, "staged.txt"), "new staged\n");
    sh(box, repo, ["add", "staged.txt"]);
    write(path.join(repo, "unstaged.txt"), "new unstaged\n");
    fs.rmSync(path.join(repo, "deleted.txt"));
    sh(box, repo, ["rm", "-q", "staged-deleted.txt"]);
    write(path.join(repo, "untracked dir/with space.txt"), "space\n");
    write(path.join(repo, NEWLINE_NAME), "newline\n");
    write(path.join(repo, UNICODE_NAME), "unicode\n");
    write(path.join(repo, "node_modules/x/index.js"), "ignored\n");
    write(path.join(repo, "debug.log"), "ignored\n");
    write(path.join(repo, "tracked.log"), "tracked, changed\n");
    const before = parentState(box, repo);

    const snapshot = await snapshotWorkingState(repo, { env: box.env });

    expect(parentState(box, repo)).toEqual(before);
    expect(snapshot).toMatch(/^[0-9a-f]{40}$/);
    expect(snapshot).not.toBe(head);
    expect(sh(box, repo, ["rev-list", "--parents", "-n", "1", snapshot]).trim()).toBe(`${snapshot} ${head}`);
    expect(treeFiles(box, repo, snapshot)).toEqual(
      [
        ".gitignore",
        "keep.txt",
        "staged.txt",
        "unstaged.txt",
        "tracked.log",
        "untracked dir/with space.txt",
        NEWLINE_NAME,
        UNICODE_NAME,
      ].sort(),
    );
    expect(show(box, repo, snapshot, "staged.txt")).toBe("new staged\n");
    expect(show(box, repo, snapshot, "unstaged.txt")).toBe("new unstaged\n");
    expect(show(box, repo, snapshot, "tracked.log")).toBe("tracked, changed\n");
    expect(show(box, repo, snapshot, UNICODE_NAME)).toBe("unicode\n");
    // No branch or ref points at the snapshot: the parent's refs are exactly as before.
    expect(sh(box, repo, ["for-each-ref", "--points-at", snapshot])).toBe("");
  });

  it("is HEAD itself when nothing differs from HEAD (ignored files do not count)", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { ".gitignore": "build/\n", "a.txt": "a\n" });
    write(path.join(repo, "build/out.js"), "ignored\n");
    const head = sh(box, repo, ["rev-parse", "HEAD"]).trim();
    expect(await snapshotWorkingState(repo, { env: box.env })).toBe(head);
  });

  it("with an unborn HEAD: a commit without parent, from which a worktree can be made", async () => {
    const box = sandbox();
    const repo = makeRepo(box);
    write(path.join(repo, "first.txt"), "first\n");
    write(path.join(repo, "staged.txt"), "staged\n");
    sh(box, repo, ["add", "staged.txt"]);
    const before = parentState(box, repo);
    const snapshot = await snapshotWorkingState(repo, { env: box.env });
    expect(parentState(box, repo)).toEqual(before);
    expect(sh(box, repo, ["rev-list", "--parents", "-n", "1", snapshot]).trim()).toBe(snapshot);
    expect(treeFiles(box, repo, snapshot)).toEqual(["first.txt", "staged.txt"]);
    const worktree = await createWorktree({
      topLevel: repo,
      worktreePath: path.join(box.dir, "wt"),
      branch: "subagent/00000000-a",
      base: snapshot,
      env: box.env,
    });
    expect(fs.readFileSync(path.join(worktree.path, "first.txt"), "utf8")).toBe("first\n");
  });

  it("of an empty repository (unborn, no files): a commit of the empty tree", async () => {
    const box = sandbox();
    const repo = makeRepo(box);
    const snapshot = await snapshotWorkingState(repo, { env: box.env });
    expect(treeFiles(box, repo, snapshot)).toEqual([]);
    expect(shOr(box, repo, ["rev-parse", "--verify", "--quiet", "HEAD"], "unborn")).toBe("unborn");
  });

  it("works with no git identity anywhere (fallback author), and with the repository's own when set", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n" });
    write(path.join(repo, "a.txt"), "changed\n");
    const anonymous = await snapshotWorkingState(repo, { env: box.env });
    expect(sh(box, repo, ["log", "-1", "--format=%an <%ae>|%cn <%ce>", anonymous]).trim()).toBe(
      `${FALLBACK_IDENTITY.name} <${FALLBACK_IDENTITY.email}>|${FALLBACK_IDENTITY.name} <${FALLBACK_IDENTITY.email}>`,
    );
    sh(box, repo, ["config", "user.name", "Ada Lovelace"]);
    sh(box, repo, ["config", "user.email", "ada@example.com"]);
    const named = await snapshotWorkingState(repo, { env: box.env });
    expect(sh(box, repo, ["log", "-1", "--format=%an <%ae>", named]).trim()).toBe("Ada Lovelace <ada@example.com>");
  });

  it("from a linked worktree (its .git is a file): its own state, and a worktree can be made from it", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n" });
    const linked = path.join(box.dir, "linked");
    sh(box, repo, ["worktree", "add", "-q", "-b", "side", linked]);
    write(path.join(linked, "a.txt"), "changed in linked\n");
    write(path.join(linked, "new.txt"), "new\n");
    const mainBefore = parentState(box, repo);
    const linkedBefore = parentState(box, linked);
    const found = await findRepository(linked, { env: box.env });
    const snapshot = await snapshotWorkingState(found!.topLevel, { env: box.env });
    expect(parentState(box, linked)).toEqual(linkedBefore);
    expect(parentState(box, repo)).toEqual(mainBefore);
    expect(treeFiles(box, repo, snapshot)).toEqual(["a.txt", "new.txt"]);
    const nested = await createWorktree({
      topLevel: linked,
      worktreePath: path.join(box.dir, "nested"),
      branch: "subagent/00000000-a-b",
      base: snapshot,
      env: box.env,
    });
    expect(fs.readFileSync(path.join(nested.path, "a.txt"), "utf8")).toBe("changed in linked\n");
    expect(sh(box, repo, ["worktree", "list", "--porcelain"])).toContain(`worktree ${nested.path}\n`);
  });

  it("records a submodule as its checked-out commit; its folder is empty in the worktree", async () => {
    const box = sandbox();
    const lib = makeRepo(box, { "lib.txt": "v1\n" }, "lib");
    const repo = makeRepo(box, { "a.txt": "a\n" });
    sh(box, repo, ["-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "vendor/lib"]);
    commitAll(box, repo, "add submodule");
    // Move the submodule on: the snapshot takes the commit checked out in it.
    const sub = path.join(repo, "vendor/lib");
    write(path.join(sub, "lib.txt"), "v2\n");
    const subHead = commitAll(box, sub, "v2");
    write(path.join(sub, "lib.txt"), "v3, uncommitted\n");
    const snapshot = await snapshotWorkingState(repo, { env: box.env });
    expect(sh(box, repo, ["ls-tree", snapshot, "vendor/lib"])).toBe(`160000 commit ${subHead}\tvendor/lib\n`);
    const worktree = await createWorktree({
      topLevel: repo,
      worktreePath: path.join(box.dir, "wt"),
      branch: "subagent/00000000-s",
      base: snapshot,
      env: box.env,
    });
    expect(fs.readdirSync(path.join(worktree.path, "vendor/lib"))).toEqual([]);
    expect(fs.readFileSync(path.join(worktree.path, ".gitmodules"), "utf8")).toContain("vendor/lib");
  });

  it("runs no hook of the repository", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n" });
    const marker = path.join(box.dir, "hook-ran");
    for (const hook of [
      "pre-commit",
      "prepare-commit-msg",
      "commit-msg",
      "post-commit",
      "post-checkout",
      "reference-transaction",
    ]) {
      write(path.join(repo, ".git/hooks", hook), `#!/bin/sh\necho ${hook} >> "${marker}"\n`);
      fs.chmodSync(path.join(repo, ".git/hooks", hook), 0o755);
    }
    write(path.join(repo, "a.txt"), "changed\n");
    const snapshot = await snapshotWorkingState(repo, { env: box.env });
    await createWorktree({
      topLevel: repo,
      worktreePath: path.join(box.dir, "wt"),
      branch: "subagent/00000000-h",
      base: snapshot,
      env: box.env,
    });
    expect(fs.existsSync(marker)).toBe(false);
    // The hooks are real: git run by hand does call them.
    sh(box, repo, [...AS_SETUP, "commit", "-q", "-am", "by hand"]);
    expect(fs.readFileSync(marker, "utf8")).toContain("pre-commit");
  });
});

describe("snapshotWorkingState: exclude", () => {
  it("leaves the given untracked paths out, literally (a name with glob characters matches only itself), and a tracked one keeps its indexed content", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { "a.txt": "a\n", "kept/t.txt": "t\n" });
    write(path.join(repo, "tree", "worktrees", "x", "f"), "f\n");
    write(path.join(repo, "we*rd"), "w\n");
    write(path.join(repo, "weXrd"), "x\n");
    write(path.join(repo, "kept", "t.txt"), "t, changed\n");
    const base = await snapshotWorkingState(repo, { env: box.env, exclude: ["tree", "we*rd", "kept"] });
    expect(treeFiles(box, repo, base)).toEqual(["a.txt", "kept/t.txt", "weXrd"]);
    expect(show(box, repo, base, "kept/t.txt")).toBe("t\n");
  });
});

describe("untrackedPaths", () => {
  it("lists untracked, not ignored paths below the top, a folder of untracked files as one entry", async () => {
    const box = sandbox();
    const repo = makeRepo(box, { ".gitignore": "*.log\n", "a.txt": "a\n" });
    write(path.join(repo, "new.txt"), "n\n");
    write(path.join(repo, "cache", "x", "y"), "y\n");
    write(path.join(repo, "debug.log"), "l\n");
    write(path.join(repo, "a.txt"), "a, changed\n");
    fs.symlinkSync("/nowhere", path.join(repo, "node_modules"));
    expect(await untrackedPaths(repo, { env: box.env })).toEqual(["cache", "new.txt", "node_modules"]);
  });
});
