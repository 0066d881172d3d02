/**
 * Whether an agent's own children left anything in its folder of the tree directory — what a
 * process restores at its session's start. A child's pi without any has nothing to take back,
 * so it leaves the tree's machinery unloaded until a tool needs it (index.ts): pi evaluates
 * every module the extension imports again in each child's pi, and most children never delegate.
 */
import fs from "node:fs";
import path from "node:path";
import { AGENT_SUBFOLDERS, TREE_FILES } from "../../contracts/layout.js";
import { agentFolderSegments } from "./paths.js";

/** Files a parent's process writes in its own folder for its children: their notices given, its queue. */
const PARENT_FILES: ReadonlySet<string> = new Set([TREE_FILES.deliveries, TREE_FILES.queue]);

/**
 * True when `agentPath`'s folder holds a folder that is not one of its own (a child's, even
 * one whose spawn is still claiming it), the record of its children's notices or queue, or a
 * message in its inbox (only its children post there); also when the folder cannot be read,
 * so that the tree is then started as always and says what is wrong.
 */
export function childrenLeftTraces(treeDir: string, agentPath: string): boolean {
  const dir = path.join(treeDir, TREE_FILES.agents, ...agentFolderSegments(agentPath));
  try {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === TREE_FILES.inbox) {
        if (fs.readdirSync(path.join(dir, entry.name)).length > 0) return true;
      } else if (entry.isDirectory() ? !AGENT_SUBFOLDERS.has(entry.name) : PARENT_FILES.has(entry.name)) return true;
    }
    return false;
  } catch {
    return true;
  }
}
