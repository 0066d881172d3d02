import fs from "node:fs";

/**
 * The names in folder `dir` (in the file system's order); none when it cannot be read:
 * missing, not a folder, not readable. For the folders a process looks into again and again
 * (an inbox, a directory of agent files, the turn slots' leases), where a folder not made yet
 * simply holds nothing.
 */
export function folderNames(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}
