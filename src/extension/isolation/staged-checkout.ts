/**
 * A worktree's checkout in two steps, so an isolated child can start before every file is
 * written (createWorktree's `deferCheckout`, docs/isolation.md "A child starts while its
 * files are written"): first what pi reads before its first tool call, then the rest, which
 * the child's tool calls wait for (meta.json `cwdReadyPath`).
 */
import fs from "node:fs";
import path from "node:path";
import { type GitCallOptions, git } from "../../lib/git.js";
import { worktreeCwd } from "./names.js";

/** The folders from the top of the working tree down to the cwd: `["", "src", "src/lib"]`. */
function levels(subdir: string): string[] {
  const found = [""];
  for (const segment of subdir.split("/").filter(Boolean))
    found.push(found.length === 1 ? segment : `${found.at(-1)}/${segment}`);
  return found;
}

/**
 * pi's own project folders: `.pi` (settings, skills, system prompt files) and `.agents`
 * (skills) at every level from the top of the working tree down to the cwd. pi looks for
 * `.pi` in its cwd and for `.agents/skills` up to the repository's top; both at every level
 * costs nothing and holds if pi widens its search.
 */
export function startupFolders(subdir: string): string[] {
  return levels(subdir).flatMap((level) =>
    [".pi", ".agents"].map((name) => (level === "" ? name : `${level}/${name}`)),
  );
}

/** Settings keys whose entries may name files elsewhere in the project, which pi resolves as it starts. */
const RESOURCE_SETTINGS = ["packages", "extensions", "skills", "prompts", "themes"];

/** The worktree's own git dir, from its `.git` file (no git process). */
export async function ownGitDir(worktreePath: string): Promise<string | undefined> {
  const text = await fs.promises.readFile(path.join(worktreePath, ".git"), "utf8").catch(() => "");
  const gitdir = /^gitdir: (.+)$/m.exec(text)?.[1]?.trim();
  return gitdir === undefined ? undefined : path.resolve(worktreePath, gitdir);
}

/** Whether the cwd's `.pi/settings.json` (already written) names resources. */
async function settingsNameResources(cwd: string): Promise<boolean> {
  const text = await fs.promises.readFile(path.join(cwd, ".pi", "settings.json"), "utf8").catch(() => undefined);
  if (text === undefined) return false;
  let settings: unknown;
  try {
    settings = JSON.parse(text);
  } catch {
    return false; // pi reports a broken file itself; it names nothing
  }
  if (typeof settings !== "object" || settings === null) return false;
  return RESOURCE_SETTINGS.some((key) => {
    const value = (settings as Record<string, unknown>)[key];
    return Array.isArray(value) ? value.length > 0 : value !== undefined;
  });
}

export interface TreeEntry {
  mode: string;
  path: string;
}

/** `git ls-tree -z` records (`<mode> <type> <object>\t<path>`), blobs only: files and symbolic links, no submodules. */
function blobEntries(out: string): TreeEntry[] {
  const entries: TreeEntry[] = [];
  for (const record of out.split("\0")) {
    const tab = record.indexOf("\t");
    if (tab === -1) continue;
    const [mode, type] = record.slice(0, tab).split(" ");
    if (type === "blob" && mode) entries.push({ mode, path: record.slice(tab + 1) });
  }
  return entries;
}

/**
 * What pi reads of its project before the child's first tool call (see docs/isolation.md,
 * "A child starts while its files are written"): every file directly in the folders from the
 * top down to the cwd (context files, whatever their name: AGENTS.md, CLAUDE.md,
 * AGENTS.override.md, …) and everything in pi's own folders at those levels (startupFolders).
 */
export async function startupEntries(
  topLevel: string,
  commit: string,
  subdir: string,
  options: GitCallOptions,
): Promise<TreeEntry[]> {
  const call = { ...options, cwd: topLevel };
  const [direct, inFolders] = await Promise.all([
    // Not recursive: each level's own entries (the deeper levels' in place of their folder).
    git(
      [
        "--literal-pathspecs",
        "ls-tree",
        "-z",
        commit,
        "--",
        ...levels(subdir).map((level) => `${level === "" ? "." : level}/`),
      ],
      call,
    ),
    git(["--literal-pathspecs", "ls-tree", "-r", "-z", commit, "--", ...startupFolders(subdir)], call),
  ]);
  const byPath = new Map<string, TreeEntry>();
  for (const entry of [...blobEntries(direct), ...blobEntries(inFolders)]) byPath.set(entry.path, entry);
  return [...byPath.values()];
}

