/**
 * The local side of a runner's workspace: what the child's cwd holds goes over as
 * a git bundle of one parentless commit (HEAD plus uncommitted changes and untracked files
 * git does not ignore, the starting state of a local isolated child too, made without touching the index or the working
 * tree), and the turn's commit that comes back lands on the branch checked out there as one
 * commit on top of HEAD (for an isolated child: the agent's `subagent/*` branch, so the
 * notice's `worktree` fields are those of a local isolated turn). The base carries only its
 * tree, not the history. When the far side still has an earlier turn's workspace (protocol 2:
 * its `have`), the bundle leaves out every object reachable from those commits (they are its
 * prerequisites): a follow-up sends only the files that changed since.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { git, identityEnv } from "../../lib/git.js";

export interface WorkspaceBase {
  /** The repository's top (the worktree holding the cwd). */
  top: string;
  /** The cwd below the top, `/`-separated ("" for the top). */
  cwd: string;
  /** HEAD when the run started (undefined in a repository with no commit yet). */
  head: string | undefined;
  /** The tree of the workspace's state. */
  tree: string;
  /** The commit sent over: parentless, or on top of a commit the far side kept (bundleWorkspace). */
  base: string;
}

/** A workspace's bundle, the base it carries and the commits it leaves out (the far side has them). */
export interface WorkspaceBundle {
  workspace: WorkspaceBase;
  bundle: Buffer;
  prerequisites: string[];
}

/** A fresh temp file's name in `dir`: the run's own temp folder (run-temp.ts), which a killed wrapper's guard removes. */
const tempPath = (name: string, dir: string): string =>
  path.join(dir, `subagent-${name}-${randomBytes(6).toString("hex")}`);

/**
 * The workspace of `cwd` as one parentless commit; throws (a clear message) outside git.
 * `atHead`: the checkout is HEAD itself, still being written (a new isolated worktree,
 * meta.json `cwdReadyPath`): HEAD's tree is taken as it is, without reading the files.
 */
export async function workspaceBase(cwd: string, atHead = false, tempDir = os.tmpdir()): Promise<WorkspaceBase> {
  const top = (await git(["rev-parse", "--show-toplevel"], { cwd }).catch(() => "")).trim();
  if (top === "") throw new Error(`${cwd} is not inside a git repository`);
  const relative = path.relative(fs.realpathSync(top), fs.realpathSync(cwd)).split(path.sep).join("/");
  const head = (await git(["rev-parse", "--verify", "--quiet", "HEAD"], { cwd: top }).catch(() => "")).trim();
  // A copy of the index keeps git's file stat cache: only changed files are hashed again.
  const indexPath = (await git(["rev-parse", "--path-format=absolute", "--git-path", "index"], { cwd: top })).trim();
  const index = tempPath("index", tempDir);
  try {
    const extraEnv = { GIT_INDEX_FILE: index, ...(await identityEnv(top)) };
    let tree: string;
    if (atHead && head) tree = (await git(["rev-parse", `${head}^{tree}`], { cwd: top })).trim();
    else {
      if (fs.existsSync(indexPath)) fs.copyFileSync(indexPath, index);
      await git(["add", "-A", "--", "."], { cwd: top, extraEnv });
      tree = (await git(["write-tree"], { cwd: top, extraEnv })).trim();
    }
    const base = (await git(["commit-tree", tree, "-m", "subagent base"], { cwd: top, extraEnv })).trim();
    return { top, cwd: relative, head: head || undefined, tree, base };
  } finally {
    fs.rmSync(index, { force: true });
  }
}

/** The commits of `commits` this repository has (a far side's `have` may name ones it never saw). */
async function present(top: string, commits: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  for (const commit of commits) {
    if (
      await git(["cat-file", "-e", `${commit}^{commit}`], { cwd: top }).then(
        () => true,
        () => false,
      )
    )
      found.push(commit);
  }
  return found;
}

/**
 * The bundle of the workspace without what `have` holds (commits the far side kept; those this
 * repository does not know are ignored). git leaves out only what lies behind a commit's
 * parents, so with a kept commit the base becomes the workspace's tree on top of it: every
 * object that commit reaches stays out, and the far side checks it has it (the bundle's
 * prerequisites). No delta search and light compression (objects already packed are reused
 * as they are): packing would otherwise be most of its cost.
 */
