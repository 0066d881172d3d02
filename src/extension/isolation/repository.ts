/**
 * The parent's side of isolation: which repository holds its cwd, and a commit of exactly
 * what its working tree shows, made without touching anything of the parent: the parent may
 * be mid-edit, and its HEAD, index and files stay exactly as it left them (docs/isolation.md).
 *
 * The snapshot is HEAD plus uncommitted changes to tracked files (staged or not, deletions
 * included) plus untracked files git does not ignore; ignored files are left out. It is built
 * in a temporary index (a copy of the real one, so git's stat cache spares re-hashing
 * unchanged files of a big repository): `add -A`, `write-tree`, `commit-tree`. HEAD, the
 * index, every ref and the working tree stay as they were; the only trace is new objects in
 * the object store, which `git gc` drops once nothing refers to them.
 *
 * Choices:
 *   - Nothing differs from HEAD: the snapshot *is* HEAD (no new commit), so `base_commit` is
 *     the parent's own commit and a plain `git merge` of the child's branch is then right.
 *   - Unborn HEAD (no commit yet): the snapshot commit has no parent (an empty working tree
 *     gives a commit of the empty tree, still a valid base for a worktree).
 *   - Submodules: they work, as gitlinks. The snapshot records each submodule at the commit
 *     checked out in it (the submodule's own uncommitted changes are not included), and a
 *     worktree shows the submodule's folder empty (no recursive checkout). A setup command
 *     (`git submodule update --init`) can fill it. An untracked nested repository is
 *     recorded the same way.
 *   - Identity: the repository's own when one is configured, else `FALLBACK_IDENTITY`.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { allExcept, failure, type GitCallOptions, git, identityEnv, runGit, stripNewline } from "../../lib/git.js";

export interface Repository {
  /** The top of the working tree that holds the cwd (a linked worktree's own top when in one). */
  topLevel: string;
  /** The cwd relative to `topLevel`, `/`-separated; "" at the top. */
  subdir: string;
}

/**
 * The git working tree that holds `cwd`, or undefined when there is none (not in a
 * repository, in a bare repository, or inside a `.git` folder). Throws when git itself fails
 * otherwise (not installed, `cwd` missing, "dubious ownership"): those are not "no repository".
 */
export async function findRepository(cwd: string, options: GitCallOptions = {}): Promise<Repository | undefined> {
  const args = ["rev-parse", "--is-inside-work-tree", "--show-prefix"];
  // Asked at once; the top is only used when the cwd turns out to be in a working tree.
  const [result, top] = await Promise.all([
    runGit(args, { ...options, cwd }),
    runGit(["rev-parse", "--show-toplevel"], { ...options, cwd }),
  ]);
  if (result.code !== 0) {
    if (/not a git repository/i.test(result.stderr)) return undefined;
    throw failure(args, result);
  }
  // "true\n<prefix>\n": the first line cannot hold a newline, the prefix may.
  const out = result.stdout.toString("utf8");
  const newline = out.indexOf("\n");
  if (out.slice(0, newline) !== "true") return undefined;
  const prefix = stripNewline(out.slice(newline + 1));
  if (top.code !== 0) throw failure(["rev-parse", "--show-toplevel"], top);
  const topLevel = stripNewline(top.stdout.toString("utf8"));
  return { topLevel, subdir: prefix.endsWith("/") ? prefix.slice(0, -1) : prefix };
}

/** HEAD's commit, or undefined while HEAD is unborn. */
export async function headCommit(cwd: string, options: GitCallOptions = {}): Promise<string | undefined> {
  const args = ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"];
  const result = await runGit(args, { ...options, cwd });
  if (result.code === 0) return result.stdout.toString("utf8").trim();
  if (result.code === 1) return undefined;
  throw failure(args, result);
}

export interface SnapshotOptions extends GitCallOptions {
  /** Message of the snapshot commit. */
  message?: string;
  /**
   * Untracked paths (relative to the top) to leave out: the tree directory when it lies in
   * the working tree, an isolated parent's setup links. A tracked path is still carried.
   */
  exclude?: readonly string[];
}

const SNAPSHOT_MESSAGE = "pi-subagent-tree: working state (HEAD plus uncommitted and untracked changes)";

/**
 * A commit whose tree is exactly what `topLevel`'s working tree shows; HEAD itself when that
 * is HEAD's tree. Changes nothing of the repository but its object store.
 */
export async function snapshotWorkingState(topLevel: string, options: SnapshotOptions = {}): Promise<string> {
  const cwd = topLevel;
  // Independent questions, asked at once: each git process costs a few ms to start.
  const [head, indexPath, identity] = await Promise.all([
    headCommit(cwd, options),
    git(["rev-parse", "--git-path", "index"], { ...options, cwd }),
    identityEnv(cwd, options),
  ]);
  const realIndex = path.resolve(cwd, stripNewline(indexPath));
  const temp = await fs.promises.mkdtemp(path.join(os.tmpdir(), "pi-subagent-snapshot-"));
  try {
    const tempIndex = path.join(temp, "index");
    const indexEnv = { ...options, cwd, extraEnv: { GIT_INDEX_FILE: tempIndex } };
    const copied = await fs.promises.copyFile(realIndex, tempIndex).then(
      () => true,
      (error: NodeJS.ErrnoException) => {
        if (error.code === "ENOENT") return false;
        throw error;
      },
    );
    // No index yet (a fresh clone with --no-checkout, a deleted index): start from HEAD so
    // tracked files that match an ignore rule are still carried.
    if (!copied && head) await git(["read-tree", head], indexEnv);
    const headTree = head ? git(["rev-parse", `${head}^{tree}`], { ...options, cwd }) : Promise.resolve(undefined);
    headTree.catch(() => undefined); // awaited below; never unhandled if add fails first
    // A split index would be written back split, into the repository's git dir.
    await git(
      [
        "-c",
        "core.splitIndex=false",
        "-c",
        "advice.addEmbeddedRepo=false",
        "add",
        "--all",
        ...allExcept(options.exclude ?? []),
      ],
      indexEnv,
    );
    const tree = (await git(["write-tree"], indexEnv)).trim();
    if (head && (await headTree)?.trim() === tree) return head;
    const args = [
      "commit-tree",
      "--no-gpg-sign",
      ...(head ? ["-p", head] : []),
      "-m",
      options.message ?? SNAPSHOT_MESSAGE,
      tree,
    ];
    return (await git(args, { ...options, cwd, extraEnv: identity })).trim();
  } finally {
    await fs.promises.rm(temp, { recursive: true, force: true });
  }
}

/**
 * Untracked, not ignored paths of a working tree (relative to its top; a folder with
 * nothing tracked in it is one entry, without its trailing `/`). After a worktree's setup
 * command these are what the setup created.
 */
export async function untrackedPaths(topLevel: string, options: GitCallOptions = {}): Promise<string[]> {
  const out = await git(["status", "--porcelain=v1", "-z", "--untracked-files=normal", "--ignore-submodules=all"], {
    ...options,
    cwd: topLevel,
  });
  const paths: string[] = [];
  const records = out.split("\0");
  for (let i = 0; i < records.length; i++) {
    const record = records[i]!;
    // A rename or copy is followed by its source path in the next field.
    if (record.startsWith("R") || record.startsWith("C")) i++;
    if (record.startsWith("?? ")) paths.push(record.slice(3).replace(/\/$/, ""));
  }
  return paths.sort();
}
