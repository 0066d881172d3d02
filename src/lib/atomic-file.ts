import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

/**
 * Write a file so a reader (another process of the tree, a script polling for result.json)
 * never sees half of it: a temp file beside it, then a rename. The folder is created.
 */
export async function writeFileAtomic(file: string, text: string): Promise<void> {
  await fs.promises.mkdir(path.dirname(file), { recursive: true });
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  try {
    await fs.promises.writeFile(temp, text, "utf8");
    await fs.promises.rename(temp, file);
  } catch (err) {
    await fs.promises.rm(temp, { force: true }).catch(() => undefined);
    throw err;
  }
}