export async function bundleWorkspace(
  workspace: WorkspaceBase,
  have: readonly string[] = [],
  tempDir = os.tmpdir(),
): Promise<WorkspaceBundle> {
  const { top } = workspace;
  // One kept commit is enough: the base goes on top of it, and git leaves out all it reaches.
  const prerequisites = (await present(top, have)).slice(0, 1);
  let base = workspace.base;
  if (prerequisites.length > 0) {
    const extraEnv = await identityEnv(top);
    const parent = ["-p", prerequisites[0]!];
    const made = await git(["commit-tree", workspace.tree, ...parent, "-m", "subagent base"], { cwd: top, extraEnv });
    base = made.trim();
  }
  const ref = `refs/subagent-serve/${randomBytes(8).toString("hex")}`;
  const bundlePath = tempPath("bundle", tempDir);
  try {
    await git(["update-ref", ref, base], { cwd: top });
    const pack = ["-c", "core.compression=1", "-c", "pack.compression=1", "-c", "pack.window=0"];
    const exclude = prerequisites.map((commit) => `^${commit}`);
    await git([...pack, "bundle", "create", "--quiet", bundlePath, ref, ...exclude], { cwd: top });
    return { workspace: { ...workspace, base }, bundle: fs.readFileSync(bundlePath), prerequisites };
  } finally {
    await git(["update-ref", "-d", ref], { cwd: top }).catch(() => undefined);
    fs.rmSync(bundlePath, { force: true });
  }
}

/**
 * The bundle for a far side that has `have` and takes at most `maxBytes`; throws past the
 * bound (a spawn error that names both, before anything is sent). `log` gets one line of what
 * goes over (the wrapper's own log: a follow-up's bundle holds only what changed).
 */
export async function bundleWithin(
  workspace: WorkspaceBase,
  have: readonly string[],
  maxBytes: number,
  log: (line: string) => void,
  tempDir = os.tmpdir(),
): Promise<WorkspaceBundle> {
  const made = await bundleWorkspace(workspace, have, tempDir);
  const kept = made.prerequisites.length > 0 ? ", without what the far side kept of the last turn" : "";
  log(`workspace bundle ${made.bundle.length} bytes${kept}`);
  if (made.bundle.length > maxBytes) {
    throw new Error(
      `the workspace bundle is ${made.bundle.length} bytes, over the far side's bound of ${maxBytes} bytes`,
    );
  }
  return made;
}

/**
 * Lands the turn's commit (the bundle's HEAD, over `workspace.base`) as one commit on the
 * branch checked out at `workspace.top`, with the far side's tree and message. Returns the
 * new commit. When the branch cannot move (the checkout changed meanwhile) the commit is
 * kept at `refs/subagent-runs/<runId>` and the error says so.
 */
export async function landTurn(
  workspace: WorkspaceBase,
  bundle: Buffer,
  runId: string,
  tempDir = os.tmpdir(),
): Promise<string> {
  const { top } = workspace;
  const bundlePath = tempPath("turn", tempDir);
  fs.writeFileSync(bundlePath, bundle, { mode: 0o600 });
  try {
    await git(["-c", "fetch.fsckObjects=true", "fetch", "--quiet", "--no-tags", bundlePath, "HEAD"], { cwd: top });
    const far = (await git(["rev-parse", "FETCH_HEAD"], { cwd: top })).trim();
    const tree = (await git(["rev-parse", `${far}^{tree}`], { cwd: top })).trim();
    const message = await git(["log", "-1", "--format=%B", far], { cwd: top });
    const extraEnv = await identityEnv(top);
    const parents = workspace.head ? ["-p", workspace.head] : [];
    const commit = (await git(["commit-tree", tree, ...parents, "-m", message.trim()], { cwd: top, extraEnv })).trim();
    try {
      await git(["merge", "--ff-only", "--quiet", commit], { cwd: top, extraEnv });
    } catch (err) {
      const keep = `refs/subagent-runs/${runId.replace(/[^\w.-]/g, "_")}`;
      await git(["update-ref", keep, commit], { cwd: top });
      throw new Error(
        `the turn's commit ${commit} could not land on the checked-out branch (kept at ${keep}): ${(err as Error).message}`,
      );
    }
    return commit;
  } finally {
    fs.rmSync(bundlePath, { force: true });
  }
}
