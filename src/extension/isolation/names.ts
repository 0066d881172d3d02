/**
 * Names of an isolated agent's worktree and branch, from its canonical path (docs/isolation.md).
 *
 * Path segments use only [a-z0-9_], so joining them with "-" is unambiguous: `/root/a_b/c`
 * and `/root/a/b_c` stay apart. The tree tag keeps branches of different trees in one
 * repository apart (tree/paths.ts `treeTag`).
 */
import path from "node:path";
import { ROOT_PATH } from "../../contracts/agent-paths.js";
import { TREE_FILES } from "../../contracts/layout.js";
import { agentFolderSegments, isCanonicalPath, isTreeTag } from "../tree/paths.js";

/** `/root/lead/checker` → `lead-checker`. Throws for `/root` (which is never isolated) and any non-canonical path. */
export function worktreeName(agentPath: string): string {
  if (agentPath === ROOT_PATH || !isCanonicalPath(agentPath)) {
    throw new Error(`not the canonical path of an agent below /root: ${JSON.stringify(agentPath)}`);
  }
  return agentFolderSegments(agentPath).join("-");
}

/** `7f3a9c2e` + `/root/lead/checker` → `subagent/7f3a9c2e-lead-checker`. */
export function branchName(tag: string, agentPath: string): string {
  if (!isTreeTag(tag)) throw new Error(`not a tree tag (8 lowercase hex characters): ${JSON.stringify(tag)}`);
  return `subagent/${tag}-${worktreeName(agentPath)}`;
}

/** Where an agent's worktree lives: `<treeDir>/worktrees/<worktreeName>` (flat, so no worktree lies inside another). */
export function worktreePathFor(treeDir: string, agentPath: string): string {
  return path.join(treeDir, TREE_FILES.worktrees, worktreeName(agentPath));
}

/**
 * The child's cwd: the same subdirectory of its worktree as the parent's cwd is of the
 * repository. Throws for a subdir that is absolute or climbs out (`..`).
 */
export function worktreeCwd(worktreePath: string, subdir: string): string {
  if (subdir === "") return worktreePath;
  const normal = path.posix.normalize(subdir.split(path.sep).join("/"));
  if (path.isAbsolute(subdir) || normal === ".." || normal.startsWith("../")) {
    throw new Error(`not a subdirectory of the working tree: ${JSON.stringify(subdir)}`);
  }
  return path.join(worktreePath, normal);
}
