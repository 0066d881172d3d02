import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

/**
 * Write a file so a reader (another process of the tree, a script polling for result.json)
 * never sees half of it: a temp file beside it, then a rename. The folder is created.
 */
export async function writeFileAtomic(file: string, text: string): Promise<void> {
  await fs.promises.mkdir(path.dirname(file), { recursive: true });
  // The rename would replace whatever is there: never a device, socket or folder (a
  // resultPath of /dev/null, run as root, would otherwise delete /dev/null).
  const existing = await fs.promises.lstat(file).catch(() => undefined);
  if (existing && !existing.isFile() && !existing.isSymbolicLink()) throw new Error(`${file} exists and is not a regular file`);
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  try {
    await fs.promises.writeFile(temp, text, "utf8");
    await fs.promises.rename(temp, file);
  } catch (err) {
    await fs.promises.rm(temp, { force: true }).catch(() => undefined);
    throw err;
  }
}
