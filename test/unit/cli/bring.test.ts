/**
 * `subagent-wrapper bring` on real repositories: an agent's branch (base → head) comes into a
 * parent's working tree that is clean, or holds unstaged, staged or untracked work — in other
 * files and in the files the agent changed. Every case checks that the parent's work is still
 * there, that the agent's change is, and that nothing was staged.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { BringUsageError, bringWork } from "../../../src/cli/bring.js";
import { conflicts, formatBring } from "../../../src/cli/bring-plan.js";
import { AS_SETUP, makeRepo, type Sandbox, sh, useSandbox, write } from "../extension/isolation/support.js";

const sandbox = useSandbox();

interface Fixture {
  box: Sandbox;
  repo: string;
  base: string;
  head: string;
  read(file: string): string;
  bring(): ReturnType<typeof bringWork>;
  /** What is staged in the parent (its index against HEAD). */
  staged(): string;
}

/**
 * A repository holding `files`; the agent starts from them (the base: the parent's HEAD, or
 * a snapshot commit of its working state when `uncommitted` is given, as a spawn makes it) and
 * makes `agent` (text, or null to delete) in a worktree of its own, committed on its branch.
 */
function fixture(
  files: Record<string, string>,
  agent: Record<string, string | Buffer | null>,
  uncommitted: Record<string, string> = {},
  madeExecutable: string[] = [],
): Fixture {
  const box = sandbox();
  const repo = makeRepo(box, files);
  for (const [file, text] of Object.entries(uncommitted)) write(path.join(repo, file), text);
  const base =
    Object.keys(uncommitted).length === 0 ? sh(box, repo, ["rev-parse", "HEAD"]).trim() : snapshot(box, repo);
  const worktree = path.join(box.dir, "agent");
  sh(box, repo, ["worktree", "add", "-q", "-b", "subagent/t-agent", worktree, base]);
  for (const [file, text] of Object.entries(agent)) {
    if (text === null) fs.rmSync(path.join(worktree, file));
    else write(path.join(worktree, file), text);
  }
  for (const file of madeExecutable) fs.chmodSync(path.join(worktree, file), 0o755);
  sh(box, worktree, ["add", "-A"]);
  sh(box, worktree, [...AS_SETUP, "commit", "-q", "--no-verify", "-m", "agent turn 1"]);
  const head = sh(box, worktree, ["rev-parse", "HEAD"]).trim();
  return {
    box,
    repo,
    base,
    head,
    read: (file) => fs.readFileSync(path.join(repo, file), "utf8"),
    bring: () => bringWork(base, head, { cwd: repo, env: box.env }),
    staged: () => sh(box, repo, ["diff", "--cached", "--name-only"]),
  };
}

/** The parent's working state as a commit with HEAD as its parent, its index untouched (as a spawn takes it). */
function snapshot(box: Sandbox, repo: string): string {
  const index = path.join(box.dir, "snapshot-index");
  const env = { ...box.env, GIT_INDEX_FILE: index };
  const git = (args: string[]) => sh({ ...box, env }, repo, args).trim();
  git(["read-tree", "HEAD"]);
  git(["add", "-A"]);
  const tree = git(["write-tree"]);
  return git([...AS_SETUP, "commit-tree", tree, "-p", "HEAD", "-m", "snapshot"]);
}

const kinds = (report: Awaited<ReturnType<typeof bringWork>>) =>
  Object.fromEntries(report.outcomes.map((outcome) => [outcome.path, outcome.kind]));

const TEN = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";
const withLine = (text: string, n: number, line: string) =>
  text
    .split("\n")
    .map((old, i) => (i === n - 1 ? line : old))
    .join("\n");

