/**
 * An agent's canonical path in the tree: `/root` for the root, `/root/<task_name>/…` below
 * it. Folder names and tool arguments are built from these paths, so every one is checked.
 */

/** The root's canonical path; children are `/root/<task_name>`, `/root/<a>/<b>`, … */
export const ROOT_PATH = "/root";

/** One segment of a canonical path (a `task_name`). */
export const TASK_NAME_PATTERN = /^[a-z0-9_]+$/;

/** `/root`, or `/root/` followed by segments that each match TASK_NAME_PATTERN. */
export function isCanonicalPath(s: string): boolean {
  if (s === ROOT_PATH) return true;
  if (!s.startsWith(`${ROOT_PATH}/`)) return false;
  return s
    .slice(ROOT_PATH.length + 1)
    .split("/")
    .every((segment) => TASK_NAME_PATTERN.test(segment));
}

/** The parent path and last segment of a canonical path below the root. */
export function splitPath(agentPath: string): { parent: string; name: string } {
  const cut = agentPath.lastIndexOf("/");
  return { parent: agentPath.slice(0, cut), name: agentPath.slice(cut + 1) };
}
