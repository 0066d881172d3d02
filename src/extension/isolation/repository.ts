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
import {
  allExcept,
  failure,
  type GitCallOptions,
  type GitRunOptions,
  git,
  identityEnv,
  runGit,
  stripNewline,
} from "../../lib/git.js";
import type { KeptSnapshot, SnapshotReuse } from "./snapshot-reuse.js";

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
  /** Keeps the temporary index for the next snapshot of the same repository (snapshot-reuse.ts). */
  reuse?: SnapshotReuse;
}

const SNAPSHOT_MESSAGE = "pi-subagent-tree: working state (HEAD plus uncommitted and untracked changes)";

type SnapshotState = Omit<KeptSnapshot, "key" | "env">;

/**
 * A commit whose tree is exactly what `topLevel`'s working tree shows; HEAD itself when that
 * is HEAD's tree. Changes nothing of the repository but its object store.
 */
export async function snapshotWorkingState(topLevel: string, options: SnapshotOptions = {}): Promise<string> {
  const { reuse } = options;
  const key = [topLevel, ...(options.exclude ?? [])].join("\0");
  const kept = reuse?.take(key, options.env);
  const temp = await fs.promises.mkdtemp(path.join(os.tmpdir(), "pi-subagent-snapshot-"));
  try {
    const state = await takeSnapshot(topLevel, options, temp, kept);
    reuse?.keep({ key, env: options.env, ...state });
    return state.commit;
  } catch (err) {
    reuse?.drop();
    throw err;
  } finally {
    await fs.promises.rm(temp, { recursive: true, force: true });
  }
}

/**
 * The snapshot, in a temporary index at `<dir>/index`, a fresh copy of the real index.
 * `kept` (the previous snapshot of the same repository) spares asking git again for what a
 * snapshot's tree does not depend on: where the index is, the identity, HEAD's tree while
 * HEAD is the same; and the same tree on the same HEAD is the same commit.
 */
async function takeSnapshot(
  topLevel: string,
  options: SnapshotOptions,
  dir: string,
  kept: KeptSnapshot | undefined,
): Promise<SnapshotState> {
  const cwd = topLevel;
  // Independent questions, asked at once: each git process costs a few ms to start.
  const [head, indexPath, identity] = await Promise.all([
    headCommit(cwd, options),
    kept?.realIndex ?? git(["rev-parse", "--git-path", "index"], { ...options, cwd }),
    kept?.identity ?? identityEnv(cwd, options),
  ]);
  const realIndex = path.resolve(cwd, stripNewline(indexPath));
  const tempIndex = path.join(dir, "index");
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
  const sameHead = kept !== undefined && kept.head === head;
  const headTreeOut =
    !head || sameHead ? Promise.resolve(kept?.headTree) : git(["rev-parse", `${head}^{tree}`], { ...options, cwd });
  headTreeOut.catch(() => undefined); // awaited below; never unhandled if add fails first
  const tree = await addAll(options, indexEnv);
  const headTree = (await headTreeOut)?.trim();
  const state = { realIndex, head, headTree, identity, tree };
  // The same tree on the same HEAD: the same snapshot.
  if (sameHead && kept.tree === tree) return { ...state, commit: kept.commit };
  return { ...state, commit: await commitFor(topLevel, options, state) };
}

/** `add --all` (less the exclusions) into the temporary index, then its tree. */
async function addAll(options: SnapshotOptions, indexEnv: GitRunOptions): Promise<string> {
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
  return (await git(["write-tree"], indexEnv)).trim();
}

/** HEAD when the tree is HEAD's, else a new commit of the tree on HEAD. */
async function commitFor(
  topLevel: string,
  options: SnapshotOptions,
  state: Pick<SnapshotState, "head" | "headTree" | "identity" | "tree">,
): Promise<string> {
  const { head, headTree, identity, tree } = state;
  if (head && headTree === tree) return head;
  const args = [
    "commit-tree",
    "--no-gpg-sign",
    ...(head ? ["-p", head] : []),
    "-m",
    options.message ?? SNAPSHOT_MESSAGE,
    tree,
  ];
  return (await git(args, { ...options, cwd: topLevel, extraEnv: identity })).trim();
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
