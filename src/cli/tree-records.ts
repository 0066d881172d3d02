/**
 * The agent records of a tree directory as the CLI reads them: every `agent.json` below
 * `agents/`, at any depth, tolerantly (a damaged one is returned with why, never thrown), and
 * never blocking on what is not a regular file. Used by `inspect <tree dir>` and `doctor --tree`.
 */

import fs from "node:fs";
import path from "node:path";
import { AGENT_SUBFOLDERS, TREE_FILES } from "../contracts/layout.js";
import { readRegularFileSync } from "../lib/regular-file.js";

/** Deeper than any tree the extension makes (its depth limit), shallow enough to end on a loop. */
const MAX_DEPTH = 32;

export interface RecordFile {
  /** The agent's folder. */
  dir: string;
  file: string;
  /** The parsed JSON, when the file holds JSON. */
  value?: unknown;
  /** Why it could not be read or parsed. */
  error?: string;
}

/** A JSON file read tolerantly: `{}` when it is missing. */
export function readJsonFileSync(file: string): { value?: unknown; error?: string } {
  const read = readRegularFileSync(file);
  if ("absent" in read) return {};
  if ("problem" in read) return { error: read.problem };
  try {
    return { value: JSON.parse(read.text) };
  } catch (err) {
    return { error: `is not valid JSON: ${(err as Error).message}` };
  }
}

/** Every agent folder's record below `<treeDir>/agents/`, in folder order (callers sort). */
export function agentRecordFiles(treeDir: string): RecordFile[] {
  const found: RecordFile[] = [];
  const walk = (dir: string, depth: number): void => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (!entry.isDirectory() || AGENT_SUBFOLDERS.has(entry.name)) continue;
      const agentDir = path.join(dir, entry.name);
      const file = path.join(agentDir, TREE_FILES.record);
      const read = readJsonFileSync(file);
      if (read.error !== undefined || read.value !== undefined) found.push({ dir: agentDir, file, ...read });
      if (depth < MAX_DEPTH) walk(agentDir, depth + 1);
    }
  };
  walk(path.join(treeDir, TREE_FILES.agents), 0);
  return found;
}