/**
 * Whether each symbolic link among `entries` (written) that pi may read as it starts — a
 * markdown file (context files are) or anything in or at a startup folder — leads outside
 * the worktree or to another of `entries`. Other links (`tools -> scripts/tools`) pi does not
 * read before a tool call, and tool calls wait for the rest anyway.
 */
async function linksStayInside(worktreePath: string, subdir: string, entries: readonly TreeEntry[]): Promise<boolean> {
  const paths = new Set(entries.map((entry) => entry.path));
  const folders = startupFolders(subdir);
  const readAtStart = (file: string) =>
    file.toLowerCase().endsWith(".md") || folders.some((folder) => file === folder || file.startsWith(`${folder}/`));
  for (const entry of entries) {
    if (entry.mode !== "120000" || !readAtStart(entry.path)) continue;
    const link = path.join(worktreePath, entry.path);
    const target = path.resolve(path.dirname(link), await fs.promises.readlink(link));
    const relative = path.relative(worktreePath, target).split(path.sep).join("/");
    const outside = relative.startsWith("../") || relative === ".." || path.isAbsolute(relative);
    if (!outside && !paths.has(relative)) return false;
  }
  return true;
}

/**
 * A checkout in two steps, so the child can start after the first (createWorktree's
 * `deferCheckout`). Both write into a staging index in the worktree's git dir; the second
 * moves it into place as the worktree's index, so, as for any checkout here, the index
 * exists only once every file is written (isCheckedOut).
 *
 *   1. `checkout <base> -- <entries>` (startupEntries): what pi reads before its first tool call;
 *   2. `read-tree -m -u <base>` (parallel): everything else. A one-tree merge keeps the
 *      entries of step 1 as they are, so their files are never rewritten (a forced checkout
 *      unlinks and recreates a file, and a child reading it then would find it missing).
 *
 * Undefined when the child must not start before every file is written: a symbolic link pi
 * reads as it starts leads to a file step 1 did not write, or the cwd's `.pi/settings.json` names
 * resources, which may lie anywhere in the project. The rest then happens at once, the
 * usual way.
 */
export async function stagedCheckout(
  worktreePath: string,
  commit: string,
  subdir: string,
  entries: readonly TreeEntry[],
  options: GitCallOptions,
): Promise<(() => Promise<void>) | undefined> {
  const gitDir = await ownGitDir(worktreePath);
  if (gitDir === undefined) return undefined;
  const staging = path.join(gitDir, "pi-subagent-index");
  const withStaging = { ...options, cwd: worktreePath, extraEnv: { GIT_INDEX_FILE: staging } };
  const discard = () => fs.promises.rm(staging, { force: true }).catch(() => undefined);
  if (entries.length > 0) {
    // The list goes in a file: a folder of thousands of files would not fit a command line.
    const list = path.join(gitDir, "pi-subagent-startup-paths");
    await fs.promises.writeFile(list, `${entries.map((entry) => entry.path).join("\0")}\0`);
    try {
      const args = [
        "--literal-pathspecs",
        "-c",
        "core.splitIndex=false",
        "checkout",
        "--quiet",
        commit,
        `--pathspec-from-file=${list}`,
        "--pathspec-file-nul",
      ];
      await git(args, withStaging);
    } finally {
      await fs.promises.rm(list, { force: true });
    }
    const safe =
      (await linksStayInside(worktreePath, subdir, entries)) &&
      !(await settingsNameResources(worktreeCwd(worktreePath, subdir)));
    if (!safe) {
      await discard();
      return undefined;
    }
  }
  return async () => {
    try {
      // At the lowest priority: the child starting meanwhile must not wait for CPU behind it.
      await git(["-c", "core.splitIndex=false", "-c", "checkout.workers=0", "read-tree", "-m", "-u", commit], {
        ...withStaging,
        niceness: 19,
      });
      await fs.promises.rename(staging, path.join(gitDir, "index"));
    } catch (error) {
      await discard();
      throw error;
    }
  };
}