describe("bring: the agent's work into the parent's working tree", () => {
  it("a clean parent: the agent's edits, new files and deletions come in, unstaged", async () => {
    const f = fixture(
      { "a.txt": "a\n", "gone.txt": "gone\n", "keep.txt": "keep\n" },
      {
        "a.txt": "a, by the agent\n",
        "src/new.txt": "new\n",
        "gone.txt": null,
      },
    );
    const report = await f.bring();
    expect(kinds(report)).toEqual({ "a.txt": "taken", "gone.txt": "deleted", "src/new.txt": "taken" });
    expect(f.read("a.txt")).toBe("a, by the agent\n");
    expect(f.read("src/new.txt")).toBe("new\n");
    expect(fs.existsSync(path.join(f.repo, "gone.txt"))).toBe(false);
    expect(f.staged()).toBe("");
    expect(sh(f.box, f.repo, ["rev-parse", "HEAD"]).trim()).not.toBe(f.head);
    expect(formatBring(report)).toEqual([
      `brought in ${f.base.slice(0, 7)}..${f.head.slice(0, 7)} (3 files): 3 taken as the agent left them; your uncommitted work is kept and nothing is staged`,
    ]);
  });

  it("an unstaged edit in another file stays as it is", async () => {
    const f = fixture({ "a.txt": "a\n", "b.txt": "b\n" }, { "a.txt": "a, by the agent\n" });
    write(path.join(f.repo, "b.txt"), "b, yours\n");
    const report = await f.bring();
    expect(kinds(report)).toEqual({ "a.txt": "taken" });
    expect(f.read("b.txt")).toBe("b, yours\n");
    expect(f.read("a.txt")).toBe("a, by the agent\n");
  });

  it("an unstaged edit in a file the agent changed, in other lines: both are kept", async () => {
    const f = fixture({ "a.txt": TEN }, { "a.txt": withLine(TEN, 9, "line 9 by the agent") });
    write(path.join(f.repo, "a.txt"), withLine(TEN, 2, "line 2 yours"));
    const report = await f.bring();
    expect(kinds(report)).toEqual({ "a.txt": "merged" });
    expect(conflicts(report)).toEqual([]);
    expect(f.read("a.txt")).toBe(withLine(withLine(TEN, 2, "line 2 yours"), 9, "line 9 by the agent"));
    expect(f.staged()).toBe("");
  });

  it("an unstaged edit in the same lines the agent changed: conflict markers, both versions, the file named", async () => {
    const f = fixture(
      { "a.txt": TEN, "b.txt": "b\n" },
      { "a.txt": withLine(TEN, 5, "line 5 by the agent"), "b.txt": "b2\n" },
    );
    write(path.join(f.repo, "a.txt"), withLine(TEN, 5, "line 5 yours"));
    const report = await f.bring();
    expect(kinds(report)).toEqual({ "a.txt": "conflict", "b.txt": "taken" });
    const text = f.read("a.txt");
    expect(text).toContain("<<<<<<< yours\nline 5 yours\n=======\nline 5 by the agent\n>>>>>>> agent ");
    expect(text).toContain("line 4\n");
    expect(f.read("b.txt")).toBe("b2\n");
    const lines = formatBring(report);
    expect(lines[0]).toContain("1 taken as the agent left them, 1 in conflict");
    expect(lines[1]).toBe("conflicts: a.txt");
    expect(lines[2]).toMatch(/^ {2}a\.txt: both changed the same lines: conflict markers in the file/);
  });

  it("a staged edit in a file the agent changed: merged in the working tree, the index keeps what you staged", async () => {
    const f = fixture({ "a.txt": TEN }, { "a.txt": withLine(TEN, 9, "line 9 by the agent") });
    write(path.join(f.repo, "a.txt"), withLine(TEN, 2, "line 2 staged"));
    sh(f.box, f.repo, ["add", "a.txt"]);
    const stagedBefore = sh(f.box, f.repo, ["diff", "--cached"]);
    const report = await f.bring();
    expect(kinds(report)).toEqual({ "a.txt": "merged" });
    expect(f.read("a.txt")).toBe(withLine(withLine(TEN, 2, "line 2 staged"), 9, "line 9 by the agent"));
    expect(sh(f.box, f.repo, ["diff", "--cached"])).toBe(stagedBefore);
    // What came in is the unstaged part: exactly the agent's line.
    expect(sh(f.box, f.repo, ["diff", "--numstat"])).toBe("1\t1\ta.txt\n");
  });

  it("staged and unstaged edits of the same file, and a staged new file, all stay", async () => {
    const f = fixture({ "a.txt": TEN, "b.txt": "b\n" }, { "a.txt": withLine(TEN, 9, "line 9 by the agent") });
    write(path.join(f.repo, "a.txt"), withLine(TEN, 1, "line 1 staged"));
    write(path.join(f.repo, "staged-new.txt"), "new, staged\n");
    sh(f.box, f.repo, ["add", "a.txt", "staged-new.txt"]);
    write(path.join(f.repo, "a.txt"), withLine(withLine(TEN, 1, "line 1 staged"), 4, "line 4 unstaged"));
    await f.bring();
    expect(f.read("a.txt")).toBe(
      withLine(withLine(withLine(TEN, 1, "line 1 staged"), 4, "line 4 unstaged"), 9, "line 9 by the agent"),
    );
    expect(f.read("staged-new.txt")).toBe("new, staged\n");
    expect(f.staged().split("\n").filter(Boolean).sort()).toEqual(["a.txt", "staged-new.txt"]);
  });

  it("an untracked file elsewhere stays; one at the path of a file the agent added is merged with it", async () => {
    const f = fixture({ "a.txt": "a\n" }, { "added.txt": "from the agent\n", "same.txt": "same\n" });
    write(path.join(f.repo, "notes.txt"), "my notes\n");
    write(path.join(f.repo, "added.txt"), "mine\n");
    write(path.join(f.repo, "same.txt"), "same\n");
    const report = await f.bring();
    expect(kinds(report)).toEqual({ "added.txt": "conflict", "same.txt": "already" });
    expect(f.read("notes.txt")).toBe("my notes\n");
    expect(f.read("added.txt")).toMatch(/^<<<<<<< yours\nmine\n=======\nfrom the agent\n>>>>>>> agent [0-9a-f]{7}\n$/);
    expect(formatBring(report)[1]).toBe("conflicts: added.txt");
    expect(sh(f.box, f.repo, ["status", "--porcelain", "--", "added.txt", "notes.txt"])).toBe(
      "?? added.txt\n?? notes.txt\n",
    );
  });

  it("the base holds your uncommitted work from the spawn: only the agent's change comes in, with what you did since", async () => {
    const f = fixture(
      { "a.txt": TEN },
      { "a.txt": withLine(withLine(TEN, 3, "line 3 at spawn"), 9, "line 9 by the agent") },
      {
        "a.txt": withLine(TEN, 3, "line 3 at spawn"),
        "untracked.txt": "untracked at spawn\n",
      },
    );
    write(path.join(f.repo, "a.txt"), withLine(withLine(TEN, 3, "line 3 at spawn"), 6, "line 6 since"));
    const report = await f.bring();
    expect(kinds(report)).toEqual({ "a.txt": "merged" });
    expect(f.read("a.txt")).toBe(
      withLine(withLine(withLine(TEN, 3, "line 3 at spawn"), 6, "line 6 since"), 9, "line 9 by the agent"),
    );
    expect(f.read("untracked.txt")).toBe("untracked at spawn\n");
    expect(f.staged()).toBe("");
  });

  it("a binary file both changed: yours stays, the agent's goes beside it, and it is named", async () => {
    const f = fixture({ "logo.bin": "\0one" }, { "logo.bin": Buffer.from("\0agent") });
    fs.writeFileSync(path.join(f.repo, "logo.bin"), Buffer.from("\0yours"));
    const report = await f.bring();
    const beside = `logo.bin~${f.head.slice(0, 7)}`;
    expect(conflicts(report)).toEqual([
      {
        path: "logo.bin",
        kind: "conflict",
        why: `a binary file both changed: yours is kept, the agent's is beside it: ${beside}`,
      },
    ]);
    expect(fs.readFileSync(path.join(f.repo, "logo.bin"), "latin1")).toBe("\0yours");
    expect(fs.readFileSync(path.join(f.repo, beside), "latin1")).toBe("\0agent");
  });

  it("a file the agent deleted and you changed stays, named as a conflict", async () => {
    const f = fixture({ "a.txt": "a\n" }, { "a.txt": null });
    write(path.join(f.repo, "a.txt"), "a, yours\n");
    const report = await f.bring();
    expect(conflicts(report).map((outcome) => outcome.path)).toEqual(["a.txt"]);
    expect(f.read("a.txt")).toBe("a, yours\n");
  });

  it("never writes through a folder you replaced with a symbolic link", async () => {
    const f = fixture({ "src/x.txt": "x\n" }, { "src/x.txt": "x by the agent\n" });
    const outside = path.join(f.box.dir, "outside");
    fs.mkdirSync(outside);
    write(path.join(outside, "x.txt"), "x\n");
    fs.rmSync(path.join(f.repo, "src"), { recursive: true });
    fs.symlinkSync(outside, path.join(f.repo, "src"));
    const report = await f.bring();
    expect(conflicts(report)).toEqual([
      {
        path: "src/x.txt",
        kind: "conflict",
        why: `something not a file of yours is there: the agent's is beside it — not written, a folder on the way is a symbolic link; it is git show ${f.head.slice(0, 7)}:src/x.txt`,
      },
    ]);
    expect(fs.readdirSync(outside)).toEqual(["x.txt"]);
    expect(fs.readFileSync(path.join(outside, "x.txt"), "utf8")).toBe("x\n");
  });

  it("an executable bit the agent set comes in with the file", async () => {
    const f = fixture({ "run.sh": "echo\n" }, {}, {}, ["run.sh"]);
    const report = await f.bring();
    expect(kinds(report)).toEqual({ "run.sh": "taken" });
    expect(fs.statSync(path.join(f.repo, "run.sh")).mode & 0o111).not.toBe(0);
  });

  it("runs from a folder below the top, and takes a branch name for the head", async () => {
    const f = fixture({ "a.txt": "a\n", "sub/b.txt": "b\n" }, { "a.txt": "a2\n" });
    const report = await bringWork(f.base, "subagent/t-agent", { cwd: path.join(f.repo, "sub"), env: f.box.env });
    expect(report.head).toBe(f.head);
    expect(f.read("a.txt")).toBe("a2\n");
  });

  it("run twice, the second finds everything already there", async () => {
    const f = fixture({ "a.txt": TEN }, { "a.txt": withLine(TEN, 9, "line 9 by the agent"), "n.txt": "n\n" });
    await f.bring();
    const again = await f.bring();
    expect(kinds(again)).toEqual({ "a.txt": "already", "n.txt": "already" });
  });

  it("does nothing outside a repository or with a commit the repository does not hold", async () => {
    const f = fixture({ "a.txt": "a\n" }, { "a.txt": "a2\n" });
    await expect(bringWork(f.base, "0".repeat(40), { cwd: f.repo, env: f.box.env })).rejects.toThrow(
      new BringUsageError(`no commit ${"0".repeat(40)} in the repository at ${f.repo}`),
    );
    const outside = path.join(f.box.dir, "outside");
    fs.mkdirSync(outside);
    await expect(
      bringWork(f.base, f.head, { cwd: outside, env: { ...f.box.env, GIT_CEILING_DIRECTORIES: f.box.dir } }),
    ).rejects.toThrow(BringUsageError);
    expect(f.read("a.txt")).toBe("a\n");
  });
});
